/**
 * The value path's lookups against plain oracles written from the reference's definitions:
 * - `browsable` (both its paths) equals filtering the sorted market with `pm[domain]` and `toFloat(trust)` per task;
 * - `effectiveRates` (a reused count array) equals the Map-counted rates, over random task sets sharing employees, in
 *   sequence (nothing left over from an earlier call) and with ids the array does not take;
 * - `task assign` (names memoised per text, employees indexed by name) gives the same replies and state as a fresh
 *   simulation that saw no earlier text;
 * - the world cache keeps an entry used within half its capacity of later insertions (its approximate LRU).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { effectiveRates } from '../../src/sim/model/engine.js';
import { repeatsUnassigned, repeatsUnassignedLong, sortedNames } from '../../src/sim/commands/handlers.js';
import { worldTemplate } from '../../src/sim/model/world-cache.js';
import type { Domain, Task } from '../../src/sim/model/types.js';
import { browsable, clearWorldCache, DOMAINS, Simulation } from '../../src/sim/index.js';
import { D, DZERO, dcmp, toFloat, type Dec } from '../../src/sim/py/decimal.js';

const cfg = loadPreset('default');

function oracleListing(sim: Simulation, filter: { domain?: Domain; rewardMin?: number } = {}): number[] {
  const st = sim.state;
  const pm = {} as Record<Domain, number>;
  for (const d of DOMAINS) pm[d] = Math.trunc(toFloat(st.prestige[d]));
  return st.tasks
    .filter((t) => t.status === 'market')
    .sort((a, b) => b.rewardCents - a.rewardCents || a.id - b.id)
    .filter((t) => t.reqs.every((r) => pm[r.domain] >= t.requiredPrestige))
    .filter((t) => filter.rewardMin === undefined || t.rewardCents >= filter.rewardMin)
    .filter((t) => filter.domain === undefined || t.reqs.some((r) => r.domain === filter.domain))
    .filter((t) => {
      if (!(t.requiredTrust > 0 && t.clientId !== null)) return true;
      const c = st.clients[t.clientId];
      return (c ? toFloat(c.trust) : 0.0) >= t.requiredTrust;
    })
    .map((t) => t.id);
}

describe('browsable against the plain definition', () => {
  it('at every step of played episodes, unfiltered and filtered, and with random prestige and trust', () => {
    for (const policy of ['greedy', 'expert', 'prestige', 'random']) {
      const env = new Env();
      runEpisode(env, makePolicy(policy), { seed: 4, options: { max_steps: 300, text: false } }, {
        onStep: ({ step }) => {
          const sim = env.simulation as Simulation;
          expect(browsable(sim).map((t) => t.id), `${policy} ${step}`).toEqual(oracleListing(sim));
          expect(browsable(sim, { domain: 'training' }).map((t) => t.id)).toEqual(oracleListing(sim, { domain: 'training' }));
        },
      });
    }
    const sim = Simulation.create(cfg, { seed: 7 });
    const st = sim.state as unknown as { prestige: Record<Domain, Dec>; clients: { trust: Dec }[] };
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1000, max: 10_000 }), { minLength: 4, maxLength: 4 }), fc.array(fc.integer({ min: 0, max: 6000 }), { minLength: 6, maxLength: 6 }), (p, tr) => {
        DOMAINS.forEach((d, i) => (st.prestige[d] = D((p[i] as number) / 1000)));
        st.clients.forEach((c, i) => (c.trust = D((tr[i % tr.length] as number) / 1000)));
        expect(browsable(sim).map((t) => t.id)).toEqual(oracleListing(sim));
        expect(browsable(sim, { rewardMin: 1 }).map((t) => t.id)).toEqual(oracleListing(sim, { rewardMin: 1 }));
      }),
      { numRuns: 200, seed: 14 },
    );
  });
});

/** The rates as the reference computes them: counts in a Map, each requirement's contributions sorted, the top 4 summed. */
function oracleRates(employees: readonly { rates: Record<Domain, Dec> }[], active: readonly Task[]): Map<number, Map<Domain, Dec>> {
  const counts = new Map<number, number>();
  for (const t of active) for (const a of t.assignments) counts.set(a.employeeId, (counts.get(a.employeeId) ?? 0) + 1);
  const out = new Map<number, Map<Domain, Dec>>();
  for (const t of active) {
    const m = new Map<Domain, Dec>();
    for (const r of t.reqs) {
      const cs = t.assignments.map((a) => {
        const k = counts.get(a.employeeId) ?? 0;
        const base = employees[a.employeeId]?.rates[r.domain] ?? DZERO;
        return k === 1 ? base : base.div(k);
      });
      cs.sort((x, y) => dcmp(y, x));
      m.set(r.domain, cs.slice(0, 4).reduce((s, x) => s.add(x), DZERO));
    }
    out.set(t.id, m);
  }
  return out;
}

