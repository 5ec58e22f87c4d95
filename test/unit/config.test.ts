import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configFromRaw, listPresets, loadPreset, loadPresetFromText, presetConfig, PresetError, presetDir, schemaPath } from '../../src/config/load.js';
import {
  DERIVED_WORLD_KEYS,
  DIST_FIELDS,
  FIX_DOCS,
  FIX_NAMES,
  deriveWorld,
  formatFixedPy,
  Simulation,
  type DistSpec,
  type ExperimentConfig,
  type WorldInput,
} from '../../src/sim/index.js';
import { CLIENT_NAME_POOL } from '../../src/sim/model/world.js';

const tmp = mkdtempSync(join(tmpdir(), 'ycgym-config-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Write `text` to a fresh temp file and return its path. */
function tmpFile(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

/** Built-in preset text, as a resolveBase callback for loadPresetFromText. */
function builtinText(name: string): string {
  return readFileSync(join(presetDir(), `${name}.toml`), 'utf8');
}

/** Error message thrown by fn (fails the test if nothing is thrown). */
function errorOf(fn: () => unknown): PresetError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PresetError);
    return err as PresetError;
  }
  throw new Error('expected a PresetError');
}

/** Raw world table of the default preset with some fields replaced. */
function defaultWorldWith(overrides: Record<string, unknown>): Record<string, unknown> {
  return { ...structuredClone(loadPreset('default').world), ...overrides };
}

