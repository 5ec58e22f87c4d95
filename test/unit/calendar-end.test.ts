/**
 * The calendar ends in year 9999 (as Python's datetime does); a config inside the preset schema's ranges could still
 * reach that end, and the RangeError closed the session as `internal`:
 * - a task's completion or milestone instant: skill rates are drawn to 4 decimals from [rate_min, rate_max] (0.0001 is
 *   in range, and a task may need 100,000 units of a domain) and one employee's rate is split across its tasks, so an ETA of a billion business hours came from a
 *   valid preset's first dispatched task. Ranges cannot bound it (the agent's splitting multiplies it), and such an
 *   instant lies after every horizon (runs end before 2200): it is now never scheduled, like a zero rate's;
 * - a deadline: `deadline_qty_per_day` could be 1e-6, a billion business days for a task. Its minimum is now 10, and
 *   a config whose latest deadline could pass 2255-06-05 (2**53 µs, the last exact instant) is refused
 *   (test/unit/deadline-range.test.ts): at 10 a day a deadline could be 1.99e7 / 10 business days (~7,620 years) away.
 */
import { describe, expect, it } from 'vitest';
import { configFromRaw, loadPreset, PresetError } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { isoformat, makeInstant } from '../../src/sim/model/calendar.js';
import { solveCompletion, solveCompletionDecimal, solveMilestone } from '../../src/sim/model/engine.js';
import type { Domain, Task } from '../../src/sim/model/types.js';
import { D, type Dec } from '../../src/sim/py/decimal.js';

/** The default preset's raw config with world fields replaced. */
function rawWith(world: Record<string, unknown>, sim: Record<string, unknown> = {}): Record<string, unknown> {
  const cfg = structuredClone(loadPreset('default')) as unknown as Record<string, Record<string, unknown>>;
  return { ...cfg, world: { ...cfg['world'], ...world }, sim: { ...cfg['sim'], ...sim } };
}

const tier = (name: string, share: number, rate: number): Record<string, unknown> => ({ name, share, min_cents: 100_000, max_cents: 200_000, rate_min: rate, rate_max: rate });

/**
 * A one-year run of a config whose tasks need 100,000 units each and whose every employee works at `rate` an hour, with
 * Task-1 accepted, assigned to Emp_1 and dispatched (each step checked to succeed): the env and the snapshot's state.
 */
function slowTaskDispatched(rate: number, world: Record<string, unknown> = {}, env = new Env()) {
  const dist = { ...loadPreset('default').world.dist, required_qty: { type: 'constant', value: 100_000 } };
  const cfg = configFromRaw(rawWith({ dist, ...world, salary_junior: tier('junior', 0.5, rate), salary_mid: tier('mid', 0.35, rate), salary_senior: tier('senior', 0.15, rate) }), `rate ${rate}`);
  env.reset({ seed: 1, preset: cfg, options: { horizon_years: 1 } });
  for (const a of ['task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1', 'task dispatch --task-id Task-1']) {
    expect(env.step(a).observation.exit_code, a).toBe(0);
  }
  const st = env.snapshot().sim.state;
  return { env, st, task: st.tasks.find((t) => t.title === 'Task-1') };
}

