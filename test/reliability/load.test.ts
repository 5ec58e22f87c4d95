/**
 * Quick mode of the load test (scripts/reliability/lib/load.ts): 20 concurrent clients x 100 lockstep steps
 * against one server process, zero errors, trajectories byte-identical to in-process runs (determinism under
 * stress). The full run (200 x 1000) is `run.js --full --only load`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runLoad } from '../../scripts/reliability/lib/load.js';
import { ensureBuilt } from './build.js';

describe('load (quick)', () => {
  beforeAll(() => ensureBuilt());

  it('20 clients x 100 steps: zero errors, identical trajectories, sessions closed', async () => {
    const r = await runLoad({ clients: 20, steps: 100, workers: 1 });
    expect(r.first_errors).toEqual([]);
    expect(r.errors).toBe(0);
    expect(r.total_steps).toBe(2000);
    expect(r.determinism).toEqual({ compared: 20, identical: 20, mismatched_seeds: [] });
    expect(r.server.crashed).toBe(false);
    expect(r.server.sessions_after).toBe(0);
    expect(r.latency_ms.p50).toBeGreaterThan(0);
  });
});
