/**
 * `sim.start_date` (a preset's, a restored snapshot's config's, a turn snapshot's `sim_options`, a reset option) was
 * checked only for its form:
 * - a turn snapshot whose config said `start_date = "garbage"`, `"2025-02-30"` or `"9999-06-01"` (horizon past year
 *   9999) restored, and the restart after a bankruptcy (`Simulation.create` again) failed with `internal`, closing the
 *   session; a preset file with such a date loaded and failed only at reset;
 * - a start date far from 1970 (reset option `start_date: "9625-01-01"`, or year 1) ran, but instants are microseconds
 *   since 1970 in doubles, exact only within 2**53 µs (1684-2255): the same episode on the same weekdays gave other
 *   times (a completion 16 µs later in 9625 than in 2025), no longer the reference's exact datetime arithmetic.
 * Now every start date lies in 1900-01-01 .. 2099-12-31 (a horizon of at most 100 years then ends before 2200, every
 * instant exact), and the start and horizon end are checked wherever a run could later be created from them.
 */
import { describe, expect, it } from 'vitest';
import { configFromRaw, loadPreset, PresetError } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import type { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { protocolHandler, sendV1 as send } from '../helpers/protocol-handler.js';

const handler = (): ProtocolHandler => protocolHandler({ maxMessageBytes: 1 << 22 });

/** The default preset's raw config with `sim` fields replaced. */
function rawWith(sim: Record<string, unknown>): Record<string, unknown> {
  const cfg = structuredClone(loadPreset('default')) as unknown as Record<string, Record<string, unknown>>;
  return { ...cfg, sim: { ...cfg['sim'], ...sim } };
}

const ACTIONS = [
  'task accept --task-id Task-1',
  'task assign --task-id Task-1 --employees Emp_1,Emp_2',
  'task accept --task-id Task-2',
  'task assign --task-id Task-2 --employees Emp_3',
  'task dispatch --task-id Task-1',
  'task dispatch --task-id Task-2',
  'sim resume',
  'sim resume',
  'sim resume',
];

/** The episode's instants relative to its start, and its funds. */
function episode(startDate: string): { rel: number[]; funds: number } {
  const env = new Env();
  env.reset({ seed: 1, options: { start_date: startDate, horizon_years: 1 } });
  for (const a of ACTIONS) env.step(a);
  const st = env.snapshot().sim.state;
  const rel = [st.simTime, ...st.events.map((e) => e.at), ...st.tasks.flatMap((t) => (t.deadline !== null ? [t.deadline] : []))].map((t) => t - st.startTime);
  return { rel, funds: st.fundsCents };
}

describe('start dates', () => {
  it('runs on the same calendar 28 years apart are the same run: every instant exact within the range', () => {
    const ref = episode('2025-01-01');
    for (const y of [1913, 1941, 1969, 1997, 2053, 2081]) expect(episode(`${y}-01-01`), String(y)).toEqual(ref);
  });

  it('a reset outside 1900-01-01 .. 2099-12-31 is refused (9625 gave times 16 µs off the exact ones)', () => {
    for (const sd of ['9625-01-01', '2425-01-01', '2100-01-01', '1899-12-31', '0001-01-01', '9999-12-31']) {
      expect(() => new Env().reset({ seed: 1, options: { start_date: sd } }), sd).toThrow(/start date .* 1900-01-01 to 2099-12-31/);
    }
    for (const sd of ['1900-01-01', '2099-12-31']) {
      const r = new Env().reset({ seed: 1, options: { start_date: sd, horizon_years: 100 } });
      expect(r.observation.status.horizon_end, sd).toBe(`${Number(sd.slice(0, 4)) + 100}${sd.slice(4)}T09:00:00`);
    }
    const h = handler();
    const r = send(h, { op: 'reset', seed: 1, options: { start_date: '9625-01-01' } });
    expect(r.ok ? 'ok' : r.error.code).toBe('invalid_request');
    expect(r.ok ? '' : r.error.message).toMatch(/start date 9625-01-01 .* 1900-01-01 to 2099-12-31/);
  });

  it('a preset start_date that is no date, or outside the range, is an error naming /sim/start_date', () => {
    for (const sd of ['garbage', '2025-02-30', '9999-06-01', '2300-01-01', '1899-12-31']) {
      let err: unknown;
      try {
        configFromRaw(rawWith({ start_date: sd }), 'x');
      } catch (e) {
        err = e;
      }
      expect(err, sd).toBeInstanceOf(PresetError);
      expect((err as PresetError).issues.join('; '), sd).toMatch(/^\/sim\/start_date: /);
    }
    // A Feb 29 start whose horizon ends in a non-leap year: the run could never be created.
    expect(() => configFromRaw(rawWith({ start_date: '2024-02-29', horizon_years: 1 }), 'x')).toThrow(/\/sim\/start_date: .*day is out of range for month/);
    expect(configFromRaw(rawWith({ start_date: '2024-02-29', horizon_years: 4 }), 'x').sim.start_date).toBe('2024-02-29');
  });

  it('forged start dates in restored snapshots are bad_snapshot (a turn session died at its restart after bankruptcy)', () => {
    const h = handler();
    const t = send(h, { op: 'turn_reset', seed: 1, options: { max_episodes: 2 } });
    if (!t.ok) throw new Error(t.error.message);
    const ts = send(h, { op: 'turn_snapshot', session: t.result['session'] });
    if (!ts.ok) throw new Error(ts.error.message);
    const turnSnap = ts.result['snapshot'] as { sim: { config: { sim: Record<string, unknown> } }; sim_options: Record<string, unknown> };
    const e = send(h, { op: 'reset', seed: 1 });
    if (!e.ok) throw new Error(e.error.message);
    const es = send(h, { op: 'snapshot', session: e.result['session'] });
    if (!es.ok) throw new Error(es.error.message);
    const envSnap = es.result['snapshot'] as { sim: { config: { sim: Record<string, unknown> } } };

    for (const sd of ['garbage', '2025-02-30', '9999-06-01', '9625-01-01']) {
      const forgedTurn = structuredClone(turnSnap);
      forgedTurn.sim.config.sim['start_date'] = sd;
      const r = send(h, { op: 'turn_restore', snapshot: forgedTurn });
      expect(r.ok ? 'ok' : r.error.code, sd).toBe('bad_snapshot');
      expect(r.ok ? '' : r.error.message, sd).toContain('/sim/start_date: ');
      const forgedEnv = structuredClone(envSnap);
      forgedEnv.sim.config.sim['start_date'] = sd;
      const q = send(h, { op: 'restore', snapshot: forgedEnv });
      expect(q.ok ? 'ok' : q.error.code, sd).toBe('bad_snapshot');
    }
    // The turn snapshot's own start options: the restart would create the run from them.
    for (const opts of [{ startDate: '9625-01-01' }, { startDate: '2024-02-29', horizonYears: 1 }, { startDate: '2099-06-01' }]) {
      const forged = structuredClone(turnSnap);
      Object.assign(forged.sim_options, opts);
      const r = send(h, { op: 'turn_restore', snapshot: forged });
      const fine = opts.startDate === '2099-06-01';
      expect(r.ok ? 'ok' : r.error.code, JSON.stringify(opts)).toBe(fine ? 'ok' : 'bad_snapshot');
    }
  });
});