const plain = (m: Map<number, Map<Domain, Dec>>): [number, [Domain, string][]][] => [...m].map(([id, r]) => [id, [...r].map(([d, v]) => [d, v.toString()])]);

function activeTask(id: number, domains: readonly Domain[], emps: readonly number[]): Task {
  return {
    id, title: `T${id}`, clientId: null, status: 'active', requiredPrestige: 1, rewardCents: 0, rewardPrestigeDelta: D('0.1'),
    skillBoostPct: D('0.1'), acceptedAt: 0, deadline: null, completedAt: null, success: null, milestonePct: 0, requiredTrust: 0,
    advertisedRewardCents: null, marketSlot: 0, owned: true,
    reqs: domains.map((domain) => ({ domain, required: D(1000), completed: DZERO })),
    assignments: emps.map((employeeId) => ({ employeeId, assignedAt: 0 })),
  };
}

describe('effectiveRates against Map-counted rates', () => {
  it('random task sets sharing employees, called in sequence, and ids beyond the count array', () => {
    const sim = Simulation.create(cfg, { seed: 3 });
    const emps = sim.state.employees;
    const taskArb = fc.record({
      domains: fc.uniqueArray(fc.constantFrom(...DOMAINS), { minLength: 1, maxLength: 4 }),
      emps: fc.uniqueArray(fc.integer({ min: 0, max: emps.length - 1 }), { maxLength: emps.length }),
    });
    fc.assert(
      fc.property(fc.array(taskArb, { maxLength: 5 }), (specs) => {
        const active = specs.map((s, i) => activeTask(i, s.domains, s.emps));
        expect(plain(effectiveRates(sim.state, active))).toEqual(plain(oracleRates(emps, active)));
      }),
      { numRuns: 300, seed: 22 },
    );
    // Ids past the employees (no rates: zero) and far past any array: the Map's counts, the same rates.
    for (const ids of [[0, 70, 200], [1, 2 ** 40, 2 ** 40], [3, 3e6]]) {
      const active = [activeTask(0, ['research', 'training'], ids), activeTask(1, ['research'], [ids[0] as number, ids[1] as number])];
      expect(plain(effectiveRates(sim.state, active))).toEqual(plain(oracleRates(emps, active)));
    }
  });
});

describe('task assign: memoised names and the employee index', () => {
  it('each reply equals the reply of the same command after another text (a memo miss)', () => {
    const texts = ['Emp_1,Emp_2', "' Emp_3 , ,Emp_1,'", 'Emp_6,Emp_6', 'Emp_4,Nobody', 'Emp_5', 'Emp_5', 'Emp_1,Emp_2', "''", 'Emp_7,Emp_8,Emp_6'];
    const cmds = texts.map((t, i) => `task assign --task-id Task-${8 + (i % 2)} --employees ${t}`);
    const run = (list: string[]): { replies: unknown[]; assigned: number[][] } => {
      const sim = Simulation.create(cfg, { seed: 1 });
      sim.execute('task accept --task-id Task-8');
      sim.execute('task accept --task-id Task-9');
      const replies = list.map((c) => {
        const r = sim.execute(c);
        return [r.exit, r.value];
      });
      return { replies, assigned: sim.state.tasks.filter((t) => t.owned).map((t) => t.assignments.map((a) => a.employeeId)) };
    };
    const together = run(cmds);
    for (let i = 0; i < cmds.length; i++) {
      // The same earlier commands, then a failing assign of another text (no state change), then command i.
      const r = run([...cmds.slice(0, i), 'task assign --task-id Task-8 --employees Ghost', cmds[i] as string]);
      expect(r.replies.at(-1), cmds[i]).toEqual(together.replies[i]);
    }
    // Worked by hand: Task-8 gets Emp_1, Emp_2, Emp_5, then Emp_7, Emp_8, Emp_6; Task-9 gets Emp_3, Emp_1, Emp_5.
    expect(together.assigned).toEqual([
      [0, 1, 4, 6, 7, 5],
      [2, 0, 4],
    ]);
    expect(JSON.stringify(together.replies[2])).toContain('UNIQUE constraint failed'); // Emp_6 twice: the reference's IntegrityError
    expect(JSON.stringify(together.replies[3])).toContain("Employee 'Nobody' not found.");
  });
});

