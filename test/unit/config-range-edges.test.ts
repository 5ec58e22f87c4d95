/**
 * Two configs inside the preset schema's ranges that broke a run (found by test/property/config-ranges.test.ts once
 * it went through the server's restore path):
 * - `trust_max` with more than 3 decimals (99.99950000000001): trust is kept to 3 decimals, so a client's trust capped at
 *   trust_max rounded up above it; the next success took a fractional power of a negative number (1 - trust/trust_max)
 *   and the step failed `internal` (the reference's Python gets a complex number and fails too). Now a trust_max that
 *   rounds up at 3 decimals is refused naming the field.
 * - a required prestige below 1 (`required_prestige` low 0) with `prestige_qty_scale` above 1: the quantity scale
 *   1 + prestige_qty_scale × (prestige - 1) was negative, tasks needed negative work, and the session's own snapshot
 *   was refused at restore (`quantities must satisfy 0 <= completed <= required`). Now the distribution's `low` and a
 *   constant's `value` are at least 1 (prestige levels start at 1; every shipped preset's do).
 */
import { describe, expect, it } from 'vitest';
import { configFromRaw, listPresets, loadPreset, PresetError } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';

function rawWith(world: Record<string, unknown>): Record<string, unknown> {
  const cfg = structuredClone(loadPreset('default')) as unknown as Record<string, Record<string, unknown>>;
  return { ...cfg, world: { ...cfg['world'], ...world } };
}

function issues(raw: Record<string, unknown>): string[] {
  try {
    configFromRaw(raw, 'x');
  } catch (e) {
    if (e instanceof PresetError) return [...e.issues];
    throw e;
  }
  return [];
}

const dist = (required_prestige: Record<string, unknown>): Record<string, unknown> => ({ ...loadPreset('default').world.dist, required_prestige });

describe('range edges', () => {
  it('trust_max that rounds up at 3 decimals is refused (trust, kept to 3 decimals, rose above it)', () => {
    // 99.9995 is 99.99949999... in binary: it rounds down, trust stays below it.
    expect(issues(rawWith({ trust_max: 99.9995, trust_min: 0 }))).toEqual([]);
    expect(issues(rawWith({ trust_max: 5.0004 }))).toEqual([]);
    expect(issues(rawWith({ trust_max: 5.001 }))).toEqual([]);
    // The property test's counterexample: trust_max 99.99950000000001; a success with a near-zero diminishing power
    // lifted trust to trust_max, kept as 100.000, and the next success raised a negative number to a fractional power.
    expect(issues(rawWith({ trust_max: 99.99950000000001, trust_min: 0 }))).toEqual([expect.stringMatching(/^\/world\/trust_max: .*3 decimals/)]);
  });

  it('required_prestige below 1 is refused naming the parameter (it made task quantities negative)', () => {
    expect(issues(rawWith({ dist: dist({ type: 'normal', mean: 0, stdev: 0, low: 0, high: 0 }) }))).toContain('/world/dist/required_prestige/low: must be >= 1');
    expect(issues(rawWith({ dist: dist({ type: 'constant', value: 0.5 }) }))).toContain('/world/dist/required_prestige/value: must be >= 1');
    expect(issues(rawWith({ dist: dist({ type: 'uniform', low: 1, high: 3 }) }))).toEqual([]);
  });

  it('every session restores from its own snapshot at the edges of the quantity scale', () => {
    const presets = listPresets();
    const h = new ProtocolHandler(new SessionManager({ presets }), { version: '9.9.9', presets, maxMessageBytes: 1 << 24 }, { validateReplies: true });
    for (const [prestige, scale] of [[1, 2], [100, 2], [1, 0]] as const) {
      const cfg = configFromRaw(rawWith({ prestige_qty_scale: scale, dist: dist({ type: 'constant', value: prestige }) }), 'edge');
      const env = new Env();
      env.reset({ seed: 1, preset: cfg });
      for (const t of env.snapshot().sim.state.tasks) for (const r of t.reqs) expect(Number(r.required.toString())).toBeGreaterThanOrEqual(0);
      const r = h.handleValue({ v: 1, op: 'restore', snapshot: JSON.parse(JSON.stringify(env.snapshot())) }).reply;
      expect(r.ok ? 'ok' : r.error.message, `${prestige} ${scale}`).toBe('ok');
    }
  });
});

/**
 * A restored snapshot's state is input too. Client trust above trust_max restored (the schema takes any decimal), and
 * the first success for that client raised a negative number to a fractional power: `internal`, the session closed.
 * A state whose run started in year 9999 restored, and the first `task accept` computed a deadline past the calendar's
 * end: `internal` too. Now both are bad_snapshot: trust lies in [0, trust_max], and the run's start and horizon end
 * are ones runBounds gives (a start date from 1900-01-01 to 2099-12-31, a horizon of at most 100 years).
 */
describe('forged snapshot states', () => {
  const presets = listPresets();
  const h = new ProtocolHandler(new SessionManager({ presets }), { version: '9.9.9', presets, maxMessageBytes: 1 << 24 }, { validateReplies: true });
  type State = { clients: { trust: string }[]; startTime: number; simTime: number; horizonEnd: number; events: { type: string; at: number }[] };
  const fresh = (): { sim: { state: State } } => {
    const env = new Env();
    env.reset({ seed: 1 });
    return JSON.parse(JSON.stringify(env.snapshot())) as { sim: { state: State } };
  };
  const restore = (snap: unknown): string => {
    const r = h.handleValue({ v: 1, op: 'restore', snapshot: snap }).reply;
    if (r.ok) h.handleValue({ v: 1, op: 'close', session: (r.result as { session: string }).session });
    return r.ok ? 'ok' : `${r.error.code}: ${r.error.message}`;
  };

  it('client trust above trust_max or below 0 is bad_snapshot', () => {
    for (const trust of ['7.000', '5.001', '-1.000']) {
      const snap = fresh();
      snap.sim.state.clients[0]!.trust = trust;
      expect(restore(snap), trust).toMatch(/^bad_snapshot: .*\/state\/clients\/0\/trust/);
    }
    const snap = fresh();
    snap.sim.state.clients[0]!.trust = '5.000';
    expect(restore(snap)).toBe('ok');
  });

  it('a run outside the start dates or longer than 100 years is bad_snapshot', () => {
    const YEAR = 365 * 86_400e6;
    const shift = (snap: { sim: { state: State } }, by: number): void => {
      const s = snap.sim.state;
      s.startTime += by;
      s.simTime += by;
      s.horizonEnd += by;
      for (const e of s.events) e.at += by;
    };
    const late = fresh();
    shift(late, 7974 * YEAR); // 2025 -> ~9993
    expect(restore(late)).toMatch(/^bad_snapshot: .*\/state\/startTime/);
    const long = fresh();
    long.sim.state.horizonEnd += 200 * YEAR;
    for (const e of long.sim.state.events) if (e.type === 'horizon_end') e.at = long.sim.state.horizonEnd;
    expect(restore(long)).toMatch(/^bad_snapshot: .*\/state\/horizonEnd/);
    const near = fresh();
    shift(near, 28 * 52 * 7 * 86_400e6); // whole weeks: still a 09:00 start inside the range
    expect(restore(near)).toBe('ok');
  });
});
