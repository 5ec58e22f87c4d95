import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { isoformat, makeInstant } from '../../src/sim/model/calendar.js';
import { D, DZERO } from '../../src/sim/py/decimal.js';
import { completedKey, effectiveRates, quantize, solveCompletion, solveMilestone } from '../../src/sim/model/engine.js';
import { Simulation } from '../../src/sim/simulation.js';
import type { Domain, Task } from '../../src/sim/model/types.js';

const cfg = loadPreset('default');
const MON = makeInstant(2025, 1, 6, 9);

function task(reqs: [Domain, string, string][], assignments: number[] = []): Task {
  return {
    id: 0, title: 'T', clientId: null, status: 'active', requiredPrestige: 1, rewardCents: 0,
    rewardPrestigeDelta: D('0.1'), skillBoostPct: D('0.1'), acceptedAt: MON, deadline: null, completedAt: null,
    success: null, milestonePct: 0, requiredTrust: 0, advertisedRewardCents: null, marketSlot: 0, owned: true,
    reqs: reqs.map(([domain, req, done]) => ({ domain, required: D(req), completed: D(done) })),
    assignments: assignments.map((employeeId) => ({ employeeId, assignedAt: MON })),
  };
}

describe('storage quantization (SQLite REAL read back as %.Nf)', () => {
  it('rounds half-even on the exact binary value', () => {
    expect(quantize(D('0.2545'), 3).toString()).toBe('0.255'); // 0.2545 is 0.25450000000000000399 in binary
    expect(quantize(D('2.6745'), 3).toString()).toBe('2.675'); // 2.6745 is 2.67450000000000009948 in binary
    expect(quantize(D('2.6755'), 3).toString()).toBe('2.675'); // 2.6755 is 2.67549999999999998934 in binary
    expect(quantize(D('1.27587881194531'), 3).toString()).toBe('1.276');
  });
  it('leaves values already at the scale untouched', () => {
    const d = D('4.122');
    expect(quantize(d, 3)).toBe(d);
  });
});

describe('ETA solver', () => {
  const rates = (m: Record<string, string>) => new Map(Object.entries(m).map(([k, v]) => [k as Domain, D(v)]));
  it('completion = now + max over domains of remaining / rate, in business hours', () => {
    const t = task([['research', '90', '0'], ['training', '45', '0']]);
    expect(isoformat(solveCompletion(t, MON, rates({ research: '10', training: '10' })) as number)).toBe('2025-01-06T18:00:00');
    expect(isoformat(solveCompletion(t, MON, rates({ research: '10', training: '2.5' })) as number)).toBe('2025-01-07T18:00:00');
  });
  it('no event when a domain with work left has rate 0; now when nothing is left', () => {
    const t = task([['research', '90', '0'], ['training', '45', '0']]);
    expect(solveCompletion(t, MON, rates({ research: '10' }))).toBeNull();
    expect(solveCompletion(task([['research', '90', '90']]), MON, rates({}))).toBe(MON);
  });
  it('milestone: piecewise-linear solve of sum(done) >= m * sum(required)', () => {
    // research 100 @ 10/h caps after 10 h; training 300 @ 5/h. 50% of 400 = 200: after 10 h done = 150, then slope 5 -> +10 h.
    const t = task([['research', '100', '0'], ['training', '300', '0']]);
    expect(isoformat(solveMilestone(t, MON, rates({ research: '10', training: '5' }), 0.5) as number)).toBe('2025-01-08T11:00:00');
    expect(solveMilestone(t, MON, rates({ research: '10' }), 0.5)).toBeNull();
    expect(solveMilestone(t, MON, rates({ research: '10' }), 0.25)).not.toBeNull();
  });
});

describe('throughput split and the team-size-4 rule', () => {
  it('an employee on k active tasks contributes rate/k to each; only the best 4 contributions count', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    const emps = sim.state.employees;
    const a = task([['research', '1000', '0']], [0, 1, 2, 3, 4]);
    const b = { ...task([['research', '1000', '0']], [0]), id: 1 };
    const r = effectiveRates(sim.state, [a, b]);
    const contrib = [emps[0]!.rates.research.div(2), emps[1]!.rates.research, emps[2]!.rates.research, emps[3]!.rates.research, emps[4]!.rates.research].sort((x, y) => y.cmp(x));
    const top4 = contrib.slice(0, 4).reduce((s, x) => s.add(x), DZERO);
    expect(r.get(0)?.get('research')?.toString()).toBe(top4.toString());
    expect(r.get(1)?.get('research')?.toString()).toBe(emps[0]!.rates.research.div(2).toString());
  });
});

