/**
 * `ycgym serve --exit-on-stdin-eof`: the server lives while its stdin is open and stops (exit 0) when it reaches
 * end of file, which is how a parent process ties the server's life to its own (the Python `LocalServer`).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Client } from '../../src/client/client.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'cli', 'main.js');

type Child = ChildProcessByStdio<Writable, Readable, Readable>;

async function listening(child: Child): Promise<string> {
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    new Promise<string>((resolve) => lines.once('line', resolve)),
    new Promise<string>((_, reject) => setTimeout(() => reject(new Error('no listening line within 20 s')), 20_000)),
  ]);
  return (JSON.parse(first) as { endpoint: string }).endpoint;
}

function exitWithin(child: Child, ms: number): Promise<number | null | 'timeout'> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return Promise.race([
    new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code))),
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms)),
  ]);
}

describe('serve --exit-on-stdin-eof', () => {
  it('serves while stdin is open and exits 0 once it is closed', async () => {
    expect(existsSync(MAIN), 'build first (npm run build)').toBe(true);
    const child = spawn(process.execPath, [MAIN, 'serve', '--endpoint', 'tcp://127.0.0.1:0', '--exit-on-stdin-eof', '--quiet'], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      const endpoint = await listening(child);
      // An open stdin with nothing written keeps it running.
      expect(await exitWithin(child, 500)).toBe('timeout');
      const c = new Client({ endpoint, timeoutMs: 10_000 });
      expect((await c.hello()).protocol).toBe(1);
      await c.close();
      child.stdin.end();
      expect(await exitWithin(child, 10_000)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('without the flag, end of stdin changes nothing', async () => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--endpoint', 'tcp://127.0.0.1:0', '--quiet'], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      await listening(child);
      child.stdin.end();
      expect(await exitWithin(child, 1000)).toBe('timeout');
      child.kill('SIGTERM');
      expect(await exitWithin(child, 10_000)).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
