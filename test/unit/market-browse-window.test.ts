/**
 * `market browse --offset O --limit L` lists the window of the full listing that the element-by-element loop over it
 * listed (offsets past either end, limits of zero and below included), and the status block's trust follows the
 * clients' name order: both now read the shared frozen arrays by index.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { clientsByName, Simulation } from '../../src/sim/index.js';

type Row = { task_id: string };

/** The rows the earlier loop picked from the full listing: skip `offset` elements, push until `limit` is reached. */
function window(all: readonly Row[], offset: number, limit: number): string[] {
  const out: string[] = [];
  let skipped = 0;
  for (const t of all) {
    if (skipped < offset) {
      skipped++;
      continue;
    }
    out.push(t.task_id);
    if (out.length >= limit) break;
  }
  return out;
}

describe('market browse windows', () => {
  it('equal the loop over the full listing for offsets and limits around both ends', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 4 });
    for (const c of ['task accept --task-id Task-1', 'task accept --task-id Task-2']) sim.execute(c);
    const full = (sim.execute('market browse --limit 10000').value as { tasks: Row[] }).tasks;
    const n = full.length;
    expect(n).toBeGreaterThan(10);
    for (const offset of [-7, -1, 0, 1, 5, n - 2, n - 1, n, n + 3]) {
      for (const limit of [-2, 0, 1, 3, n, n + 5]) {
        const r = sim.execute(`market browse --offset ${offset} --limit ${limit}`).value as { tasks: Row[]; offset: number; limit: number };
        expect(r.tasks.map((t) => t.task_id), `offset ${offset} limit ${limit}`).toEqual(window(full, offset, limit));
        expect([r.offset, r.limit]).toEqual([offset, limit]);
      }
    }
  });

  it('the status block lists trust in client name order', () => {
    const env = new Env();
    const r = env.reset({ seed: 2 });
    const names = clientsByName((env.simulation as Simulation).state.clients).map((c) => c.name);
    expect(Object.keys(r.observation.status.trust)).toEqual(names);
    expect([...names].sort()).toEqual(names);
  });
});