describe('built-in presets', () => {
  it('lists the presets found in presets/', () => {
    const names = listPresets();
    expect(names).toEqual(expect.arrayContaining(['corrected', 'default', 'multi']));
    expect([...names].sort()).toEqual(names);
  });

  it('loads default (the reference Table 2 preset)', () => {
    const cfg = loadPreset('default');
    expect(cfg.name).toBe('default');
    expect(cfg.sim).toEqual({ start_date: '2025-01-01', horizon_years: 1, company_name: 'BenchCo' });
    expect(cfg.loop).toEqual({ auto_advance_after_turns: 5, max_turns: null });
    expect(cfg.agent.model).toBe('openrouter/z-ai/glm-5');
    expect(cfg.agent.system_prompt).toBeNull();
    expect(cfg.world.num_employees).toBe(8);
    expect(cfg.world.num_market_tasks).toBe(200);
    expect(cfg.world.num_clients).toBe(6);
    expect(cfg.world.initial_funds_cents).toBe(20_000_000);
    expect(cfg.world.task_progress_milestones).toEqual([]);
    expect(cfg.world.dist.required_prestige).toEqual({ type: 'triangular', low: 1, high: 5, mode: 1 });
    expect(cfg.world.dist.domain_count).toEqual({ type: 'constant', value: 1 });
    // Not in the file: WorldDists default.
    expect(cfg.world.dist.required_trust).toEqual({ type: 'triangular', low: 1, high: 5, mode: 2 });
    // Not in the file: WorldConfig defaults.
    expect(cfg.world.trust_min).toBe(0.0);
    expect(cfg.world.trust_base_multiplier).toBe(0.5);
    expect(cfg.world.trust_level_max_required).toBe(4);
    expect(cfg.world.client_tier_enterprise_threshold).toBe(1.7);
    // In the file although it sits in the reference's "derived" section: kept.
    expect(cfg.world.trust_gated_reward_boost).toBe(0.0);
  });

  it('loads multi', () => {
    const cfg = loadPreset('multi');
    expect(cfg.name).toBe('multi');
    expect(cfg.world.num_employees).toBe(12);
    expect(cfg.world.num_market_tasks).toBe(120);
    expect(cfg.world.num_clients).toBe(10);
    expect(cfg.world.dist.required_prestige).toEqual({ type: 'uniform', low: 1, high: 8 });
    expect(cfg.world.dist.domain_count).toEqual({ type: 'triangular', low: 1, high: 4, mode: 2 });
  });

  it('default and multi differ only in the documented fields', () => {
    const d = loadPreset('default');
    const m = loadPreset('multi');
    const strip = (c: ExperimentConfig) => ({
      ...c,
      name: '',
      description: '', // multi describes itself (presets/multi.toml)
      world: {
        ...c.world,
        num_employees: 0,
        num_market_tasks: 0,
        num_clients: 0,
        dist: { ...c.world.dist, required_prestige: null, domain_count: null },
      },
    });
    expect(strip(m)).toEqual(strip(d));
  });

  it('corrected has every fix on; default and multi have every fix off', () => {
    const corrected = loadPreset('corrected');
    const def = loadPreset('default');
    for (const fix of FIX_NAMES) {
      expect(corrected.fixes[fix]).toBe(true);
      expect(def.fixes[fix]).toBe(false);
      expect(loadPreset('multi').fixes[fix]).toBe(false);
    }
    expect(Object.keys(corrected.fixes).sort()).toEqual([...FIX_NAMES].sort());
    // corrected changes nothing but the name, description and fixes.
    expect(corrected.name).toBe('corrected');
    expect(corrected.world).toEqual(def.world);
    expect(corrected.agent).toEqual(def.agent);
    expect(corrected.loop).toEqual(def.loop);
    expect(corrected.sim).toEqual(def.sim);
  });

  it('returns a fresh copy on every call', () => {
    const a = loadPreset('default');
    a.world.num_employees = 999;
    a.world.dist.required_qty = { type: 'constant', value: 1 };
    a.fixes.task_cancel = true;
    const b = loadPreset('default');
    expect(b.world.num_employees).toBe(8);
    expect(b.world.dist.required_qty).toEqual({ type: 'triangular', low: 400, high: 1500, mode: 800 });
    expect(b.fixes.task_cancel).toBe(false);
  });

  it('presetConfig: one shared frozen config per built-in preset, equal to loadPreset', () => {
    for (const name of listPresets()) {
      const a = presetConfig(name);
      expect(presetConfig(name)).toBe(a);
      expect(Object.isFrozen(a) && Object.isFrozen(a.world) && Object.isFrozen(a.world.dist)).toBe(true);
      expect(a).toEqual(loadPreset(name));
      expect(() => {
        (a.world as { num_employees: number }).num_employees = 1;
      }).toThrow(TypeError);
    }
    expect(presetConfig(undefined)).toBe(presetConfig('default'));
    // A config object is validated (test/unit/deadline-range.test.ts): its deep-frozen validated copy, the same one
    // while the object is unchanged.
    const given = loadPreset('multi');
    const got = presetConfig(given);
    expect(got).toEqual(given);
    expect(Object.isFrozen(got.world.dist)).toBe(true);
    expect(presetConfig(given)).toBe(got);
    expect(presetConfig(got)).toBe(got);
  });

  it('presetConfig: a config object changed in place in any way is validated again; an equal one keeps its copy', () => {
    // The check against the kept copy walks plain data itself and leaves anything else to isDeepStrictEqual: both
    // must see every change (a changed -0, NaN, an added or removed key, an array element, another prototype, a
    // symbol key) and an unchanged object (its keys in another order too) keeps its validated copy.
    type Raw = Record<string, Record<string, unknown>>;
    const changes: [string, (c: Raw) => void, boolean][] = [
      ['nothing', () => undefined, true],
      ['a number', (c) => void (c['world']!['num_employees'] = 9), false],
      ['0 to -0', (c) => void (c['agent']!['temperature'] = -0), false],
      ['0 to NaN', (c) => void (c['world']!['trust_min'] = NaN), false],
      ['a string', (c) => void (c['sim']!['start_date'] = '2025-01-02'), false],
      ['a boolean', (c) => void (c['fixes']!['task_cancel'] = true), false],
      ['a nested value', (c) => void ((c['world']!['dist'] as Record<string, Record<string, unknown>>)['required_qty']!['low'] = 401), false],
      ['an array element added', (c) => void (c['world']!['task_progress_milestones'] = [0.5]), false],
      ['a key added', (c) => void (c['world']!['extra_key'] = 1), false],
      ['a key added as undefined', (c) => void (c['world']!['extra_key'] = undefined), false],
      ['a key removed', (c) => void delete c['agent']!['model'], false],
      ['a symbol key added', (c) => void ((c['world'] as Record<symbol, unknown>)[Symbol('s')] = 1), false],
      ['another prototype', (c) => void (c['loop'] = Object.assign(Object.create({ inherited: 1 }) as Record<string, unknown>, c['loop'])), false],
      ['keys in another order, same values', (c) => void (c['sim'] = Object.fromEntries(Object.entries(c['sim']!).reverse())), true],
    ];
    for (const [what, change, same] of changes) {
      const given = loadPreset('default');
      const first = presetConfig(given);
      change(given as unknown as Raw);
      let again: unknown;
      try {
        again = presetConfig(given);
      } catch (e) {
        // Validated again and refused (an unknown key, a value out of range): not the kept copy.
        expect(same, what).toBe(false);
        expect(e, what).toBeInstanceOf(PresetError);
        continue;
      }
      if (same) expect(again, what).toBe(first);
      else expect(again, what).not.toBe(first);
    }
  });

  it('presetConfig: a TOML path is read on every call (an edited file takes effect)', () => {
    const p = tmpFile('edited.toml', 'extends = "default"\n[world]\nnum_employees = 5\n');
    expect(presetConfig(p).world.num_employees).toBe(5);
    writeFileSync(p, 'extends = "default"\n[world]\nnum_employees = 6\n');
    expect(presetConfig(p).world.num_employees).toBe(6);
  });
});

