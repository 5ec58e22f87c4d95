/**
 * The server's recordings share one bound on the step rows they hold in memory (`RecordMemory`, 64 MiB by default):
 * above it, the recorder of a session being stepped writes that episode's rows (all but the newest) before `flushRows`.
 * Only unit-tested before (test/unit/recorder-streaming.test.ts); here a real server records several sessions of two
 * clients into different files past a small bound: what they hold together stays within the bound, a row, and the
 * newest row of each open episode; every row reaches its file; no recording stops; and the sessions play exactly as
 * an unrecorded one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '../../src/client/client.js';
import { readArrowFile } from '../../src/export/arrow.js';
import { startServer } from '../../src/server/server.js';

describe('recordings share one memory bound on a server', () => {
  it('streams every recording of every client once their rows together pass it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-recmem-'));
    const budget = 128 << 10;
    const server = await startServer({ endpoint: 'tcp://127.0.0.1:0', recordDir: dir, recordCompression: 'none', recordMemoryBytes: budget });
    const a = new Client({ endpoint: server.endpoint, timeoutMs: 20_000 });
    const b = new Client({ endpoint: server.endpoint, timeoutMs: 20_000 });
    try {
      const steps = 120;
      const actions = ['company status', 'market browse', 'employee list', 'finance ledger'];
      const recorded: { c: Client; session: string; name: string }[] = [];
      for (const [c, names] of [[a, ['a0', 'a1', 'a2']], [b, ['b0', 'b1']]] as const) {
        for (const n of names) {
          const r = await c.reset({ seed: 5, options: { max_steps: steps + 10, record: { path: `${n}.arrow` } } as never });
          recorded.push({ c, session: r.session, name: `${n}.arrow` });
        }
      }
      // The control: the same seed, not recorded.
      const control = (await b.reset({ seed: 5, options: { max_steps: steps + 10 } as never })).session;
      let maxRow = 0;
      let peak = 0;
      for (let i = 0; i < steps; i++) {
        const action = actions[i % actions.length] as string;
        const want = await b.step(control, action);
        for (const { c, session } of recorded) {
          const got = await c.step(session, action);
          expect(got).not.toHaveProperty('recording_stopped');
          expect(got.observation.text).toBe(want.observation.text);
          maxRow = Math.max(maxRow, 512 + 2 * (got.observation.text.length + action.length));
          peak = Math.max(peak, server.recordBufferedBytes);
        }
      }
      // Without the shared bound the 5 sessions would hold every row (each far below `flushRows`).
      expect(peak).toBeGreaterThan(budget / 2);
      expect(peak).toBeLessThanOrEqual(budget + (recorded.length + 1) * maxRow);
      for (const { c, session } of recorded) await c.closeSession(session);
      expect(server.recordBufferedBytes).toBe(0);
      for (const { name } of recorded) {
        const t = readArrowFile(join(dir, name));
        expect(t.numRows).toBe(steps + 1);
        expect(t.getChild('action')?.toArray().slice(1)).toEqual(Array.from({ length: steps }, (_, i) => actions[i % actions.length]));
      }
    } finally {
      await a.close();
      await b.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
