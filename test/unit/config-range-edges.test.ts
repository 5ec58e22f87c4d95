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
