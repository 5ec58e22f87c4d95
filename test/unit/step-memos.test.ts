/**
 * The small memos on the step path (issue 14, item 1) give what recomputing gives: `isoformat`'s last-two memo over
 * any sequence of instants, the status block's client order after a client's name or the clients array changes, and
 * `company status`'s last result (reused while it prints the same) along an episode.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { isoformat } from '../../src/sim/model/calendar.js';
import { Simulation } from '../../src/sim/simulation.js';
import { sameCompanyStatus } from '../../src/sim/commands/handlers.js';
import type { CompanyStatusResult } from '../../src/sim/commands/results.js';
import { Env, statusOf } from '../../src/env/env.js';
import { JsonWriter } from '../../src/server/json-writer.js';

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

  it('company status: a repeat is the last result itself, frozen, while it prints the same; any change gives a fresh one', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 3 });
    const a = sim.execute('company status');
    const b = sim.execute('company status');
    expect(b.value).toBe(a.value);
    expect(Object.isFrozen(b.value)).toBe(true);
    expect(b.text).toBe(a.text);
    const best = (sim.execute('market browse --limit 1').value as { tasks: { task_id: string }[] }).tasks[0] as { task_id: string };
    expect(sim.execute(`task accept --task-id ${best.task_id}`).ok).toBe(true);
    const c = sim.execute('company status');
    expect(c.value).not.toBe(a.value);
    expect(c.text).not.toBe(a.text);
  });

  it('company status: every field is compared (each leaf changed in turn, -0 against 0 for the floats)', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 3 });
    const r = sim.execute('company status').value as CompanyStatusResult;
    const leaves: string[][] = [];
    const walk = (v: unknown, path: string[]): void => {
      if (v !== null && typeof v === 'object') for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], [...path, k]);
      else leaves.push(path);
    };
    walk(r, []);
    expect(leaves.length).toBeGreaterThan(15);
    const changed = (path: string[], f: (x: unknown) => unknown): CompanyStatusResult => {
      const c = structuredClone(r) as unknown as Record<string, unknown>;
      let o = c;
      for (const k of path.slice(0, -1)) o = o[k] as Record<string, unknown>;
      const last = path.at(-1) as string;
      o[last] = f(o[last]);
      return c as unknown as CompanyStatusResult;
    };
    expect(sameCompanyStatus(r, structuredClone(r))).toBe(true);
    for (const path of leaves) {
      const other = changed(path, (x) => (typeof x === 'number' ? x + 1 : typeof x === 'string' ? `${x}x` : typeof x === 'boolean' ? !x : 0));
      expect(sameCompanyStatus(r, other), path.join('.')).toBe(false);
      expect(sameCompanyStatus(other, r), path.join('.')).toBe(false);
    }
    const zero = changed(['risk', 'months_runway'], () => 0);
    expect(sameCompanyStatus(zero, changed(['risk', 'months_runway'], () => -0))).toBe(false);
    const p0 = changed(['prestige', 'research'], () => 0);
    expect(sameCompanyStatus(p0, changed(['prestige', 'research'], () => -0))).toBe(false);
  });

  it('company status: along an episode, each text (plain, and escaped into a reply) is what a fresh simulation of that state prints', () => {
    const env = new Env();
    env.reset({ seed: 5, preset: 'default', options: { stall_steps: 0 } });
    const sim = env.simulation as Simulation;
    const names = (sim.execute('employee list').value as { employees: { name: string }[] }).employees.map((e) => e.name);
    let checked = 0;
    let changes = 0;
    let last = '';
    let over = false;
    const step = (a: string) => {
      const r = env.step(a);
      over ||= r.terminated || r.truncated;
      return r;
    };
    for (let i = 0; i < 300 && !over; i++) {
      const fresh = Simulation.restore(sim.snapshot()).execute('company status').text;
      for (let k = 0; k < 2 && !over; k++) {
        const w = new JsonWriter();
        const r = env.stepForWire('company status');
        w.value(r.observation.text);
        over ||= r.terminated || r.truncated;
        expect(JSON.parse(w.written().toString('utf8'))).toBe(fresh);
        if (!over) expect(step('company status').observation.text).toBe(fresh);
        checked++;
      }
      if (fresh !== last) changes++;
      last = fresh;
      if (over) break;
      const active = (sim.execute('task list --status active').value as { count: number }).count;
      const best = active > 0 ? undefined : (sim.execute('market browse --limit 5').value as { tasks: { task_id: string }[] }).tasks[0];
      if (best === undefined) {
        step('sim resume');
        continue;
      }
      for (const a of [`task accept --task-id ${best.task_id}`, `task assign --task-id ${best.task_id} --employees ${names.join(',')}`, `task dispatch --task-id ${best.task_id}`]) if (!over) step(a);
    }
    expect(checked).toBeGreaterThan(100);
    expect(changes).toBeGreaterThan(40);
  });
});