describe('fixes table', () => {
  it('schema, FIX_NAMES and FIX_DOCS agree', () => {
    const schema: unknown = JSON.parse(readFileSync(schemaPath(), 'utf8'));
    const fixesProps = (schema as { $defs: { fixes: { properties: Record<string, { type: string; default: boolean }> } } })
      .$defs.fixes.properties;
    expect(Object.keys(fixesProps)).toEqual([...FIX_NAMES]);
    for (const p of Object.values(fixesProps)) expect(p).toMatchObject({ type: 'boolean', default: false });
    expect(Object.keys(FIX_DOCS).sort()).toEqual([...FIX_NAMES].sort());
    for (const doc of Object.values(FIX_DOCS)) expect(doc.length).toBeGreaterThan(20);
  });

  it('a single fix can be switched on; the rest default to false', () => {
    const cfg = loadPresetFromText('extends = "default"\n[fixes]\ntask_cancel = true\n', 'one-fix', builtinText);
    expect(cfg.fixes.task_cancel).toBe(true);
    expect(FIX_NAMES.filter((f) => cfg.fixes[f])).toEqual(['task_cancel']);
  });
});

describe('derived parameters match the reference float arithmetic', () => {
  it('default preset (the same knobs are used by multi)', () => {
    for (const name of ['default', 'multi']) {
      const w = loadPreset(name).world;
      // Knobs: trust_max 5.0, trust_build_rate 5.0, trust_fragility 0.3, trust_focus_pressure 0.3,
      // trust_reward_ceiling 2.6, trust_base_multiplier 0.5 (default), trust_gating_fraction 0.30,
      // loyalty_rat_fraction 0.35, loyalty_severity 1.0. Expected values are Python repr() of:
      expect(w.trust_gain_base).toBe(1.6); // 5.0 * 1.6 / 5.0
      expect(w.trust_fail_penalty).toBe(0.18); // 0.3 * 0.6
      expect(w.trust_cancel_penalty).toBe(0.3); // 0.3 * 1.0
      expect(w.trust_decay_per_day).toBe(0.009); // 0.3 * 0.03
      expect(w.trust_cross_client_decay).toBe(0.018); // 0.3 * 0.06
      expect(w.trust_reward_scale).toBe(0.24852071005917162); // (2.6 - 0.5) / (1.69 * 5.0)
      expect(w.trust_reward_threshold).toBe(0.4); // max(0.0, 1.0 - 2.0 * 0.30)
      expect(w.trust_reward_ramp).toBe(0.6); // min(1.0, 2.0 * 0.30)
      expect(w.loyalty_mode).toBe(0.09000000000000008); // 1.0 - 2.6 * 0.35
      expect(w.scope_creep_max).toBe(1.0); // 1.0 * 1.00
      expect(w.dispute_clawback_max).toBe(1.2); // 1.0 * 1.20
      expect(w.dispute_prob_max).toBe(1.0); // 1.0 * 1.00
    }
  });

  it('awkward knob values, bit for bit', () => {
    const raw = defaultWorldWith({
      trust_max: 7.3,
      trust_build_rate: 3.7,
      trust_fragility: 0.37,
      trust_focus_pressure: 0.41,
      trust_reward_ceiling: 2.9,
      trust_base_multiplier: 0.45,
      trust_gating_fraction: 0.7,
      loyalty_rat_fraction: 0.27,
      loyalty_severity: 0.83,
    });
    const w = configFromRaw({ world: raw }, 'awkward').world;
    // Operand order matters: 7.3 * (1.6 / 3.7) would give 3.156756756756757.
    expect(w.trust_gain_base).toBe(3.1567567567567565); // 7.3 * 1.6 / 3.7
    expect(w.trust_fail_penalty).toBe(0.222); // 0.37 * 0.6
    expect(w.trust_cancel_penalty).toBe(0.37); // 0.37 * 1.0
    expect(w.trust_decay_per_day).toBe(0.011099999999999999); // 0.37 * 0.03
    expect(w.trust_cross_client_decay).toBe(0.024599999999999997); // 0.41 * 0.06
    expect(w.trust_reward_scale).toBe(0.1985896084947718); // (2.9 - 0.45) / (1.69 * 7.3)
    expect(w.trust_reward_threshold).toBe(0.0); // max(0.0, 1.0 - 2.0 * 0.7)
    expect(w.trust_reward_ramp).toBe(1.0); // min(1.0, 2.0 * 0.7)
    expect(w.loyalty_mode).toBe(0.29799999999999993); // 1.0 - 2.6 * 0.27
    expect(w.scope_creep_max).toBe(0.83); // 0.83 * 1.00
    expect(w.dispute_clawback_max).toBe(0.9959999999999999); // 0.83 * 1.20
    expect(w.dispute_prob_max).toBe(0.83); // 0.83 * 1.00
  });

  it('file values of derived fields are overwritten; the other "derived-section" fields are kept', () => {
    const raw = defaultWorldWith({
      trust_gain_base: 99,
      trust_decay_per_day: 99,
      loyalty_mode: 99,
      dispute_prob_max: 99,
      trust_min: 0.25,
      trust_gain_diminishing_power: 2.0,
      client_reward_mult_high: 3.0,
    });
    const w = configFromRaw({ world: raw }, 'overrides').world;
    expect(w.trust_gain_base).toBe(1.6);
    expect(w.trust_decay_per_day).toBe(0.009);
    expect(w.loyalty_mode).toBe(0.09000000000000008);
    expect(w.dispute_prob_max).toBe(1.0);
    expect(w.trust_min).toBe(0.25);
    expect(w.trust_gain_diminishing_power).toBe(2.0);
    expect(w.client_reward_mult_high).toBe(3.0);
  });

  it('deriveWorld is pure and recomputes every derived key', () => {
    const base = loadPreset('default').world;
    const input: WorldInput = { ...base };
    for (const k of DERIVED_WORLD_KEYS) delete input[k];
    const snapshot = structuredClone(input);
    const out = deriveWorld(input);
    expect(input).toEqual(snapshot);
    expect(out).toEqual(base);
  });

  it('a workday that does not end after it starts is an error naming the field (a deadline was a negative span)', () => {
    for (const [start, end] of [[18, 9], [9, 9], [23, 1]]) {
      const e = errorOf(() => configFromRaw({ world: defaultWorldWith({ workday_start_hour: start, workday_end_hour: end }) }, 'z'));
      expect(e).toBeInstanceOf(PresetError);
      expect(e.message).toContain(`/world/workday_end_hour: must be greater than workday_start_hour (${start}), got ${end}`);
    }
    expect(configFromRaw({ world: defaultWorldWith({ workday_start_hour: 0, workday_end_hour: 24 }) }, 'z').world.workday_end_hour).toBe(24);
  });

  it('bounds out of order are an error naming the field (a triangular with its mode outside gave NaN rewards)', () => {
    // client_reward_mult high 5e-324 under mode 1: triangular's c = 1/5e-324 = Infinity, the client multiplier was
    // Infinity and a zero reward times it NaN, in the market's reward_funds_cents and the ledger.
    const cases: [Record<string, unknown>, string][] = [
      [{ client_reward_mult_low: 0, client_reward_mult_mode: 1, client_reward_mult_high: 5e-324 }, '/world/client_reward_mult_mode: must lie between client_reward_mult_low (0) and client_reward_mult_high (5e-324), got 1'],
      [{ client_reward_mult_low: 2, client_reward_mult_mode: 1, client_reward_mult_high: 3 }, '/world/client_reward_mult_mode: must lie between client_reward_mult_low (2) and client_reward_mult_high (3), got 1'],
      [{ dist: { ...loadPreset('default').world.dist, reward_funds_cents: { type: 'triangular', low: 0, high: 5e-324, mode: 1 } } }, '/world/dist/reward_funds_cents/mode: must lie between low (0) and high (5e-324), got 1'],
      [{ dist: { ...loadPreset('default').world.dist, required_qty: { type: 'uniform', low: 10, high: 1 } } }, '/world/dist/required_qty/high: must be at least low (10), got 1'],
      [{ salary_mid: { name: 'mid', share: 0.35, min_cents: 900000, max_cents: 800000, rate_min: 4, rate_max: 7 } }, '/world/salary_mid/max_cents: must be at least min_cents (900000), got 800000'],
      [{ salary_mid: { name: 'mid', share: 0.35, min_cents: 600000, max_cents: 800000, rate_min: 8, rate_max: 7 } }, '/world/salary_mid/rate_max: must be at least rate_min (8), got 7'],
      [{ prestige_min: 5, prestige_max: 4 }, '/world/prestige_max: must be at least prestige_min (5), got 4'],
      // trust_min above trust_max: trust / trust_max above 1, and the gain's (1 - ratio) ** power NaN or an overflow.
      [{ trust_min: 1, trust_max: 0.5 }, '/world/trust_max: must be at least trust_min (1), got 0.5'],
    ];
    for (const [w, msg] of cases) {
      const e = errorOf(() => configFromRaw({ world: defaultWorldWith(w) }, 'z'));
      expect(e, msg).toBeInstanceOf(PresetError);
      expect(e.message).toContain(msg);
    }
  });

  it('a zero divisor is an error (the reference raises ZeroDivisionError)', () => {
    // The schema's ranges refuse both divisors at 0 (trust_build_rate >= 0.01, trust_max >= 0.01) ...
    const e1 = errorOf(() => configFromRaw({ world: defaultWorldWith({ trust_build_rate: 0 }) }, 'z'));
    expect(e1.message).toContain('/world/trust_build_rate: must be >= 0.01');
    const e2 = errorOf(() => configFromRaw({ world: defaultWorldWith({ trust_max: 0 }) }, 'z'));
    expect(e2.message).toContain('/world/trust_max: must be >= 0.01');
    // ... and the derivation itself still refuses a zero divisor, as the reference does.
    const raw = defaultWorldWith({}) as unknown as WorldInput;
    expect(() => deriveWorld({ ...raw, trust_build_rate: 0 })).toThrow('/world/trust_build_rate: must be non-zero');
    expect(() => deriveWorld({ ...raw, trust_max: 0 })).toThrow('/world/trust_max: must be non-zero');
  });
});

