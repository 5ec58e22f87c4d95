/**
 * The unfiltered market listing (`browsable`), reused while the market, prestige and trust are unchanged, equals the
 * listing computed afresh after every command of played and random histories. `rewardMin: -Infinity` filters out
 * nothing and takes the uncached path: the oracle.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { browsable, Simulation, type Task } from '../../src/sim/index.js';
import { D } from '../../src/sim/py/decimal.js';

const ids = (ts: readonly { id: number }[]): number[] => ts.map((t) => t.id);

function expectCurrent(sim: Simulation, where: string): void {
  const cached = browsable(sim);
  expect(ids(cached), where).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
  expect(Object.isFrozen(cached)).toBe(true);
}

describe('browsable: the reused unfiltered listing', () => {
  it('equals a fresh listing at every step of played episodes (accepts, prestige gains, trust changes, failures)', () => {
    for (const policy of ['greedy', 'expert', 'prestige', 'random']) {
      for (const seed of [1, 3]) {
        const env = new Env();
        runEpisode(env, makePolicy(policy), { seed, options: { max_steps: 400, text: false } }, {
          onStep: ({ step }) => expectCurrent(env.simulation as Simulation, `${policy} seed ${seed} step ${step}`),
        });
      }
    }
  });

  it('is recomputed when prestige alone crosses a whole level, or a trust alone changes (the state changed in place)', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 2 });
    const before = ids(browsable(sim));
    const st = sim.state as { prestige: Record<string, unknown>; clients: { trust: unknown }[] };
    // Every domain to level 3: tasks gated at prestige 2-3 become visible, with no task or trust changed.
    for (const d of Object.keys(st.prestige)) st.prestige[d] = D(3);
    const after = ids(browsable(sim));
    expect(after).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
    expect(after.length).toBeGreaterThan(before.length);
    for (const c of st.clients) c.trust = D(5);
    expect(ids(browsable(sim))).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
  });

  it('is kept, the same array, when prestige and trust are replaced by values that decide nothing differently', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 2 });
    const before = browsable(sim);
    const st = sim.state as { prestige: Record<string, unknown>; clients: { trust: unknown }[] };
    // As daily decay does: every value replaced, prestige within its whole level, trust below every gate (2, 3, 4).
    for (const d of Object.keys(st.prestige)) st.prestige[d] = D('1.9');
    for (const c of st.clients) c.trust = D('1.5');
    expect(browsable(sim)).toBe(before);
    expect(ids(before)).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
  });

  it('is recomputed when one trust reaches, or falls just below, the gate of one of its tasks', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 2 });
    const st = sim.state as unknown as { tasks: Task[]; clients: { trust: unknown }[] };
    const gated = st.tasks.find((t) => t.status === 'market' && t.requiredTrust > 0 && t.requiredPrestige <= 1 && t.clientId !== null);
    expect(gated).toBeDefined();
    const { id, requiredTrust, clientId } = gated as Task;
    const client = st.clients[clientId as number] as { trust: unknown };
    const steps: [string, boolean][] = [[String(requiredTrust - 0.0001), false], [String(requiredTrust), true], [String(requiredTrust - 1e-9), false], [String(requiredTrust + 0.5), true]];
    for (const [trust, listed] of steps) {
      client.trust = D(trust);
      const now = ids(browsable(sim));
      expect(now, `trust ${trust}`).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
      expect(now.includes(id), `trust ${trust}`).toBe(listed);
    }
  });

  it('equals a fresh listing after any sequence of prestige and trust values (levels, gates and their edges) and accepts', () => {
    const cfg = loadPreset('default');
    const value = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 6 }).map((n) => n - 1e-9), fc.double({ min: 0, max: 6, noNaN: true }), fc.integer({ min: 0, max: 60000 }).map((n) => n / 10000));
    const change = fc.tuple(fc.constantFrom('prestige', 'trust', 'accept'), fc.integer({ min: 0, max: 15 }), value);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(change, { maxLength: 40 }), (seed, changes) => {
        const sim = Simulation.create(cfg, { seed });
        const st = sim.state as { prestige: Record<string, unknown>; clients: { trust: unknown }[] };
        const domains = Object.keys(st.prestige);
        expectCurrent(sim, 'start');
        for (const [kind, i, v] of changes) {
          if (kind === 'prestige') st.prestige[domains[i % domains.length] as string] = D(String(Math.max(1, v)));
          else if (kind === 'trust') (st.clients[i % st.clients.length] as { trust: unknown }).trust = D(String(v));
          else {
            // The i-th listed task (the listing is extended: one task leaves the market, its replacement is appended).
            const listed = browsable(sim);
            const t = listed[i % Math.max(1, listed.length)];
            if (t !== undefined) expect(sim.execute(`task accept --task-id ${sim.taskRef(t.id)}`).ok).toBe(true);
          }
          expectCurrent(sim, `${kind} ${i} = ${v}`);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('is extended, in listing order, after several accepts between two listings (replacements merged in whatever their rewards)', () => {
    const cfg = loadPreset('default');
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(fc.array(fc.nat(80), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 6 }), (seed, rounds) => {
        const sim = Simulation.create(cfg, { seed });
        for (const picks of rounds) {
          const listed = browsable(sim);
          // Accepted from the listing taken before the round: each appends its replacement; the listing is taken again after all.
          for (const i of picks) {
            const t = listed[i % Math.max(1, listed.length)];
            if (t !== undefined && t.status === 'market') expect(sim.execute(`task accept --task-id ${sim.taskRef(t.id)}`).ok).toBe(true);
          }
          expectCurrent(sim, `seed ${seed} accepts ${picks.join(',')}`);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('is extended after an accept without reading the status of the listed tasks (the accepted one is known)', () => {
    const sim = Simulation.create(loadPreset('default'), { seed: 5 });
    for (let k = 0; k < 3; k++) {
      const listed = browsable(sim);
      let reads = 0;
      for (const t of listed) {
        let v = t.status;
        Object.defineProperty(t, 'status', { get: () => (reads++, v), set: (x) => void (v = x), enumerable: true, configurable: true });
      }
      const accept = listed[2 * k] as Task;
      expect(sim.execute(`task accept --task-id ${sim.taskRef(accept.id)}`).ok).toBe(true);
      reads = 0;
      const after = browsable(sim);
      expect(reads, `accept ${k}`).toBe(0);
      expect(after.includes(accept)).toBe(false);
      expect(ids(after)).toEqual(ids(browsable(sim, { rewardMin: -Infinity })));
    }
  });

  it('equals a fresh listing after any random command history, snapshots and restores included', () => {
    const cfg = loadPreset('default');
    const command = fc.oneof(
      fc.constant('market browse'),
      fc.constant('sim resume'),
      fc.integer({ min: 1, max: 60 }).map((n) => `task accept --task-id Task-${n}`),
      fc.tuple(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 8 })).map(([n, e]) => `task assign --task-id Task-${n} --employees Emp_${e}`),
      fc.integer({ min: 1, max: 60 }).map((n) => `task dispatch --task-id Task-${n}`),
      fc.integer({ min: 1, max: 60 }).map((n) => `task cancel --task-id Task-${n}`),
      fc.constant('restore'),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(command, { maxLength: 60 }), (seed, cmds) => {
        let sim = Simulation.create(cfg, { seed });
        expectCurrent(sim, 'start');
        for (const c of cmds) {
          if (c === 'restore') sim = Simulation.restore(sim.snapshot());
          else sim.execute(c);
          expectCurrent(sim, c);
        }
      }),
      { numRuns: 60 },
    );
  });
});
