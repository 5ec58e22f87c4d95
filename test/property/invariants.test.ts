import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Simulation } from '../../src/sim/simulation.js';
import { DOMAINS } from '../../src/sim/model/types.js';

const DEFAULT = loadPreset('default');
const CORRECTED = loadPreset('corrected');

const taskId = fc.oneof(
  fc.integer({ min: 1, max: 200 }).map((n) => `Task-${n}`),
  fc.constantFrom('Task-9000', 'Task-0', 'Task-1000', 'Task-99999', 'Task-R1', ''),
);
const emp = fc.oneof(fc.integer({ min: 1, max: 8 }).map((n) => `Emp_${n}`), fc.constant('Emp_404'));
const emps = fc.array(emp, { minLength: 1, maxLength: 9 }).map((a) => a.join(','));

/** Commands an agent might send: mostly well-formed, some malformed, some garbage. */
const command = fc.oneof(
  { weight: 6, arbitrary: fc.constant('sim resume') },
  { weight: 5, arbitrary: taskId.map((t) => `task accept --task-id ${t}`) },
  { weight: 5, arbitrary: fc.tuple(taskId, emps).map(([t, e]) => `task assign --task-id ${t} --employees ${e}`) },
  { weight: 5, arbitrary: taskId.map((t) => `task dispatch --task-id ${t}`) },
  { weight: 1, arbitrary: fc.tuple(taskId, fc.string()).map(([t, r]) => `task cancel --task-id ${t} --reason ${JSON.stringify(r)}`) },
  { weight: 2, arbitrary: fc.constantFrom('market browse', 'market browse --limit 5 --offset 3', 'market browse --domain research', 'market browse --reward-min-cents 900000') },
  { weight: 2, arbitrary: fc.constantFrom('company status', 'employee list', 'client list', 'client history', 'task list', 'task list --status active', 'finance ledger', 'report monthly') },
  { weight: 1, arbitrary: taskId.map((t) => `task inspect --task-id ${t}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((s) => `scratchpad append --content ${JSON.stringify(s)}`) },
  { weight: 1, arbitrary: fc.constantFrom('scratchpad read', 'scratchpad clear', 'task assign-all --task-id Task-1', 'sim init --seed 1 --start-date 01/01/2025 --company-name X') },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 1, arbitrary: fc.constantFrom('task accept', 'task accept --task-id', 'market browse --limit x', 'market browse --domain nope', 'yc-bench task list --bogus', 'task', 'sim resume extra', '"unclosed', "task accept --task-id 'Task-1") },
);

/** A well-formed accept → assign → dispatch → resume macro, so sequences make real progress through time. */
const macro = fc
  .tuple(fc.integer({ min: 1, max: 12 }), fc.subarray(['Emp_1', 'Emp_2', 'Emp_3', 'Emp_4', 'Emp_5', 'Emp_6', 'Emp_7', 'Emp_8'], { minLength: 1 }), fc.integer({ min: 1, max: 3 }))
  .map(([n, e, resumes]) => [`task accept --task-id Task-${n}`, `task assign --task-id Task-${n} --employees ${e.join(',')}`, `task dispatch --task-id Task-${n}`, ...Array<string>(resumes).fill('sim resume')]);
const script = fc.array(fc.oneof({ weight: 3, arbitrary: command.map((c) => [c]) }, { weight: 1, arbitrary: macro }), { minLength: 1, maxLength: 40 }).map((a) => a.flat());

/**
 * `report` (the expect that states the failure) runs only when `ok` is false: an expect call costs far more than the
 * comparison (vitest updates its state on each), and checkInvariants checks every task, client and employee after
 * every command. Each `ok` is exactly the condition its expect asserts.
 */
function must(ok: boolean, report: () => void): void {
  if (!ok) report();
}

function checkInvariants(sim: Simulation): void {
  const s = sim.state;
  const w = sim.cfg.world;
  const ledger = s.ledger.reduce((a, e) => a + e.amountCents, 0);
  must(Object.is(s.fundsCents, s.initialFundsCents + ledger), () => expect(s.fundsCents).toBe(s.initialFundsCents + ledger));
  must(Number.isSafeInteger(s.fundsCents), () => expect(Number.isSafeInteger(s.fundsCents)).toBe(true));
  for (const d of DOMAINS) {
    const p = s.prestige[d];
    must(p.gte(w.prestige_min) && p.lte(w.prestige_max), () => expect(p.gte(w.prestige_min) && p.lte(w.prestige_max)).toBe(true));
    must(p.decimalPlaces() <= 3, () => expect(p.decimalPlaces()).toBeLessThanOrEqual(3));
  }
  for (const c of s.clients) {
    must(c.trust.gte(0) && c.trust.lte(w.trust_max), () => expect(c.trust.gte(0) && c.trust.lte(w.trust_max)).toBe(true));
    must(c.trust.decimalPlaces() <= 3, () => expect(c.trust.decimalPlaces()).toBeLessThanOrEqual(3));
  }
  for (const e of s.employees) {
    must(e.salaryCents >= 0, () => expect(e.salaryCents).toBeGreaterThanOrEqual(0));
    for (const d of DOMAINS) {
      must(e.rates[d].gte(0), () => expect(e.rates[d].gte(0)).toBe(true));
      must(e.rates[d].decimalPlaces() <= 4, () => expect(e.rates[d].decimalPlaces()).toBeLessThanOrEqual(4));
    }
  }
  for (const t of s.tasks) {
    for (const r of t.reqs) {
      must(r.required.gte(0), () => expect(r.required.gte(0)).toBe(true));
      must(r.completed.gte(0) && r.completed.lte(r.required), () => expect(r.completed.gte(0) && r.completed.lte(r.required)).toBe(true));
      must(r.completed.decimalPlaces() <= 4, () => expect(r.completed.decimalPlaces()).toBeLessThanOrEqual(4));
    }
  }
  must(s.simTime <= s.horizonEnd, () => expect(s.simTime).toBeLessThanOrEqual(s.horizonEnd));
}

function play(cfg: typeof DEFAULT, seed: number, cmds: string[]) {
  const sim = Simulation.create(cfg, { seed });
  const out = cmds.map((c) => {
    const r = sim.execute(c);
    return `${r.exit}|${r.text}`;
  });
  return { sim, out };
}

describe('property: invariants under arbitrary command sequences', () => {
  for (const [name, cfg] of [['default', DEFAULT], ['corrected', CORRECTED]] as const) {
    it(`${name}: funds = initial + ledger, prestige/trust in range, no negative quantities, rejected commands change nothing`, () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 50 }), script, (seed, cmds) => {
          const sim = Simulation.create(cfg, { seed });
          for (const c of cmds) {
            const before = JSON.stringify(sim.snapshot());
            const r = sim.execute(c);
            expect([0, 1, 2]).toContain(r.exit);
            if (r.exit !== 0) {
              if (r.exit === 1) expect(Object.keys(JSON.parse(r.text) as object)).toEqual(['error']);
              expect(Object.keys(r.value as object)).toEqual(['error']);
              expect(JSON.stringify(sim.snapshot())).toBe(before);
            }
            checkInvariants(sim);
          }
        }),
        { numRuns: 40 },
      );
    });
  }
});

describe('property: determinism and snapshot/restore', () => {
  it('replaying the same sequence is byte-identical', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), script, (seed, cmds) => {
        const a = play(DEFAULT, seed, cmds);
        const b = play(DEFAULT, seed, cmds);
        expect(b.out).toEqual(a.out);
        expect(JSON.stringify(b.sim.snapshot())).toBe(JSON.stringify(a.sim.snapshot()));
      }),
      { numRuns: 30 },
    );
  });

  it('snapshot at any point, restored through JSON, continues identically', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), script.filter((c) => c.length >= 2), fc.nat(), (seed, cmds, cut) => {
        const k = cut % cmds.length;
        const sim = Simulation.create(DEFAULT, { seed });
        cmds.slice(0, k).forEach((c) => sim.execute(c));
        const copy = Simulation.restore(JSON.parse(JSON.stringify(sim.snapshot())));
        for (const c of cmds.slice(k)) {
          const x = sim.execute(c);
          const y = copy.execute(c);
          expect(y.exit).toBe(x.exit);
          expect(y.text).toBe(x.text);
        }
        expect(JSON.stringify(copy.snapshot())).toBe(JSON.stringify(sim.snapshot()));
      }),
      { numRuns: 30 },
    );
  });
});

describe('property: arbitrary input never throws', () => {
  it('any string (unicode, control characters, quotes) gets a structured result', () => {
    const sim = Simulation.create(DEFAULT, { seed: 7 });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 80 }), command), (s) => {
        const r = sim.execute(s);
        expect([0, 1, 2]).toContain(r.exit);
        expect(typeof r.text).toBe('string');
        checkInvariants(sim);
      }),
      { numRuns: 300 },
    );
  });
});