describe('completion, trust and payroll through commands', () => {
  it('success: reward booked, prestige up, trust 0 -> 1.6, other clients unchanged at 0, salaries bumped by tier', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    expect(sim.execute('task accept --task-id Task-8').exit).toBe(0); // Cortex Intelligence, research 783
    sim.execute('task assign --task-id Task-8 --employees Emp_4,Emp_6,Emp_7,Emp_8');
    sim.execute('task dispatch --task-id Task-8');
    const before = sim.state.employees.map((e) => e.salaryCents);
    const r = sim.execute('sim resume');
    const ev = (r.value as { wake_events: Record<string, unknown>[] }).wake_events[0]!;
    expect(ev['type']).toBe('task_completed');
    expect(ev['success']).toBe(true);
    expect(ev['trust_delta']).toBe(1.6);
    const cortex = sim.state.clients.find((c) => c.name === 'Cortex Intelligence')!;
    expect(cortex.trust.toString()).toBe('1.6');
    expect(sim.state.ledger.at(-1)?.amountCents).toBe(1853002);
    expect(sim.state.prestige.research.gt(1)).toBe(true);
    const bumps = sim.state.employees.map((e, i) => e.salaryCents - before[i]!);
    // Emp_4, Emp_6, Emp_7 are mid (+1% of the 7,000.00 mid-point), Emp_8 is junior (+1% of 3,000.00).
    expect(bumps).toEqual([0, 0, 0, 7000, 0, 7000, 7000, 3000]);
    // Reported salary bump total is the reference's quirk: post-bump salary x 1%, not the bumps applied.
    expect(ev['salary_bump_total_cents']).not.toBe(bumps.reduce((a, b) => a + b, 0));
  });

  it('the corrected preset reports the bumps actually applied', () => {
    const sim = Simulation.create(loadPreset('corrected'), { seed: 1 });
    sim.execute('task accept --task-id Task-8');
    sim.execute('task assign --task-id Task-8 --employees Emp_4,Emp_6,Emp_7,Emp_8');
    sim.execute('task dispatch --task-id Task-8');
    const r = sim.execute('sim resume');
    const ev = (r.value as { wake_events: Record<string, unknown>[] }).wake_events[0]!;
    expect(ev['salary_bump_total_cents']).toBe(7000 + 7000 + 7000 + 3000);
  });

  it('adversarial client: scope creep x4 makes the task fail, 35% of the advertised reward is charged, trust stays 0', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    sim.execute('task accept --task-id Task-10'); // Vanguard ML (RAT)
    const req = sim.state.tasks[9]!.reqs[0]!;
    expect(req.required.toString()).toBe(String(564 * 4));
    sim.execute('task assign --task-id Task-10 --employees Emp_1,Emp_2,Emp_3,Emp_4,Emp_5,Emp_6,Emp_7,Emp_8');
    sim.execute('task dispatch --task-id Task-10');
    const ev = (sim.execute('sim resume').value as { wake_events: Record<string, unknown>[] }).wake_events[0]!;
    expect(ev['success']).toBe(false);
    expect(ev['funds_delta']).toBe(-Math.trunc(2091943 * 0.35));
    expect(ev['deadline_margin']).toBe('late by 185h');
  });

  it('payroll on the first business day at 09:00 writes one ledger row per employee and stops the resume', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    sim.execute('task accept --task-id Task-1');
    sim.execute('task assign --task-id Task-1 --employees Emp_1');
    sim.execute('task dispatch --task-id Task-1');
    let last;
    for (let i = 0; i < 20; i++) {
      last = sim.execute('sim resume').value as Record<string, unknown>;
      if (last['payrolls_applied'] === 1) break;
    }
    expect(last?.['new_sim_time']).toBe('2025-02-03T09:00:00');
    const rows = sim.state.ledger.filter((e) => e.category === 'monthly_payroll');
    expect(rows).toHaveLength(8);
    expect(rows.reduce((a, e) => a - e.amountCents, 0)).toBe(sim.state.employees.reduce((a, e) => a + e.salaryCents, 0));
  });
});

describe('quantize fast path equals the literal storage round trip', () => {
  it('for random decimals, including values within a hair of rounding midpoints', async () => {
    const fc = (await import('fast-check')).default;
    const { quantizeExact } = await import('../../src/sim/model/engine.js');
    const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: n }).map((a) => a.join(''));
    const near = fc.tuple(fc.integer({ min: 0, max: 30000 }), digits(4), fc.constantFrom('5', '49999999999999999', '50000000000000001', '4999999', '5000001'), digits(10)).map(
      ([i, f, mid, rest]) => `${i}.${f}${mid}${rest}`,
    );
    const any = fc.tuple(fc.integer({ min: 0, max: 30000 }), digits(27)).map(([i, f]) => `${i}.${f}`);
    fc.assert(
      fc.property(fc.oneof(near, any), fc.constantFrom(3, 4), (v, scale) => {
        const x = D(v);
        expect(quantize(x, scale).toString()).toBe(quantizeExact(x, scale).toString());
      }),
      { numRuns: 20000 },
    );
  });
});

describe('completion event keys', () => {
  it('completedKey is the text `task:${id}:completed` of any id, in any order, the same instance for an id again', () => {
    const id = fc.oneof(fc.nat({ max: 300 }), fc.constantFrom(-1, -0, 0.5, 65_535, 65_536, 2 ** 40, NaN));
    fc.assert(
      fc.property(fc.array(id, { maxLength: 30 }), (ids) => {
        for (const i of [...ids, ...ids]) expect(completedKey(i)).toBe(`task:${i}:completed`);
      }),
      { numRuns: 500 },
    );
    expect(completedKey(17)).toBe(completedKey(17));
  });
});