/** The names of a task's assignees, sorted as the reference's `sorted()` of them (the reply's field, by definition). */
function oracleAssigned(sim: Simulation, title: string): string[] {
  const t = sim.state.tasks.find((x) => x.title === title) as Task;
  return t.assignments.map((a) => sim.state.employees[a.employeeId]?.name ?? 'unknown').sort();
}

describe('task assign / task dispatch: the sorted assignee names (an employee order kept per employee list)', () => {
  const multi = loadPreset('multi'); // 12 employees: Emp_10 .. Emp_12 sort between Emp_1 and Emp_2
  const assignArb = fc.tuple(fc.integer({ min: 1, max: 10 }), fc.uniqueArray(fc.integer({ min: 0, max: multi.world.num_employees - 1 }), { minLength: 1, maxLength: 6 }));
  // Tasks 1-10: most of them visible at the start, so accepts, assigns and dispatches meet.
  const step = fc.oneof(
    fc.integer({ min: 1, max: 10 }).map((n) => ({ kind: 'accept' as const, n })),
    assignArb.map(([n, es]) => ({ kind: 'assign' as const, n, es })),
    fc.integer({ min: 1, max: 10 }).map((n) => ({ kind: 'dispatch' as const, n })),
    fc.constant({ kind: 'resume' as const }),
    fc.constant({ kind: 'restore' as const }),
    fc.constant({ kind: 'rename' as const }),
  );
  // Renamed through a snapshot (what a restored, edited snapshot may hold): non-ASCII, astral and differently ordered.
  const renamed = ['Zoë', 'émile', 'Émile', '\u{1D518}x', 'ﬀ', 'Emp_10', 'a', 'A', 'Emp_2', 'Émilf', 'zz', 'Z'];

  it('equals the sorted names after played episodes, random histories, snapshots, restores and renames', () => {
    // A played episode first: every owned task's assignees, replied by a no-op assign of one of them.
    const env = new Env();
    runEpisode(env, makePolicy('greedy'), { seed: 5, preset: 'multi', options: { max_steps: 300, text: false } });
    const played = env.simulation as Simulation;
    let checked = 0;
    for (const t of played.state.tasks) {
      if (!t.owned || (t.status !== 'planned' && t.status !== 'active') || t.assignments.length === 0) continue;
      const who = played.state.employees[(t.assignments[0] as { employeeId: number }).employeeId]?.name as string;
      const r = played.execute(`task assign --task-id ${played.taskRef(t.id)} --employees ${who}`);
      expect((r.value as { total_assigned: string[] }).total_assigned).toEqual(oracleAssigned(played, t.title));
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
    let replies = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 30 }), fc.array(step, { minLength: 5, maxLength: 40 }), (seed, steps) => {
        let sim = Simulation.create(multi, { seed });
        for (let n = 1; n <= 10; n += 2) sim.execute(`task accept --task-id Task-${n}`); // owned tasks to assign from the start
        for (const s of steps) {
          if (s.kind === 'restore') sim = Simulation.restore(JSON.parse(JSON.stringify(sim.snapshot())));
          else if (s.kind === 'rename') {
            const snap = sim.snapshot();
            snap.state.employees = snap.state.employees.map((e, i) => ({ ...e, name: renamed[i % renamed.length] as string }));
            sim = Simulation.restore(snap);
          } else if (s.kind === 'resume') sim.execute('sim resume');
          else if (s.kind === 'accept') sim.execute(`task accept --task-id Task-${s.n}`);
          else {
            const title = `Task-${s.n}`;
            const names = s.kind === 'assign' ? s.es.map((e) => sim.state.employees[e]?.name as string) : [];
            const r = sim.execute(s.kind === 'assign' ? `task assign --task-id ${title} --employees ${names.join(',')}` : `task dispatch --task-id ${title}`);
            if (r.exit !== 0) continue;
            const v = r.value as { total_assigned?: string[]; assigned_employees?: string[] };
            expect(v.total_assigned ?? v.assigned_employees).toEqual(oracleAssigned(sim, title));
            replies++;
          }
        }
      }),
      { numRuns: 150, seed: 31 },
    );
    expect(replies).toBeGreaterThan(100);
  });
});

