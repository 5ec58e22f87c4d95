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
});