describe('extends', () => {
  it('deep-merges the named built-in preset under a user file', () => {
    const p = tmpFile(
      'mine.toml',
      [
        'extends = "default"',
        'description = "mine"',
        '[agent]',
        'model = "some/other-model"',
        '[world]',
        'num_employees = 15',
        'task_progress_milestones = [0.5]',
        '[world.dist.required_qty]',
        'high = 2000',
        '[world.salary_mid]',
        'name = "middle"',
        '',
      ].join('\n'),
    );
    const cfg = loadPreset(p);
    const def = loadPreset('default');
    expect(cfg.name).toBe('default'); // inherited
    expect(cfg.description).toBe('mine');
    expect(cfg.agent).toEqual({ ...def.agent, model: 'some/other-model' });
    expect(cfg.world.num_employees).toBe(15);
    expect(cfg.world.task_progress_milestones).toEqual([0.5]); // arrays are replaced
    // Nested tables merge key by key.
    expect(cfg.world.dist.required_qty).toEqual({ type: 'triangular', low: 400, high: 2000, mode: 800 });
    expect(cfg.world.salary_mid).toEqual({ ...def.world.salary_mid, name: 'middle' });
    expect(cfg.world.num_clients).toBe(6);
    expect(cfg).not.toHaveProperty('extends');
  });

  it('is resolved recursively (a user file extending corrected also gets default)', () => {
    const p = tmpFile('chain.toml', 'extends = "corrected"\nname = "chain"\n[fixes]\nreport_monthly = false\n');
    const cfg = loadPreset(p);
    expect(cfg.name).toBe('chain');
    expect(cfg.world).toEqual(loadPreset('default').world);
    expect(cfg.fixes.report_monthly).toBe(false);
    expect(cfg.fixes.task_cancel).toBe(true);
  });

  it('detects cycles', () => {
    const texts: Record<string, string> = {
      a: 'extends = "b"\n',
      b: 'extends = "a"\n',
    };
    const e = errorOf(() => loadPresetFromText('extends = "a"\n', 'cyc.toml', (n) => texts[n] ?? ''));
    expect(e.message).toContain('extends cycle: a -> b -> a');
  });

  it('rejects a non-string extends', () => {
    const e = errorOf(() => loadPresetFromText('extends = 3\n', 'ext.toml', builtinText));
    expect(e.message).toBe('preset "ext.toml": /extends: must be string');
  });

  it('rejects an unknown base, listing the available presets', () => {
    const p = tmpFile('badbase.toml', 'extends = "nope"\n');
    const e = errorOf(() => loadPreset(p));
    expect(e.message).toContain("Unknown preset 'nope'. Available presets: [");
    expect(e.message).toContain("'default'");
  });
});