describe('sortedNames: the last sort reused for the same names', () => {
  it('equals the plain sort of the names read now, a new array each call, across simulations with other names at the same ids', () => {
    const sims = [Simulation.create(cfg, { seed: 1 }), Simulation.create(cfg, { seed: 1 })];
    // The second company's employees renamed (as a restored, edited snapshot may hold): same ids, other names.
    const names = ['b', 'A', 'a', 'Zoë', '\u{1D518}', 'ﬀ', 'Emp_10', 'Emp_2', 'é', 'e'];
    const snap = (sims[1] as Simulation).snapshot();
    snap.state.employees = snap.state.employees.map((e, i) => ({ ...e, name: names[i % names.length] as string }));
    sims[1] = Simulation.restore(snap);
    const ids = fc.array(fc.integer({ min: 0, max: cfg.world.num_employees + 1 }), { maxLength: 8 }); // past the end: 'unknown'
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 1 }), ids), { minLength: 1, maxLength: 12 }), (calls) => {
        let last: string[] | null = null;
        for (const [k, es] of calls) {
          const sim = sims[k] as Simulation;
          const task = { assignments: es.map((employeeId) => ({ employeeId, assignedAt: 0 })) } as unknown as Task;
          const got = sortedNames({ state: sim.state, cfg: sim.cfg }, task);
          expect(got).toEqual(es.map((e) => sim.state.employees[e]?.name ?? 'unknown').sort());
          expect(got).not.toBe(last);
          got.reverse(); // the caller's array: changing it changes no later result
          last = got;
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('task assign: an unassigned employee named twice (the IntegrityError), pairwise and by a Set', () => {
  it('both equal the reference loop (a Set of the ids added, skipping the assigned) over random staffings', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    const employees = sim.state.employees;
    const oracle = (t: Task, emps: readonly (typeof employees)[number][]): boolean => {
      const added = new Set<number>();
      for (const e of emps) {
        if (t.assignments.some((a) => a.employeeId === e.id)) continue;
        if (added.has(e.id)) return true;
        added.add(e.id);
      }
      return false;
    };
    const idx = fc.integer({ min: 0, max: employees.length - 1 });
    fc.assert(
      fc.property(fc.array(idx, { maxLength: 6 }), fc.array(idx, { maxLength: 24 }), (assigned, named) => {
        const t = { assignments: assigned.map((employeeId) => ({ employeeId, assignedAt: 0 })) } as unknown as Task;
        const emps = named.map((i) => employees[i] as (typeof employees)[number]);
        const want = oracle(t, emps);
        expect(repeatsUnassigned(t, emps)).toBe(want);
        expect(repeatsUnassignedLong(t, emps)).toBe(want);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('world cache: approximate LRU', () => {
  it('an entry used within half the capacity of later insertions is kept; untouched entries are dropped in order', () => {
    clearWorldCache();
    const w = cfg.world;
    // A world is retained from its second request on (test/unit/world-cache-admission.test.ts): each is asked for twice.
    const twice = (s: number) => (worldTemplate(s, w), worldTemplate(s, w));
    const first = twice(1);
    const second = twice(2);
    for (let s = 3; s <= 256; s++) twice(s); // full (256 worlds)
    expect(worldTemplate(1, w)).toBe(first); // a hit; moved to the newest end
    for (let s = 1000; s < 1000 + 255; s++) twice(s); // 255 insertions evict 255 of the others
    expect(worldTemplate(1, w)).toBe(first);
    expect(worldTemplate(2, w)).not.toBe(second); // untouched since seeds 1-256: evicted and generated again
    clearWorldCache();
  });
});
