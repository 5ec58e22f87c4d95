/**
 * What the status block keeps between steps: `taskCounts` counts a completed task once per claimed list (then only the
 * others), and `StatusObjects` keeps the block's two ISO texts and its runway while their inputs are the same. A kept
 * value that outlived a change would show here as a block that differs from the one built from scratch (`statusOf`,
 * a scan of every task).
 */
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env, StatusObjects, statusFrom, statusOf } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { Simulation, taskCounts } from '../../src/sim/index.js';
import type { SimState, Task } from '../../src/sim/model/types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The counts of a scan of every task (`taskCounts`' definition). */
function scanned(s: SimState): ReturnType<typeof taskCounts> {
  const owned = s.tasks.filter((t) => t.owned);
  return {
    active: owned.filter((t) => t.status === 'active').length,
    planned: owned.filter((t) => t.status === 'planned').length,
    completed: owned.filter((t) => t.status === 'completed_success' || t.status === 'completed_fail').length,
    cancelled: owned.filter((t) => t.status === 'cancelled').length,
  };
}

describe('taskCounts: completed tasks counted once per claimed list', () => {
  it('equals a scan after every step of played episodes, counted every step and every few steps', () => {
    for (const policy of ['greedy', 'expert', 'random']) {
      for (const every of [1, 7]) {
        const env = new Env();
        let completed = 0;
        runEpisode(env, makePolicy(policy), { seed: 2, preset: 'corrected', options: { max_steps: 300, text: false } }, {
          onAdvance: ({ step }) => {
            if (step % every !== 0) return;
            const s = (env.simulation as Simulation).state;
            const got = taskCounts(s);
            expect(got, `${policy} every ${every} step ${step}`).toEqual(scanned(s));
            completed = got.completed;
          },
        });
        expect(completed, policy).toBeGreaterThan(0);
      }
    }
  });

  it('sees tasks planned, dispatched, completed, cancelled through commands, and the other states changed by hand', () => {
    const sim = Simulation.create(loadPreset('corrected'), { seed: 3 });
    const s = sim.state as SimState;
    const check = (where: string): void => expect(taskCounts(s), where).toEqual(scanned(s));
    check('start');
    const accepted: string[] = [];
    for (let id = 1; accepted.length < 3 && id < 60; id++) {
      if (sim.execute(`task accept --task-id Task-${id}`).ok) accepted.push(`Task-${id}`);
      check(`accept Task-${id}`);
    }
    expect(accepted.length).toBe(3);
    for (const t of accepted.slice(0, 2)) {
      sim.execute(`task assign --task-id ${t} --employees Emp_1,Emp_2`);
      sim.execute(`task dispatch --task-id ${t}`);
      check(`dispatch ${t}`);
    }
    sim.execute(`task cancel --task-id ${accepted[2] as string} --reason r`);
    check('cancel');
    // One more claimed: a new claimed list, counted from scratch with the cancelled task in it.
    for (let id = 60; accepted.length < 4 && id < 120; id++) if (sim.execute(`task accept --task-id Task-${id}`).ok) accepted.push(`Task-${id}`);
    expect(accepted.length).toBe(4);
    check('accept after the cancel');
    for (let k = 0; k < 40 && taskCounts(s).completed === 0; k++) {
      sim.execute('sim resume');
      check(`resume ${k}`);
    }
    expect(taskCounts(s).completed).toBeGreaterThan(0);
    // By hand, as test/property/json-writer.test.ts changes them: every state but a completed one is read again.
    const owned = (status: string): Mutable<Task> | undefined => s.tasks.find((t) => t.owned && t.status === status) as Mutable<Task> | undefined;
    const cancelled = owned('cancelled') as Mutable<Task>;
    cancelled.status = 'active';
    check('cancelled made active');
    cancelled.status = 'completed_fail';
    check('then completed');
    sim.execute('sim resume');
    check('resume after');
    // A restored simulation has tasks of its own: counted from scratch.
    const back = Simulation.restore(JSON.parse(JSON.stringify(sim.snapshot())));
    expect(taskCounts(back.state)).toEqual(scanned(back.state as SimState));
  });
});

