/**
 * `Simulation.create` and `Simulation.restore` (exported by `ycgym/core`) take a config from in-process callers. They
 * took it as given: a config object changed in place after a first `create` ran the world cached for its old values
 * (the cache was keyed on the world object), and a malformed config (a count of the wrong type, a negative count, a
 * deadline rule past 2255-06-05) was not refused with the loader's errors (it ran, or failed deep inside with a plain
 * Error). Both now go through the loader's one validator (`presetConfig`), and the world cache is keyed on the
 * validated config's content.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset, PresetError, Simulation } from '../../src/core.js';
import type { ExperimentConfig } from '../../src/core.js';
import { worldClients, worldTemplate } from '../../src/sim/model/world-cache.js';

function presetError(f: () => unknown): PresetError {
  try {
    f();
  } catch (e) {
    if (e instanceof PresetError) return e;
    throw new Error(`expected a PresetError, got ${String(e)}`);
  }
  throw new Error('expected a PresetError, nothing was thrown');
}

/** The default preset with world fields replaced (a fresh object). */
function withWorld(world: Record<string, unknown>): ExperimentConfig {
  const cfg = loadPreset('default');
  Object.assign(cfg.world, world);
  return cfg;
}

describe('Simulation.create validates its config', () => {
  it('a config changed in place after a first create runs its new values (not the world cached for the old ones)', () => {
    const cfg = loadPreset('default');
    const before = Simulation.create(cfg, { seed: 7 });
    expect(before.state.employees.length).toBe(cfg.world.num_employees);
    cfg.world.num_employees = 3;
    cfg.world.num_market_tasks = 5;
    const after = Simulation.create(cfg, { seed: 7 });
    const fresh = Simulation.create(withWorld({ num_employees: 3, num_market_tasks: 5 }), { seed: 7 });
    expect(after.state.employees.length).toBe(3);
    expect(after.state.tasks.length).toBe(5);
    expect(JSON.stringify(after.snapshot())).toBe(JSON.stringify(fresh.snapshot()));
    // The first simulation is untouched, and runs on the config as it was.
    expect(before.cfg.world.num_employees).not.toBe(3);
  });

  it('a config changed in place between two creates of a client field runs the new clients', () => {
    const cfg = loadPreset('default');
    const a = Simulation.create(cfg, { seed: 1 });
    cfg.world.num_clients = 2;
    const b = Simulation.create(cfg, { seed: 1 });
    expect(a.state.clients.length).not.toBe(2);
    expect(b.state.clients.length).toBe(2);
  });

  it('a malformed config is refused with the loader\'s PresetError, naming the field', () => {
    const wrongType = presetError(() => Simulation.create(withWorld({ num_employees: '5' }), { seed: 1 }));
    expect(wrongType.issues.join('\n')).toMatch(/\/world\/num_employees: must be integer/);
    const negative = presetError(() => Simulation.create(withWorld({ num_market_tasks: -1 }), { seed: 1 }));
    expect(negative.issues.join('\n')).toMatch(/\/world\/num_market_tasks: must be >= 1/);
    const unknownKey = presetError(() => Simulation.create(withWorld({ num_employes: 5 }), { seed: 1 }));
    expect(unknownKey.issues.join('\n')).toMatch(/\/world\/num_employes: unknown key/);
    const notObject = (): unknown => Simulation.create(null as unknown as ExperimentConfig, { seed: 1 });
    expect(notObject).toThrow(RangeError);
  });

  it('a config whose deadlines pass the last exact instant (2255-06-05) is refused by the loader\'s deadline rule', () => {
    const far = withWorld({ deadline_min_biz_days: 10_000, workday_start_hour: 0, workday_end_hour: 24 });
    const err = presetError(() => Simulation.create(far, { seed: 1 }));
    expect(err.issues.join('\n')).toMatch(/\/world\/deadline_qty_per_day: .*2255-06-05/);
  });

  it('the simulation keeps the validated config (derived fields recomputed), not the caller\'s object', () => {
    const cfg = loadPreset('default');
    const sim = Simulation.create(cfg, { seed: 3 });
    expect(sim.cfg).not.toBe(cfg);
    expect(sim.cfg).toEqual(cfg);
    expect(Object.isFrozen(sim.cfg.world)).toBe(true);
  });

  it('Simulation.restore validates the snapshot\'s config the same way', () => {
    const snap = Simulation.create(loadPreset('default'), { seed: 2 }).snapshot();
    const bad = structuredClone(snap);
    (bad.config.world as unknown as Record<string, unknown>)['num_employees'] = 'many';
    expect(presetError(() => Simulation.restore(bad)).issues.join('\n')).toMatch(/\/world\/num_employees: must be integer/);
    const round = JSON.parse(JSON.stringify(snap)) as typeof snap;
    expect(JSON.stringify(Simulation.restore(round).snapshot())).toBe(JSON.stringify(snap));
  });
});

describe('the world cache is keyed on a world config\'s content', () => {
  it('a world object changed in place between two calls gets the world of its new values (only frozen ones are remembered by identity)', () => {
    const w = structuredClone(loadPreset('default').world);
    const first = worldTemplate(11, w);
    expect(first.employees.length).toBe(w.num_employees);
    w.num_employees = 2;
    expect(worldTemplate(11, w).employees.length).toBe(2);
    w.num_clients = 1;
    expect(worldClients(w).length).toBe(1);
    // A frozen (validated) world is looked up by identity: the same template, without serialising it again.
    const frozen = Simulation.create(loadPreset('default'), { seed: 11 }).cfg.world;
    expect(worldTemplate(11, frozen)).toBe(worldTemplate(11, frozen));
  });
});