describe('validation errors', () => {
  it('unknown key names the key and its path', () => {
    const p = tmpFile('typo.toml', 'extends = "default"\n[world]\nnum_employes = 3\n');
    const e = errorOf(() => loadPreset(p));
    expect(e.message).toBe(`preset "${p}": /world/num_employes: unknown key`);
    expect(e.source).toBe(p);
    expect(e.issues).toEqual(['/world/num_employes: unknown key']);
  });

  it('unknown keys at the top level, in a dist spec and in fixes', () => {
    const e = errorOf(() =>
      loadPresetFromText(
        'extends = "default"\nmodel = "x"\n[world.dist.required_qty]\nscale = 2\n[fixes]\ntask_cancle = true\n',
        'x.toml',
        builtinText,
      ),
    );
    expect(e.issues).toEqual(
      expect.arrayContaining([
        '/model: unknown key',
        '/world/dist/required_qty/scale: unknown key',
        '/fixes/task_cancle: unknown key',
      ]),
    );
  });

  it('wrong types', () => {
    const e = errorOf(() =>
      loadPresetFromText(
        'extends = "default"\n[world]\ntrust_max = "5"\nnum_employees = 8.5\n[sim]\nstart_date = 2025-01-01\n[fixes]\ntask_cancel = 1\n',
        'x.toml',
        builtinText,
      ),
    );
    expect(e.message.startsWith('preset "x.toml": ')).toBe(true);
    expect(e.issues).toEqual(
      expect.arrayContaining([
        '/world/trust_max: must be number',
        '/world/num_employees: must be integer', // pydantic int rejects a fractional value
        '/sim/start_date: must be string', // a bare TOML date is not a string
        '/fixes/task_cancel: must be boolean',
      ]),
    );
  });

  it('integral floats are accepted for integer fields (pydantic lax mode does the same)', () => {
    const cfg = loadPresetFromText('extends = "default"\n[world]\nnum_employees = 9.0\n', 'x.toml', builtinText);
    expect(cfg.world.num_employees).toBe(9);
  });

  it('NaN and infinity are rejected', () => {
    const e = errorOf(() =>
      loadPresetFromText('extends = "default"\n[world]\ntrust_max = nan\nnum_clients = inf\n', 'x.toml', builtinText),
    );
    expect(e.issues).toHaveLength(2);
    expect(e.issues).toEqual(expect.arrayContaining(['/world/trust_max: must be number', '/world/num_clients: must be integer']));
  });

  it('missing required keys are grouped per table', () => {
    const e = errorOf(() =>
      loadPresetFromText('[world.dist.required_qty]\ntype = "triangular"\nlow = 1\n', 'x.toml', builtinText),
    );
    expect(e.issues[0]).toMatch(/^\/world: missing required keys: num_employees, initial_funds_cents, /);
    expect(e.issues).toContain('/world/dist/required_qty: missing required keys: high, mode');
    const e2 = errorOf(() => loadPresetFromText('name = "w"\n', 'x.toml', builtinText));
    expect(e2.issues).toEqual(['/world: missing required key']);
  });

  it('bad distribution types', () => {
    const expected = '"triangular", "beta", "normal", "uniform", "constant"';
    const e = errorOf(() =>
      loadPresetFromText('extends = "default"\n[world.dist.required_qty]\ntype = "gamma"\n', 'x.toml', builtinText),
    );
    expect(e.issues).toEqual([`/world/dist/required_qty/type: unknown distribution type "gamma"; expected one of ${expected}`]);
    // Without `type` (no base to inherit it from) the family cannot be chosen.
    const world = defaultWorldWith({ dist: { skill_boost: { low: 1 } } });
    const e2 = errorOf(() => configFromRaw({ world }, 'x'));
    expect(e2.issues).toEqual([`/world/dist/skill_boost/type: must be a string, one of ${expected}`]);
  });

  it('salary tier shares must sum to 1.0 (reference message)', () => {
    const e = errorOf(() =>
      loadPresetFromText('extends = "default"\n[world.salary_senior]\nshare = 0.10\n', 'x.toml', builtinText),
    );
    // 0.50 + 0.35 + 0.10, formatted with Python's "{:.6f}"
    expect(e.message).toBe('preset "x.toml": /world: salary tier shares must sum to 1.0, got 0.950000');
    // Within 1e-6 is fine.
    const ok = loadPresetFromText('extends = "default"\n[world.salary_senior]\nshare = 0.1500005\n', 'x.toml', builtinText);
    expect(ok.world.salary_senior.share).toBe(0.1500005);
  });

  it('TOML syntax errors are reported with the source', () => {
    const e = errorOf(() => loadPresetFromText('[world\n', 'broken.toml', builtinText));
    expect(e.message).toMatch(/^preset "broken\.toml": TOML syntax error: /);
  });

  it('unknown preset name lists the available presets (reference message)', () => {
    const e = errorOf(() => loadPreset('nope'));
    expect(e.message).toContain("Unknown preset 'nope'. Available presets: [");
    for (const n of listPresets()) expect(e.message).toContain(`'${n}'`);
    expect(e.message).toContain('Pass a file path ending in .toml for a custom config.');
  });

  it('a missing file path is reported', () => {
    const e = errorOf(() => loadPreset(join(tmp, 'absent.toml')));
    expect(e.message).toContain('config file not found');
  });

  it('a directory given as the config file is a PresetError saying so, from loadPreset and presetConfig', () => {
    // It was Node's "EISDIR: illegal operation on a directory, read" (`ycgym world --preset /etc`).
    for (const load of [loadPreset, presetConfig]) {
      const e = errorOf(() => load(tmp));
      expect(e).toBeInstanceOf(PresetError);
      expect(e.message).toContain(`${tmp} is a directory, not a TOML config file`);
    }
  });
});

