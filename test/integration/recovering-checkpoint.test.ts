/**
 * `snapshot` is refused with `capacity` under memory pressure (a bulk reply). `RecoveringEnv` takes a checkpoint
 * snapshot every `snapshotEvery` steps; a refused checkpoint must not fail the step that succeeded: the env keeps its
 * previous base and longer log and checkpoints later, as it does after any failed checkpoint.
 */
import { describe, expect, it } from 'vitest';
import { RecoveringEnv } from '../../src/client/recovering-env.js';
import { Env } from '../../src/env/env.js';
import { startServer } from '../../src/server/server.js';

describe('RecoveringEnv under memory pressure', () => {
  it('a checkpoint refused with capacity leaves the step as it was, and the episode goes on identically', async () => {
    // A budget 200 MiB above the process's size now; then 400 MiB of touched memory takes it over.
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxMemoryBytes: process.memoryUsage().rss + (200 << 20) });
    const env = new RecoveringEnv({ endpoint: s.endpoint, timeoutMs: 10_000, snapshotEvery: 2 });
    const local = new Env();
    const held: Buffer[] = [];
    try {
      await env.reset({ seed: 3 });
      local.reset({ seed: 3, preset: 'default' });
      held.push(Buffer.alloc(400 << 20, 1));
      const actions = ['company status', 'market browse --limit 3', 'employee list', 'company status'];
      for (const a of actions) {
        const r = await env.step(a);
        expect(r).toEqual(local.step(a));
      }
      expect(s.stats().errors['capacity']).toBeGreaterThan(0);
      expect(held[0]?.[0]).toBe(1);
    } finally {
      held.length = 0;
      await env.close();
      await s.close();
    }
  }, 60_000);
});
