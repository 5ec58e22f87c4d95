/**
 * A simulation's task ids by title (the world market's index, shared by the simulations created from the world, and
 * the tasks added since) equal the ids of the tasks holding each title, in id order, after any history: accepts whose
 * replacements take titles of market tasks (`Task-${slot * 1000 + generation}`), several simulations of one world,
 * snapshots and restores. Titles resolve as the reference's `_resolve_task` does on those ids.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Simulation } from '../../src/sim/index.js';
import type { TitleLookup } from '../../src/sim/commands/handlers.js';

const cfg = loadPreset('default');

function titles(sim: Simulation): TitleLookup {
  return (sim as unknown as { byTitle: TitleLookup }).byTitle;
}

function expectIndexed(sim: Simulation, where: string): void {
  const oracle = new Map<string, number[]>();
  for (const t of sim.state.tasks) oracle.set(t.title, [...(oracle.get(t.title) ?? []), t.id]);
  for (const [title, ids] of oracle) expect(titles(sim).get(title), `${where}: ${title}`).toEqual(ids);
  expect(titles(sim).get('Task-999999'), where).toBeUndefined();
  expect(titles(sim).get(''), where).toBeUndefined();
}

describe('task ids by title', () => {
  it('accepting Task-1 then its replacement Task-0 lists a second Task-1 after the first (market index and added tasks)', () => {
    const a = Simulation.create(cfg, { seed: 3 });
    const b = Simulation.create(cfg, { seed: 3 }); // the same world: the market index is shared
    expect(a.execute('task accept --task-id Task-1').ok).toBe(true);
    expect(a.execute('task accept --task-id Task-0').ok).toBe(true); // slot 0, generation 1: its replacement is Task-1
    const ids = titles(a).get('Task-1') as readonly number[];
    expect(ids).toEqual([0, a.state.tasks.length - 1]);
    expect(titles(b).get('Task-1')).toEqual([0]); // the other simulation's index did not change
    // The market task of that title is preferred to the planned one (market < planned < active).
    expect(a.execute('task inspect --task-id Task-1').value).toMatchObject({ status: 'market' });
    expectIndexed(a, 'a');
    expectIndexed(b, 'b');
  });

  it('equals the ids of each title after random histories on two simulations of one world, with restores', () => {
    const command = fc.oneof(
      fc.integer({ min: 0, max: 12 }).map((n) => `task accept --task-id Task-${n}`),
      fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 1, max: 8 })).map(([n, e]) => `task assign --task-id Task-${n} --employees Emp_${e}`),
      fc.integer({ min: 0, max: 12 }).map((n) => `task dispatch --task-id Task-${n}`),
      fc.constant('sim resume'),
      fc.constant('restore'),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 1 }), command), { maxLength: 50 }), (seed, cmds) => {
        const sims = [Simulation.create(cfg, { seed }), Simulation.create(cfg, { seed })];
        for (const [k, c] of cmds) {
          if (c === 'restore') sims[k] = Simulation.restore(JSON.parse(JSON.stringify((sims[k] as Simulation).snapshot())));
          else (sims[k] as Simulation).execute(c);
          expectIndexed(sims[k] as Simulation, `${k}: ${c}`);
        }
        sims.forEach((s, k) => expectIndexed(s, `end ${k}`));
      }),
      { numRuns: 80 },
    );
  });
});
