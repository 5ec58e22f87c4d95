/**
 * A task's deadline is `max(deadline_min_biz_days, int(maxqty / deadline_qty_per_day))` business days of
 * `workday_end_hour - workday_start_hour` hours after its acceptance (src/sim/model/deadline.ts), and instants are
 * microseconds in doubles, exact only up to 2**53 µs (2255-06-05). Schema-valid configs still reached past that:
 * - required prestige 100 × `prestige_qty_scale` 2 × 100,000 units at `deadline_qty_per_day` 10 put a deadline in
 *   year ~9650 (inexact times);
 * - the same with a 24-hour workday put it past year 9999: the accept threw CalendarEndError, an internal error.
 * The loader now refuses a config whose latest possible deadline (from the latest run end any start date and horizon
 * can give) passes the last exact instant, naming the fields and the bound; in-process configs (Env.reset, TurnEnv,
 * describePreset) go through the same validation.
 */
import { describe, expect, it } from 'vitest';
import { configFromRaw, loadPreset, listPresets, PresetError } from '../../src/config/load.js';
import { describePreset, Env } from '../../src/env/env.js';
import { TurnEnv } from '../../src/turns/turns.js';
import { protocolHandler } from '../helpers/protocol-handler.js';
import type { ExperimentConfig } from '../../src/sim/index.js';

/** The default preset's raw config with world fields replaced. */
function rawWith(world: Record<string, unknown>, sim: Record<string, unknown> = {}): Record<string, unknown> {
  const cfg = structuredClone(loadPreset('default')) as unknown as Record<string, Record<string, unknown>>;
  return { ...cfg, world: { ...cfg['world'], ...world }, sim: { ...cfg['sim'], ...sim } };
}

const dist = (qty: number, prestige: number): Record<string, unknown> => ({
  ...loadPreset('default').world.dist,
  required_qty: { type: 'constant', value: qty },
  required_prestige: { type: 'constant', value: prestige },
  // Rewards below the trust floor: no task is trust-gated, so every one can be accepted.
  reward_funds_cents: { type: 'constant', value: 100_000 },
});

/** Required prestige 100 × prestige_qty_scale 2 × 100,000 units at deadline_qty_per_day 10 (the brief's example). */
const farWorld = { dist: dist(100_000, 100), deadline_qty_per_day: 10, prestige_qty_scale: 2, initial_prestige_level: 100, prestige_max: 100 };
const RULE = /\/world\/deadline_qty_per_day: .*business days.*2255-06-05/;

function presetError(f: () => unknown): PresetError {
  try {
    f();
  } catch (e) {
    if (e instanceof PresetError) return e;
    throw e;
  }
  throw new Error('no PresetError');
}

/** Accept the first listed task of required prestige 100; its deadline instant, or the error thrown. */
function farAccept(cfg: ExperimentConfig | string, start = '2099-12-31'): number | Error {
  const env = new Env();
  env.reset({ seed: 1, preset: cfg, options: { start_date: start, horizon_years: 1 } });
  const listed = env.step('market browse --limit 200').observation.text;
  const task = (JSON.parse(listed) as { tasks: { task_id: string; required_prestige: number }[] }).tasks.find((t) => t.required_prestige === 100);
  if (task === undefined) throw new Error('no prestige-100 task listed');
  try {
    env.step(`task accept --task-id ${task.task_id}`);
  } catch (e) {
    return e as Error;
  }
  const st = env.snapshot().sim.state;
  return st.tasks.find((t) => t.title === task.task_id)?.deadline as number;
}