describe('the end of the calendar', () => {
  it('a completion past year 9999 (skill rate 0.0001, in range) is never scheduled; the episode runs to its horizon', () => {
    // Before: the dispatch's ETA threw `... business hours end after year 9999`.
    const { env, st, task } = slowTaskDispatched(0.0001);
    expect(task?.status).toBe('active');
    expect(st.events.filter((e) => e.taskId === task?.id)).toEqual([]);
    let r = env.step('sim resume');
    for (let i = 0; i < 40 && !r.terminated; i++) r = env.step('sim resume');
    expect(r.terminated).toBe(true);
    expect(r.info.terminal_reason).toBe('horizon_end');
  });

  it('a completion or milestone between 2255-06-05 (2**53 µs) and year 9999 is never scheduled either: no inexact instant reaches a snapshot', () => {
    // 100,000 units at a skill rate of 0.01: 10 million business hours (~4,260 years), a completion in year ~6300 and
    // milestones from year ~3300, all after the horizon and past the last exact instant, where an instant is a double
    // that is no longer a whole number of microseconds of the reference's exact datetime (the Decimal steps rounded
    // each day's start). They were scheduled and shown by every snapshot (events[].at above 2**53).
    const milestones = { task_progress_milestones: [0.25, 0.5] };
    const { env, st, task } = slowTaskDispatched(0.01, milestones);
    expect(task?.status).toBe('active');
    const at = st.events.map((e) => e.at);
    expect(at.filter((t) => !Number.isSafeInteger(t)).map((t) => isoformat(t))).toEqual([]);
    expect(st.events.filter((e) => e.taskId === task?.id)).toEqual([]);
    // An ETA before the last exact instant is still scheduled: the same task at a rate of 100 (1,000 hours).
    const { st: ft, task: fastTask } = slowTaskDispatched(100, milestones, env);
    const id = fastTask?.id;
    expect(ft.events.filter((e) => e.taskId === id).map((e) => e.type).sort()).toEqual(['task_completed', 'task_half_progress']);
  });

  it('the integer fast path of a completion refuses an instant past 2**53 µs as the Decimal steps do', () => {
    // 200,000 units at 0.9 an hour from December 2199 (a run's latest instants): 222,222 business hours, inside the
    // fast path's range (below 250,000 hours), ending in year ~2293.
    const task = { reqs: [{ domain: 'research', required: D(200_000), completed: D(0) }] } as unknown as Task;
    const rates = new Map<Domain, Dec>([['research', D('0.9')]]);
    const now = makeInstant(2199, 12, 1, 9);
    expect(solveCompletion(task, now, rates)).toBeNull();
    expect(solveCompletionDecimal(task, now, rates)).toBeNull();
    expect(solveMilestone(task, now, rates, 0.9)).toBeNull(); // 200,000 hours: year ~2284
    expect(Number.isSafeInteger(solveMilestone(task, now, rates, 0.5))).toBe(true); // 111,111 hours: year ~2247
    // Earlier, the same task completes at an exact instant, the same on both paths.
    const early = makeInstant(2025, 1, 6, 9);
    const at = solveCompletion(task, early, rates);
    expect(Number.isSafeInteger(at)).toBe(true);
    expect(at).toBe(solveCompletionDecimal(task, early, rates));
  });

  it('deadline_qty_per_day below 10 is refused naming the field; above, deadlines past the exact range are refused', () => {
    for (const q of [1e-6, 9.99]) {
      let err: unknown;
      try {
        configFromRaw(rawWith({ deadline_qty_per_day: q }), 'x');
      } catch (e) {
        err = e;
      }
      expect(err, String(q)).toBeInstanceOf(PresetError);
      expect((err as PresetError).issues, String(q)).toContain('/world/deadline_qty_per_day: must be >= 10');
    }
    // The largest quantity: 100,000 units scaled by 1 + 2 × (100 - 1) for a task of required prestige 100 (tasks after
    // the first ten): 1.99e7 units, 1.99e6 business days at 10 a day, ~7,620 years: before year 9999, but past
    // 2255-06-05, where microseconds stop being exact doubles. Such a config is refused now (the rule between fields,
    // test/unit/deadline-range.test.ts); at 1,400 units a day (14,214 business days) the farthest deadline is exact.
    const dist = { ...loadPreset('default').world.dist, required_qty: { type: 'constant', value: 100_000 }, required_prestige: { type: 'constant', value: 100 } };
    const far = { dist, num_clients: 0, deadline_min_biz_days: 10_000, trust_work_reduction_max: 0, prestige_qty_scale: 2, initial_prestige_level: 100, prestige_max: 100 };
    const sim = { start_date: '2099-12-31', horizon_years: 100 };
    expect(() => configFromRaw(rawWith({ ...far, deadline_qty_per_day: 10 }, sim), 'far')).toThrow(/deadline_qty_per_day: a task's deadline can be 1990000 business days/);
    const cfg = configFromRaw(rawWith({ ...far, deadline_qty_per_day: 1_400 }, sim), 'far');
    const env = new Env();
    env.reset({ seed: 1, preset: cfg });
    expect(env.step('task accept --task-id Task-15').observation.exit_code).toBe(0);
    const st = env.snapshot().sim.state;
    const task = st.tasks.find((t) => t.title === 'Task-15');
    expect(task?.reqs.map((r) => Number(r.required.toString()))).toContain(19_900_000);
    const years = ((task?.deadline as number) - st.startTime) / (365.2425 * 86_400e6);
    expect(years).toBeGreaterThan(54);
    expect(Number.isSafeInteger(task?.deadline)).toBe(true);
  });
});
