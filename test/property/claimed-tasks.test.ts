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
import type { SimState } from '../../src/sim/model/types.js';

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
});