describe('deadlines stay within exact microseconds', () => {
  it('a config whose deadlines could pass 2**53 µs or year 9999 is refused, naming the fields and the bound', () => {
    for (const w of [farWorld, { ...farWorld, workday_start_hour: 0, workday_end_hour: 24 }]) {
      const err = presetError(() => configFromRaw(rawWith(w), 'far'));
      const issue = err.issues.find((i) => RULE.test(i));
      expect(issue, err.message).toBeDefined();
      for (const f of ['deadline_min_biz_days', 'required_qty', 'required_prestige', 'prestige_qty_scale', 'workday_end_hour', 'workday_start_hour']) expect(issue).toContain(f);
    }
    // The minimum business days alone: 10,000 days of a 24-hour workday (26,667 days of 9 hours, ~102 years).
    const minDays = presetError(() => configFromRaw(rawWith({ deadline_min_biz_days: 10_000, workday_start_hour: 0, workday_end_hour: 24 }), 'long days'));
    expect(minDays.issues.some((i) => RULE.test(i)), minDays.message).toBe(true);
  });

  it('at the bound the latest deadline is exact; one more business day is refused', () => {
    // Required 10 units of prestige 1: every deadline is deadline_min_biz_days; find the largest accepted count.
    const ok = (days: number): boolean => {
      try {
        configFromRaw(rawWith({ deadline_min_biz_days: days }), 'days');
        return true;
      } catch (e) {
        if (e instanceof PresetError) return false;
        throw e;
      }
    };
    expect(ok(10_000)).toBe(true);
    const hi = 10_000;
    // The schema's maximum of deadline_min_biz_days is 10,000: with 9 hours a day the rule allows more, so use a
    // longer workday to find the edge.
    const edge = (span: number): number => {
      let lo = 1;
      let top = hi;
      const okSpan = (d: number): boolean => {
        try {
          configFromRaw(rawWith({ deadline_min_biz_days: d, workday_start_hour: 0, workday_end_hour: span }), 'edge');
          return true;
        } catch (e) {
          if (e instanceof PresetError) return false;
          throw e;
        }
      };
      if (okSpan(top)) return top;
      while (top - lo > 1) {
        const mid = Math.floor((lo + top) / 2);
        if (okSpan(mid)) lo = mid;
        else top = mid;
      }
      return lo;
    };
    const days = edge(24);
    expect(days).toBeLessThan(hi);
    // The largest accepted config's deadline from the latest run end (2199-12-31 09:00) is exact.
    const cfg = configFromRaw(rawWith({ deadline_min_biz_days: days, workday_start_hour: 0, workday_end_hour: 24, dist: dist(10, 1) }, { start_date: '2099-12-31', horizon_years: 100 }), 'edge');
    const env = new Env();
    env.reset({ seed: 1, preset: cfg });
    // Accepting at the start date (the latest acceptance, 100 years on, is covered by the bound's computation).
    expect(env.step('task accept --task-id Task-1').observation.exit_code).toBe(0);
    const d = env.snapshot().sim.state.tasks.find((t) => t.title === 'Task-1')?.deadline as number;
    expect(Number.isSafeInteger(d)).toBe(true);
  });

  it('every shipped preset passes the rule', () => {
    for (const p of listPresets()) expect(() => loadPreset(p), p).not.toThrow();
  });

  it('a restored snapshot with such a config is bad_snapshot (its first accept closed the session as internal), and the server goes on', () => {
    const h = protocolHandler();
    // A state with prestige-100 tasks of 19.9e6 units (at 1e6 units a day their deadlines are near), then the
    // snapshot's config forged to 10 units a day and a 24-hour workday: the deadline passed year 9999.
    const env = new Env();
    env.reset({ seed: 1, preset: configFromRaw(rawWith({ ...farWorld, deadline_qty_per_day: 1e6 }), 'near') });
    const snap = JSON.parse(JSON.stringify(env.snapshot())) as { sim: { config: { world: Record<string, unknown> } } };
    Object.assign(snap.sim.config.world, { deadline_qty_per_day: 10, workday_start_hour: 0, workday_end_hour: 24 });
    const res = h.handleValue({ v: 1, op: 'restore', snapshot: snap }).reply;
    if (res.ok) {
      // What happened before: the accept was an internal error and closed the session.
      const acc = h.handleValue({ v: 1, op: 'step', session: (res.result as { session: string }).session, action: 'task accept --task-id Task-25' }).reply;
      expect(acc.ok ? 'ok' : `${acc.error.code}: ${acc.error.message}`).toBe('refused at restore');
    }
    expect(res.ok ? 'ok' : res.error.code).toBe('bad_snapshot');
    expect(res.ok ? '' : res.error.message).toMatch(RULE);
    expect(h.handleValue({ v: 1, op: 'hello' }).reply.ok).toBe(true);
  });
});

