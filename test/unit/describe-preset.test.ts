/**
 * `describePreset` (the `hello` reply's per-preset facts, computed for every preset when a server starts) reads the
 * employees and clients without generating a market: it must describe exactly the worlds `Simulation.create` makes.
 */
import { describe, expect, it } from 'vitest';
import { describePreset } from '../../src/env/env.js';
import { listPresets, loadPreset } from '../../src/config/load.js';
import { clearWorldCache, Simulation } from '../../src/sim/index.js';

function fromWorld(name: string, seed: number): { clients: string[]; num_employees: number } {
  const sim = Simulation.create(loadPreset(name), { seed });
  return { clients: sim.state.clients.map((c) => c.name).sort(), num_employees: sim.state.employees.length };
}

describe('describePreset', () => {
  it.each(listPresets())('%s: the clients and employees of its created worlds', (name) => {
    clearWorldCache(); // described first, from a cold cache: nothing borrowed from a world created before
    const d = describePreset(name);
    for (const seed of [1, 7, 123456]) expect({ clients: d.clients, num_employees: d.num_employees }).toEqual(fromWorld(name, seed));
    const cfg = loadPreset(name);
    expect(d.prestige_max).toBe(cfg.world.prestige_max);
    expect(d.trust_max).toBe(cfg.world.trust_max);
  });

  it('refuses the counts Simulation.create refuses', () => {
    const cfg = loadPreset('default');
    expect(() => describePreset({ ...cfg, world: { ...cfg.world, num_employees: 0 } })).toThrow('employee_count must be positive');
    expect(() => describePreset({ ...cfg, world: { ...cfg.world, num_market_tasks: 0 } })).toThrow('market_task_count must be positive');
  });
});
