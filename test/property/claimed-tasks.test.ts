/**
 * The claimed tasks (`claimedTasks`: owned or out of the market, kept while the task count is unchanged) equal a scan
 * of every task after every command of played and random histories, cancels and restores included; so do the counts
 * and the active set taken from them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { Simulation, taskCounts } from '../../src/sim/index.js';
import { activeTasks } from '../../src/sim/model/engine.js';
import { claimedTasks } from '../../src/sim/model/status.js';
import type { SimState, Task } from '../../src/sim/model/types.js';

const ids = (ts: readonly { id: number }[]): number[] => ts.map((t) => t.id);

function expectCurrent(sim: Simulation, where: string): void {
  const s = sim.state as SimState;
  expect(ids(claimedTasks(s)), where).toEqual(ids(s.tasks.filter((t) => t.owned || t.status !== 'market')));
  expect(ids(activeTasks(s)), where).toEqual(ids(s.tasks.filter((t) => t.status === 'active')));
  const owned = s.tasks.filter((t) => t.owned);
  expect(taskCounts(s), where).toEqual({
    active: owned.filter((t) => t.status === 'active').length,
    planned: owned.filter((t) => t.status === 'planned').length,
    completed: owned.filter((t) => t.status === 'completed_success' || t.status === 'completed_fail').length,
    cancelled: owned.filter((t) => t.status === 'cancelled').length,
  });
}

describe('claimedTasks: owned or out-of-market tasks, kept per task count', () => {
  it('equals a scan of every task at every step of played episodes', () => {
    for (const policy of ['greedy', 'expert', 'prestige', 'random']) {
      for (const seed of [1, 3]) {
        const env = new Env();
        runEpisode(env, makePolicy(policy), { seed, options: { max_steps: 400, text: false } }, {
          onStep: ({ step }) => expectCurrent(env.simulation as Simulation, `${policy} seed ${seed} step ${step}`),
        });
      }
    }
  });

  it('equals a scan after any random command history (accepts, dispatches, cancels, completions, restores)', () => {
    const command = fc.oneof(
      fc.constant('sim resume'),
      fc.constant('company status'),
      fc.integer({ min: 1, max: 40 }).map((n) => `task accept --task-id Task-${n}`),
      fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 8 })).map(([n, e]) => `task assign --task-id Task-${n} --employees Emp_${e}`),
      fc.integer({ min: 1, max: 40 }).map((n) => `task dispatch --task-id Task-${n}`),
      fc.integer({ min: 1, max: 40 }).map((n) => `task cancel --task-id Task-${n} --reason r`),
      fc.constant('restore'),
    );
    for (const preset of ['default', 'corrected']) {
      const cfg = loadPreset(preset);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 50 }), fc.array(command, { maxLength: 80 }), (seed, cmds) => {
          let sim = Simulation.create(cfg, { seed });
          expectCurrent(sim, 'start');
          for (const c of cmds) {
            if (c === 'restore') sim = Simulation.restore(JSON.parse(JSON.stringify(sim.snapshot())));
            else sim.execute(c);
            expectCurrent(sim, c);
          }
        }),
        { numRuns: 40 },
      );
    }
  });

  it('is extended by task accept without reading the other tasks; a Discrete accept step reads no unlisted market task', () => {
    // Counts the reads of `status` and `owned` of the market tasks outside the listing (prestige-gated: never listed here).
    let reads = 0;
    const spyOnHidden = (s: SimState): Task[] => {
      const hidden = s.tasks.filter((t) => t.status === 'market' && t.requiredPrestige > 1);
      for (const t of hidden) {
        for (const key of ['status', 'owned'] as const) {
          let v = t[key];
          Object.defineProperty(t, key, { get: () => (reads++, v), set: (x) => void (v = x), enumerable: true, configurable: true });
        }
      }
      return hidden;
    };
    const sim = Simulation.create(loadPreset('default'), { seed: 4 });
    const s = sim.state as SimState;
    claimedTasks(s);
    expect(spyOnHidden(s).length).toBeGreaterThan(50);
    for (const id of [1, 2, 3]) {
      expect(sim.execute(`task accept --task-id Task-${id}`).ok).toBe(true);
      reads = 0;
      const after = ids(claimedTasks(s));
      expect(reads, `claimedTasks after accepting Task-${id}`).toBe(0);
      expect(after).toEqual(ids(s.tasks.filter((t) => t.owned || t.status !== 'market')));
    }
    const env = new Env();
    let r = env.reset({ seed: 4, options: { actions: 'discrete', text: false } });
    spyOnHidden((env.simulation as Simulation).state as SimState);
    for (let k = 0; k < 3; k++) {
      const accept = r.observation.discrete?.mask.indexOf(true, 1) as number;
      expect(env.discreteSpec?.action_names[accept]).toMatch(/^accept/);
      reads = 0;
      r = env.step(accept);
      expect(reads, `Discrete accept step ${k}`).toBe(0);
    }
  });
});
