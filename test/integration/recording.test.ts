import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError } from '../../src/client/client.js';
import { Server, startServer } from '../../src/server/server.js';

describe('server-side recording (reset option record)', () => {
  let server: Server;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ycgym-rec-'));
    server = await startServer({ endpoint: 'tcp://127.0.0.1:0', recordDir: dir });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records a session into DIR/name.arrow (N+1 rows) and completes the file when the session closes', async () => {
    const c = new Client({ endpoint: server.endpoint });
    const r = await c.reset({ seed: 1, options: { record: { path: 'run1.arrow' } } as never });
    const cmds = ['market browse --limit 3', 'task accept --task-id Task-10', 'not a command', 'company status'];
    for (const cmd of cmds) await c.step(r.session, cmd);
    await c.closeSession(r.session);
    const steps = tableFromIPC(readFileSync(join(dir, 'run1.arrow')));
    const eps = tableFromIPC(readFileSync(join(dir, 'run1.episodes.arrow')));
    expect(steps.numRows).toBe(cmds.length + 1);
    expect(eps.numRows).toBe(1);
    expect(steps.getChild('action')?.toArray()).toEqual([null, ...cmds]);
    expect(steps.getChild('is_first')?.get(0)).toBe(true);
    expect(steps.getChild('is_last')?.get(cmds.length)).toBe(true);
    // A finished file is not overwritten; a path with directories is refused.
    await expect(c.reset({ seed: 1, options: { record: { path: 'run1.arrow' } } as never })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(c.reset({ seed: 1, options: { record: { path: '../x.arrow' } } as never })).rejects.toBeInstanceOf(ProtocolError);
    expect(existsSync(join(dir, '..', 'x.arrow'))).toBe(false);
    await c.close();
  });

  it('never lets two recordings write the same file (issue 12, F5), nor a client join another client\'s recording', async () => {
    const a = new Client({ endpoint: server.endpoint });
    const b = new Client({ endpoint: server.endpoint });
    try {
      // `y.episodes.arrow` writes y.episodes.arrow and y.episodes.episodes.arrow; `y.arrow` would write its episodes
      // into y.episodes.arrow: before, it was accepted and overwrote the first recording's steps.
      const first = await a.reset({ seed: 1, options: { record: { path: 'y.episodes.arrow' } } as never });
      await a.step(first.session, 'company status');
      await expect(a.reset({ seed: 2, options: { record: { path: 'y.arrow' } } as never })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('would write y.episodes.arrow'),
      });
      // Another client cannot add its sessions to a's recording in progress; a's own sessions can.
      await expect(b.reset({ seed: 3, options: { record: { path: 'y.episodes.arrow' } } as never })).rejects.toMatchObject({
        code: 'invalid_request',
        message: expect.stringContaining('being recorded by another client'),
      });
      const second = await a.reset({ seed: 4, options: { record: { path: 'y.episodes.arrow' } } as never });
      await a.closeSession(second.session);
      await a.closeSession(first.session);
      const steps = tableFromIPC(readFileSync(join(dir, 'y.episodes.arrow')));
      expect(steps.getChild('action')?.toArray()).toEqual([null, null, 'company status']); // episodes in the order they ended
      expect(tableFromIPC(readFileSync(join(dir, 'y.episodes.episodes.arrow'))).numRows).toBe(2);
      // Once complete, neither name nor a name colliding with its files can be recorded again.
      await expect(a.reset({ seed: 2, options: { record: { path: 'y.arrow' } } as never })).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(b.reset({ seed: 2, options: { record: { path: 'y.episodes.arrow' } } as never })).rejects.toMatchObject({ code: 'invalid_request' });
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('recording compression (issue 14: compact output by default)', () => {
  const rowsOf = (path: string): string[] =>
    tableFromIPC(readFileSync(path))
      .toArray()
      .map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));

  it('records zstd-compressed Arrow by default and plain with recordCompression none: the same rows', async () => {
    const dirs = { zstd: mkdtempSync(join(tmpdir(), 'ycgym-rec-z-')), none: mkdtempSync(join(tmpdir(), 'ycgym-rec-n-')) };
    try {
      for (const [codec, dir] of Object.entries(dirs)) {
        const server = await startServer({ endpoint: 'tcp://127.0.0.1:0', recordDir: dir, ...(codec === 'none' ? { recordCompression: 'none' as const } : {}) });
        const c = new Client({ endpoint: server.endpoint });
        try {
          const r = await c.reset({ seed: 7, options: { record: { path: 'r.arrow' } } as never });
          for (const cmd of ['market browse --limit 200', 'task accept --task-id Task-3', 'market browse --limit 200', 'company status']) await c.step(r.session, cmd);
          await c.closeSession(r.session);
        } finally {
          await c.close();
          await server.close();
        }
      }
      for (const f of ['r.arrow', 'r.episodes.arrow']) expect(rowsOf(join(dirs.zstd, f))).toEqual(rowsOf(join(dirs.none, f)));
      // Two 200-task listings: the plain file holds their text as it is, the compressed one a fraction of it.
      const size = (d: string) => readFileSync(join(d, 'r.arrow')).length;
      expect(size(dirs.none)).toBeGreaterThan(5 * size(dirs.zstd));
    } finally {
      for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true });
    }
  });

  it('refuses an unknown codec', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-rec-x-'));
    try {
      await expect(startServer({ endpoint: 'tcp://127.0.0.1:0', recordDir: dir, recordCompression: 'lz4' as never })).rejects.toThrow(/unknown record compression "lz4"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