describe('distribution specs', () => {
  it('every family parses into the DistSpec union, with beta defaults filled in', () => {
    const text = [
      'extends = "default"',
      '[world.dist.required_prestige]',
      'type = "uniform"',
      'low = 1',
      'high = 3',
      '[world.dist.reward_funds_cents]',
      'type = "triangular"',
      'low = 100',
      'high = 300',
      'mode = 200',
      '[world.dist.domain_count]',
      'type = "constant"',
      'value = 2',
      '[world.dist.skill_boost]',
      'type = "normal"',
      'mean = 0.1',
      'stdev = 0.02',
      'low = 0.0',
      'high = 0.2',
      '[world.dist.required_trust]',
      'type = "beta"',
      'alpha = 2.0',
      'beta = 5.0',
      '',
    ].join('\n');
    const d = loadPresetFromText(text, 'dists.toml', builtinText).world.dist;
    expect(d.required_prestige).toEqual({ type: 'uniform', low: 1, high: 3 });
    expect(d.reward_funds_cents).toEqual({ type: 'triangular', low: 100, high: 300, mode: 200 });
    expect(d.domain_count).toEqual({ type: 'constant', value: 2 });
    expect(d.skill_boost).toEqual({ type: 'normal', mean: 0.1, stdev: 0.02, low: 0.0, high: 0.2 });
    expect(d.required_trust).toEqual({ type: 'beta', alpha: 2.0, beta: 5.0, scale: 1.0, low: 0.0, high: 1.0 });

    // The union narrows on `type`.
    const describeSpec = (s: DistSpec): string => {
      switch (s.type) {
        case 'triangular':
          return `tri ${s.low}..${s.high}@${s.mode}`;
        case 'beta':
          return `beta ${s.alpha},${s.beta}x${s.scale}`;
        case 'normal':
          return `normal ${s.mean}±${s.stdev}`;
        case 'uniform':
          return `uni ${s.low}..${s.high}`;
        case 'constant':
          return `const ${s.value}`;
      }
    };
    expect(Object.values(d).map(describeSpec).sort()).toEqual(
      ['beta 2,5x1', 'const 2', 'normal 0.1±0.02', 'tri 100..300@200', 'tri 400..1500@800', 'uni 1..3', 'beta 1.2,2.8x0.35'].sort(),
    );
  });

  it('switching a family under extends inherits only the parameters the new family has (reference semantics)', () => {
    // Python: ExperimentConfig.model_validate(_deep_merge(_read_preset("default"), user)).world.dist
    //   -> required_prestige: type='beta' alpha=2.0 beta=5.0 scale=1.0 low=1.0 high=5.0
    //   -> reward_funds_cents: type='constant' value=1000.0
    const cfg = loadPresetFromText(
      'extends = "default"\n[world.dist.required_prestige]\ntype = "beta"\nalpha = 2.0\nbeta = 5.0\n' +
        '[world.dist.reward_funds_cents]\ntype = "constant"\nvalue = 1000\n',
      'switch.toml',
      builtinText,
    );
    expect(cfg.world.dist.required_prestige).toEqual({ type: 'beta', low: 1, high: 5, alpha: 2.0, beta: 5.0, scale: 1.0 });
    expect(cfg.world.dist.reward_funds_cents).toEqual({ type: 'constant', value: 1000 });
    // The user's own keys are still checked strictly.
    const e = errorOf(() =>
      loadPresetFromText(
        'extends = "default"\n[world.dist.required_prestige]\ntype = "uniform"\nlow = 1\nhihg = 3\n',
        'typo.toml',
        builtinText,
      ),
    );
    expect(e.issues).toEqual(['/world/dist/required_prestige/hihg: unknown key']);
  });

  it('DIST_FIELDS agrees with the schema', () => {
    const schema = JSON.parse(readFileSync(schemaPath(), 'utf8')) as {
      $defs: Record<string, { properties?: Record<string, { const?: string }> }>;
    };
    const fromSchema: Record<string, string[]> = {};
    for (const def of Object.values(schema.$defs)) {
      const tag = def.properties?.['type']?.const;
      if (tag !== undefined && def.properties !== undefined) fromSchema[tag] = Object.keys(def.properties);
    }
    expect(fromSchema).toEqual(DIST_FIELDS);
  });

  it('top-level tables left out get the reference defaults', () => {
    const cfg = configFromRaw({ world: defaultWorldWith({}) }, 'bare');
    expect(cfg.name).toBe('default');
    expect(cfg.description).toBe('');
    expect(cfg.agent).toEqual({
      model: 'openrouter/z-ai/glm-5',
      temperature: 0.0,
      top_p: 1.0,
      request_timeout_seconds: 300.0,
      retry_max_attempts: 3,
      retry_backoff_seconds: 1.0,
      history_keep_rounds: 20,
      system_prompt: null,
    });
    expect(cfg.loop).toEqual({ auto_advance_after_turns: 10, max_turns: null });
    expect(cfg.sim).toEqual({ start_date: '2025-01-01', horizon_years: 3, company_name: 'BenchCo' });
    expect(Object.values(cfg.fixes).every((v) => v === false)).toBe(true);
    const e = errorOf(() => configFromRaw({ extends: 'default', world: defaultWorldWith({}) }, 'raw'));
    expect(e.message).toContain('/extends: not resolved here');
  });

  it('a file with no [world.dist] gets every WorldDists default', () => {
    const world = defaultWorldWith({});
    delete world['dist'];
    const d = configFromRaw({ world }, 'nodist').world.dist;
    expect(d).toEqual({
      required_prestige: { type: 'triangular', low: 1, high: 10, mode: 1 },
      reward_funds_cents: { type: 'triangular', low: 300_000, high: 4_000_000, mode: 1_400_000 },
      domain_count: { type: 'triangular', low: 1, high: 3, mode: 1 },
      required_qty: { type: 'triangular', low: 200, high: 3000, mode: 800 },
      reward_prestige_delta: { type: 'beta', alpha: 1.2, beta: 2.8, scale: 0.35, low: 0.0, high: 0.35 },
      required_trust: { type: 'triangular', low: 1, high: 5, mode: 2 },
      skill_boost: { type: 'normal', mean: 0.12, stdev: 0.06, low: 0.01, high: 0.4 },
    });
  });
});