describe('in-process configs are validated as the loader validates them', () => {
  /** A loaded config changed in place, as an in-process user would (the loader's copy is mutable). */
  const tweaked = (world: Record<string, unknown>): ExperimentConfig => {
    const cfg = loadPreset('default');
    Object.assign(cfg.world, world);
    return cfg;
  };

  it('a deadline past year 9999 (deadline_qty_per_day 1e-6) is a PresetError at reset, not an internal error at accept', () => {
    const cfg = tweaked({ deadline_qty_per_day: 1e-6 });
    const err = presetError(() => new Env().reset({ seed: 1, preset: cfg }));
    expect(err.issues).toContain('/world/deadline_qty_per_day: must be >= 10');
    expect(presetError(() => describePreset(cfg)).issues).toContain('/world/deadline_qty_per_day: must be >= 10');
    expect(presetError(() => new TurnEnv().reset({ seed: 1, preset: cfg })).issues).toContain('/world/deadline_qty_per_day: must be >= 10');
  });

  it('the far deadline of a config built in process is refused at reset (it was an inexact year-9652 deadline)', () => {
    const cfg = tweaked(farWorld);
    Object.assign(cfg.world, { dist: dist(100_000, 100) });
    const err = presetError(() => farAccept(cfg));
    expect(err.issues.some((i) => RULE.test(i)), err.message).toBe(true);
  });

  it('other invalid states the loader refuses: an unknown key, a workday that ends before it starts, a bad section', () => {
    const unknown = loadPreset('default') as unknown as { world: Record<string, unknown> };
    unknown.world['num_employes'] = 3;
    expect(presetError(() => new Env().reset({ seed: 1, preset: unknown as unknown as ExperimentConfig })).issues).toContain('/world/num_employes: unknown key');
    expect(presetError(() => new Env().reset({ seed: 1, preset: tweaked({ workday_start_hour: 18, workday_end_hour: 9 }) })).message).toMatch(/workday_end_hour/);
    const bad = loadPreset('default') as unknown as Record<string, unknown>;
    bad['sim'] = { start_date: '9625-01-01' };
    expect(presetError(() => new Env().reset({ seed: 1, preset: bad as unknown as ExperimentConfig })).message).toMatch(/start_date/);
  });

  it('a config changed after a first reset is validated again', () => {
    const cfg = loadPreset('default');
    const env = new Env();
    env.reset({ seed: 1, preset: cfg });
    cfg.world.deadline_qty_per_day = 1e-6;
    expect(presetError(() => env.reset({ seed: 1, preset: cfg })).issues).toContain('/world/deadline_qty_per_day: must be >= 10');
    cfg.world.deadline_qty_per_day = 150;
    expect(() => env.reset({ seed: 1, preset: cfg })).not.toThrow();
  });

  it('a config changed in place after a reset runs its new world (the world cache, keyed on the object, ran the old one)', () => {
    const cfg = loadPreset('default');
    const env = new Env();
    env.reset({ seed: 1, preset: cfg });
    expect(env.snapshot().sim.state.tasks.length).toBe(cfg.world.num_market_tasks);
    cfg.world.num_market_tasks = 5;
    cfg.world.dist.required_qty = { type: 'constant', value: 700 };
    env.reset({ seed: 1, preset: cfg });
    const tasks = env.snapshot().sim.state.tasks;
    expect(tasks.length).toBe(5);
    expect(tasks.flatMap((t) => t.reqs.map((r) => r.required.toString()))).toContain('700');
  });

  it('a valid in-process config plays as its loaded one (same outputs)', () => {
    const play = (preset: string | ExperimentConfig): string[] => {
      const env = new Env();
      env.reset({ seed: 3, preset });
      return ['market browse', 'task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1', 'task dispatch --task-id Task-1', 'sim resume', 'company status'].map((a) => env.step(a).observation.text);
    };
    expect(play(loadPreset('default'))).toEqual(play('default'));
  });
});

describe('a restored state whose tasks would get deadlines past the exact range', () => {
  type Ok<T> = { ok: true; result: T };
  type Snap = { sim: { state: { tasks: { title: string; status: string; deadline: number | null; reqs: { required: string }[] }[] } } };
  const forged = (h: ReturnType<typeof protocolHandler>, change: (s: Snap['sim']['state']) => void): Snap => {
    const r = h.handleValue({ v: 1, op: 'reset', seed: 1 }).reply as Ok<{ session: string }>;
    const snap = structuredClone((h.handleValue({ v: 1, op: 'snapshot', session: r.result.session }).reply as Ok<{ snapshot: Snap }>).result.snapshot);
    change(snap.sim.state);
    return snap;
  };

  it('a market task needing more work than its config can draw is bad_snapshot (its accept closed the session as internal)', () => {
    const h = protocolHandler();
    const snap = forged(h, (s) => {
      for (const q of (s.tasks.find((t) => t.title === 'Task-1') as Snap['sim']['state']['tasks'][number]).reqs) q.required = '100000000000000000000';
    });
    const res = h.handleValue({ v: 1, op: 'restore', snapshot: snap }).reply;
    if (res.ok) {
      const acc = h.handleValue({ v: 1, op: 'step', session: (res.result as { session: string }).session, action: 'task accept --task-id Task-1' }).reply;
      expect(acc.ok ? 'ok' : `${acc.error.code}: ${acc.error.message}`).toBe('refused at restore');
    }
    expect(res.ok ? 'ok' : res.error.code).toBe('bad_snapshot');
    expect(res.ok ? '' : res.error.message).toMatch(/\/state\/tasks\/\d+\/reqs: .*at most 3300/);
    expect(h.handleValue({ v: 1, op: 'hello' }).reply.ok).toBe(true);
    // The most the default preset can draw (1,500 units × (1 + 0.3 × (5 - 1)) = 3,300) restores.
    const most = forged(h, (s) => {
      for (const q of (s.tasks.find((t) => t.title === 'Task-1') as Snap['sim']['state']['tasks'][number]).reqs) q.required = '3300';
    });
    expect(h.handleValue({ v: 1, op: 'restore', snapshot: most }).reply.ok).toBe(true);
  });

  it('a task deadline past 2**53 µs is bad_snapshot', () => {
    const h = protocolHandler();
    const snap = forged(h, (s) => {
      const t = s.tasks.find((x) => x.title === 'Task-1') as Snap['sim']['state']['tasks'][number];
      t.deadline = 2 ** 53 + 2;
    });
    const res = h.handleValue({ v: 1, op: 'restore', snapshot: snap }).reply;
    expect(res.ok ? 'ok' : res.error.code).toBe('bad_snapshot');
  });
});
