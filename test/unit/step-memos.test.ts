/**
 * The small memos on the step path (issue 14, item 1) give what recomputing gives: `isoformat`'s last-two memo over
 * any sequence of instants, and the status block's client order after a client's name or the clients array changes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { statusOf } from '../../src/env/env.js';
import { isoformat } from '../../src/sim/model/calendar.js';
import { Simulation } from '../../src/sim/simulation.js';

describe('step-path memos', () => {
  it('isoformat: any sequence of instants formats like a fresh call', () => {
    const iso = (t: number) => new Date(t / 1000).toISOString().slice(0, 19); // whole seconds: no fraction printed
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 30 }), fc.array(fc.integer({ min: 0, max: 2e9 }).map((x) => x * 1_000_000), { minLength: 5, maxLength: 5 }), (picks, instants) => {
        for (const i of picks) expect(isoformat(instants[i] as number)).toBe(iso(instants[i] as number));
      }),
    );
  });

  it('statusOf: trust follows the clients sorted by their current names', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 1 });
    const names = () => Object.keys(statusOf(sim).trust);
    const sorted = sim.state.clients.map((c) => c.name).sort();
    expect(names()).toEqual(sorted);
    expect(names()).toEqual(sorted);
    const first = sim.state.clients[0] as { name: string };
    first.name = 'Zzz Last';
    expect(names()).toEqual(sim.state.clients.map((c) => c.name).sort());
    expect(names().at(-1)).toBe('Zzz Last');
    sim.state.clients.push({ ...(sim.state.clients[1] as (typeof sim.state.clients)[number]), id: 99, name: 'Aaa First' });
    expect(names()[0]).toBe('Aaa First');
    expect(names()).toEqual(sim.state.clients.map((c) => c.name).sort());
  });
});