describe('formatFixedPy', () => {
  it('matches Python format(x, ".6f"), including round-half-even on exact ties', () => {
    expect(formatFixedPy(0.5 + 0.35 + 0.1, 6)).toBe('0.950000'); // f"{0.5+0.35+0.1:.6f}"
    expect(formatFixedPy(1.0078125, 6)).toBe('1.007812'); // f"{1.0078125:.6f}"; toFixed gives 1.007813
    expect(formatFixedPy(-0.0, 6)).toBe('-0.000000'); // f"{-0.0:.6f}"
    expect(formatFixedPy(2.5, 0)).toBe('2'); // f"{2.5:.0f}"
    expect(formatFixedPy(1e22, 2)).toBe('10000000000000000000000.00'); // f"{1e22:.2f}"
  });
});

describe('size maxima (issue 12, F2): a preset or a snapshot config cannot ask for gigabytes', () => {
  // Each maximum, the largest value among the reference's presets (collinear-ai/yc-bench) and how to set it.
  const maxima: [string, number, number, (raw: Record<string, any>, v: number) => void][] = [
    ['/world/num_employees', 1000, 10, (r, v) => (r.world.num_employees = v)],
    ['/world/num_market_tasks', 10000, 1000, (r, v) => (r.world.num_market_tasks = v)],
    ['/world/market_browse_default_limit', 10000, 50, (r, v) => (r.world.market_browse_default_limit = v)],
    ['/sim/horizon_years', 100, 3, (r, v) => (r.sim.horizon_years = v)],
    ['/world/task_progress_milestones', 100, 0, (r, v) => (r.world.task_progress_milestones = Array.from({ length: v }, (_, i) => i / (v + 1)))],
  ];
  const base = (): Record<string, any> => JSON.parse(JSON.stringify(loadPreset('default'))) as Record<string, any>;
  for (const [path, max, reference, set] of maxima) {
    it(`${path}: at most ${max}, far above every shipped preset and the reference (${reference})`, () => {
      for (const name of listPresets()) {
        const raw = JSON.parse(JSON.stringify(loadPreset(name))) as Record<string, any>;
        const [, table, key] = path.split('/') as [string, string, string];
        const v: unknown = raw[table][key];
        expect(Array.isArray(v) ? v.length : (v as number)).toBeLessThanOrEqual(max / 10);
      }
      expect(reference).toBeLessThanOrEqual(max / 10);
      const ok = base();
      set(ok, max);
      expect(() => configFromRaw(ok, 'test')).not.toThrow();
      const bad = base();
      set(bad, path.endsWith('milestones') ? max + 1 : 3_000_000);
      expect(() => configFromRaw(bad, 'test')).toThrow(new RegExp(path.replace(/\//g, '\\/')));
    });
  }
  it(`/world/num_clients: at most the ${CLIENT_NAME_POOL.length} client names world generation has (the reference's presets: 8)`, () => {
    // Above the pool, world generation fails (here and in the reference): refused when the config is read instead.
    const ok = base();
    ok.world.num_clients = CLIENT_NAME_POOL.length;
    const cfg = configFromRaw(ok, 'test');
    expect(Simulation.create(cfg, { seed: 1 }).state.clients).toHaveLength(CLIENT_NAME_POOL.length);
    for (const n of [CLIENT_NAME_POOL.length + 1, 1000, 3_000_000]) {
      const bad = base();
      bad.world.num_clients = n;
      expect(() => configFromRaw(bad, 'test')).toThrow(/\/world\/num_clients: must be <= 15/);
    }
  });
  it('texts: name, description, company name, model, system prompt and tier names are bounded', () => {
    for (const [set, path] of [
      [(r: Record<string, any>) => (r.name = 'x'.repeat(257)), '/name'],
      [(r: Record<string, any>) => (r.description = 'x'.repeat(65537)), '/description'],
      [(r: Record<string, any>) => (r.sim.company_name = 'x'.repeat(1025)), '/sim/company_name'],
      [(r: Record<string, any>) => (r.agent.model = 'x'.repeat(1025)), '/agent/model'],
      [(r: Record<string, any>) => (r.agent.system_prompt = 'x'.repeat(262145)), '/agent/system_prompt'],
      [(r: Record<string, any>) => (r.world.salary_junior.name = 'x'.repeat(257)), '/world/salary_junior/name'],
    ] as const) {
      const raw = base();
      set(raw);
      expect(() => configFromRaw(raw, 'test')).toThrow(path);
    }
  });
});
