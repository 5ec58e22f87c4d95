/**
 * The kept status objects (`StatusObjects`: `trust` replaced by a copy with the changed values set again while the
 * clients and their names are the same) and the in-process status block built from them (`statusFrom`, what `Env.step`
 * returns) against the straightforward block (`statusOf`: prestige and trust built key by key from the clients sorted
 * by name), over random histories of commands, direct trust and name changes (duplicate names, `__proto__`,
 * integer-like names), replaced client arrays and restores: the same keys in the same order and the same values; `trust`
 * frozen and replaced exactly when a client, a name or a trust reference changed; each step's block objects its own.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Env, StatusObjects, statusFrom, statusOf, type Status } from '../../src/env/env.js';
import { Simulation } from '../../src/sim/index.js';
import { D } from '../../src/sim/py/decimal.js';
import { JsonWriter } from '../../src/server/json-writer.js';

type Client = Simulation['state']['clients'][number];
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Keys and values in order, values as `Object.is` sees them (-0 kept apart). */
function entries(o: Readonly<Record<string, number>>): [string, string][] {
  return Object.entries(o).map(([k, v]) => [k, Object.is(v, -0) ? '-0' : String(v)]);
}

function expectSameBlock(got: Status, want: Status, where: string): void {
  expect(JSON.stringify(got), where).toBe(JSON.stringify(want));
  expect(entries(got.trust), where).toEqual(entries(want.trust));
  expect(entries(got.prestige), where).toEqual(entries(want.prestige));
  expect(Object.keys(got), where).toEqual(Object.keys(want));
  expect(Object.isFrozen(got.trust) || Object.isFrozen(got.prestige), where).toBe(false);
  expect(Object.getPrototypeOf(got.trust), where).toBe(Object.prototype);
}

const NAMES = ['Aaa First', 'Zzz Last', '__proto__', '7', '12', 'caf\u00e9', 'Equinox Labs', 'Helix Systems', ''];

/** A change made to the simulation between steps (outside the commands), or a command. */
const event = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('sim resume', 'company status', 'task list', 'market browse') },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => `task accept --task-id Task-${n}`) },
  { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 8 })).map(([n, e]) => `task assign --task-id Task-${n} --employees Emp_${e}`) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => `task dispatch --task-id Task-${n}`) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('trust' as const), fc.nat(), fc.integer({ min: 0, max: 5000 })) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('same trust value' as const), fc.nat()) },
  { weight: 2, arbitrary: fc.tuple(fc.constant('rename' as const), fc.nat(), fc.constantFrom(...NAMES)) },
  { weight: 2, arbitrary: fc.tuple(fc.constant('duplicate name' as const), fc.nat(), fc.nat()) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('reorder' as const), fc.nat()) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('replace client' as const), fc.nat()) },
  { weight: 1, arbitrary: fc.constant('restore' as const) },
);

describe('kept status objects and the in-process status block', () => {
  it('equal the straightforward block over random histories; trust frozen, replaced exactly when a client, name or trust changed', () => {
    for (const preset of ['default', 'multi']) {
      const cfg = loadPreset(preset);
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 50 }), fc.array(event, { maxLength: 60 }), (seed, events) => {
          const env = new Env();
          const first = env.reset({ seed, preset: cfg, options: { stall_steps: 0 } });
          let sim = env.simulation as Simulation;
          expectSameBlock(first.observation.status, statusOf(sim), 'reset');
          // A StatusObjects of the test's own, to follow its identity.
          const objects = new StatusObjects();
          let kept = objects.update(sim.state).trust;
          const seen = (s: Simulation): unknown[] => [s.state.clients, ...s.state.clients.flatMap((c) => [c, c.name, c.trust])];
          let refs = seen(sim);
          let last: Status = first.observation.status;
          for (const [k, e] of events.entries()) {
            const s = sim.state as Mutable<Simulation['state']>;
            const clients = s.clients as Mutable<Client>[];
            let block: Status;
            if (e === 'restore') {
              let restored: typeof first | null = null;
              try {
                restored = env.restore(JSON.parse(JSON.stringify(env.snapshot())));
              } catch {
                // A state changed by hand (reordered clients, duplicate names) is refused as a snapshot: the env is unchanged.
              }
              sim = env.simulation as Simulation;
              block = restored !== null ? restored.observation.status : statusFrom(sim, env['statusMemo'].objects);
              expectSameBlock(block, statusOf(sim), `${k} restore`);
            } else if (typeof e === 'string' && k % 3 === 2) {
              // A wire step between in-process ones (the same kept objects serve both): its status block's bytes.
              const r = env.stepForWire(e);
              const w = new JsonWriter();
              w.value(r.observation.status);
              const written = w.written().toString('utf8');
              expect(written, `${k} ${e}`).toBe(JSON.stringify(statusOf(sim, (JSON.parse(written) as Status).events)));
              block = statusFrom(sim, env['statusMemo'].objects);
              expectSameBlock(block, statusOf(sim), `${k} ${e}`);
            } else if (typeof e === 'string') {
              const r = env.step(e);
              block = r.observation.status;
              // The events are the command's (not built from the status objects).
              const want = statusOf(sim, block.events);
              expectSameBlock(block, want, `${k} ${e}`);
              expect(block.trust).not.toBe(last.trust);
              expect(block.prestige).not.toBe(last.prestige);
            } else {
              const c = clients[e[1] % clients.length] as Mutable<Client>;
              if (e[0] === 'trust') c.trust = D(e[2]).div(1000);
              else if (e[0] === 'same trust value') c.trust = D(c.trust.toString());
              else if (e[0] === 'rename') c.name = e[2];
              else if (e[0] === 'duplicate name') c.name = (clients[e[2] % clients.length] as Client).name;
              else if (e[0] === 'reorder') s.clients = [...clients.slice(e[1] % clients.length), ...clients.slice(0, e[1] % clients.length)];
              else clients[e[1] % clients.length] = { ...c };
              block = statusFrom(sim, env['statusMemo'].objects);
              expectSameBlock(block, statusOf(sim), `${k} ${e[0]}`);
            }
            // Mutating a returned block changes nothing kept.
            block.trust['Aaa First'] = -1;
            block.prestige['research'] = -1;
            last = block;
            // The test's own StatusObjects: the straightforward trust, frozen, the same object exactly while nothing it reads changed.
            const o = objects.update(sim.state);
            expect(Object.isFrozen(o.trust)).toBe(true);
            expect(entries(o.trust)).toEqual(entries(statusOf(sim).trust));
            const now = seen(sim);
            const unchanged = now.length === refs.length && now.every((x, i) => x === refs[i]);
            if (unchanged) expect(o.trust).toBe(kept);
            else expect(o.trust).not.toBe(kept);
            kept = o.trust;
            refs = now;
          }
        }),
        { numRuns: 80 },
      );
    }
  });
});