describe('StatusObjects: the texts and runway of a status block', () => {
  it('statusFrom equals statusOf after the time, the horizon, the funds (to -0 and below zero) and the payroll change', () => {
    const env = new Env();
    env.reset({ seed: 5, options: { stall_steps: 0, text: false } });
    const sim = env.simulation as Simulation;
    const s = sim.state as Mutable<SimState>;
    const objects = new StatusObjects();
    const same = (where: string): void => {
      const got = statusFrom(sim, objects);
      const want = statusOf(sim);
      expect(JSON.stringify(got), where).toBe(JSON.stringify(want));
      // -0 apart from 0 (JSON writes both as 0).
      expect(Object.is(got.runway_months, want.runway_months), where).toBe(true);
    };
    same('start');
    same('again');
    const changes: [string, () => void][] = [
      ['time', () => void (s.simTime += 3_600_000_000)],
      ['time with microseconds', () => void (s.simTime += 1)],
      ['time back', () => void (s.simTime -= 1)],
      ['horizon', () => void (s.horizonEnd += 86_400_000_000)],
      ['time at the horizon', () => void (s.simTime = s.horizonEnd)],
      ['funds', () => void (s.fundsCents += 1)],
      ['funds -0', () => void (s.fundsCents = -0)],
      ['funds 0', () => void (s.fundsCents = 0)],
      ['funds below zero', () => void (s.fundsCents = -12_345)],
      ['payroll', () => void ((s.employees[0] as Mutable<SimState['employees'][number]>).salaryCents += 100)],
      ['no payroll', () => void (s.employees = [])],
      ['funds without payroll', () => void (s.fundsCents = 5)],
    ];
    for (const [what, change] of changes) {
      change();
      same(what);
      same(`${what}, again`);
    }
  });

  it("an env's blocks over played episodes equal statusOf at every step, and stay as they were handed out", () => {
    // The counts are written into one object of the env's StatusObjects and the trust values set again in its one open
    // object: a count or trust value kept from an earlier step, or a block sharing either, would differ here.
    for (const policy of ['greedy', 'expert', 'random']) {
      const env = new Env();
      let prev: { block: unknown; json: string } | null = null;
      const seen = { active: 0, planned: 0, completed: 0, trustChanges: 0 };
      runEpisode(env, makePolicy(policy), { seed: 4, preset: 'corrected', options: { max_steps: 300, text: false } }, {
        onStep: ({ step, result }) => {
          const block = result.observation.status;
          const json = JSON.stringify(block);
          expect(json, `${policy} step ${step}`).toBe(JSON.stringify(statusOf(env.simulation as Simulation, block.events)));
          if (prev !== null) {
            expect(JSON.stringify(prev.block), `${policy} step ${step - 1} after the next step`).toBe(prev.json);
            if (JSON.stringify((prev.block as typeof block).trust) !== JSON.stringify(block.trust)) seen.trustChanges++;
          }
          prev = { block, json };
          seen.active = Math.max(seen.active, block.active_tasks);
          seen.planned = Math.max(seen.planned, block.planned_tasks);
          seen.completed = Math.max(seen.completed, block.completed_tasks);
        },
      });
      // The episode moved every count and the trust (else the comparisons above tested nothing kept).
      expect(seen.active * seen.completed * seen.trustChanges, `${policy} ${JSON.stringify(seen)}`).toBeGreaterThan(0);
      if (policy !== 'random') expect(seen.planned, policy).toBeGreaterThan(0);
    }
  });

  it("an env's blocks follow its commands", () => {
    const env = new Env();
    env.reset({ seed: 6, options: { text: false } });
    const sim = env.simulation as Simulation;
    for (const c of ['sim resume', 'company status', 'market browse', 'task accept --task-id Task-1', 'sim resume', 'sim resume']) {
      const block = env.step(c).observation.status;
      expect(JSON.stringify(block), c).toBe(JSON.stringify(statusOf(sim, block.events)));
    }
  });
});
