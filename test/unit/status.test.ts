/**
 * The one terminal rule (`outcome`) and the company figures (`companyFigures`): the rule on made-up states, and
 * every status view (the `company status` command, the step env's status block, the turn context, the resume
 * output, the step env's terminated flag) agreeing with it along real episodes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { RandomPolicy } from '../../baselines/random.js';
import { loadPreset } from '../../src/config/load.js';
import { Env, statusOf } from '../../src/env/env.js';
import { companyFigures, outcome, terminalReason, toPlain } from '../../src/sim/index.js';
import { readState } from '../../src/turns/turns.js';

describe('outcome: the terminal rule', () => {
  it('bankrupt below zero funds, at the horizon from its instant on; bankruptcy wins a tie', () => {
    expect(outcome({ fundsCents: 0, simTime: 9, horizonEnd: 10 })).toEqual({ terminated: false, reason: null, bankrupt: false, horizonReached: false, fundsCents: 0, horizonEnd: 10 });
    expect(outcome({ fundsCents: -1, simTime: 9, horizonEnd: 10 }).reason).toBe('bankruptcy');
    expect(outcome({ fundsCents: 5, simTime: 10, horizonEnd: 10 }).reason).toBe('horizon_end');
    expect(outcome({ fundsCents: -5, simTime: 11, horizonEnd: 10 })).toMatchObject({ terminated: true, reason: 'bankruptcy', bankrupt: true, horizonReached: true });
  });

  it('terminated exactly when a reason is given, the reason alone as terminalReason gives it (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 0, max: 1e6 }), (funds, t, h) => {
        const o = outcome({ fundsCents: funds, simTime: t, horizonEnd: h });
        expect(terminalReason({ fundsCents: funds, simTime: t, horizonEnd: h })).toBe(o.reason);
        expect(o.terminated).toBe(o.reason !== null);
        expect(o.bankrupt).toBe(funds < 0);
        expect(o.horizonReached).toBe(t >= h);
        expect(o.terminated).toBe(o.bankrupt || o.horizonReached);
      }),
    );
  });
});

describe('companyFigures: the outcome plus the figures', () => {
  it('carries every field of outcome(), in its order, then the figures', () => {
    const env = new Env();
    env.reset({ seed: 3 });
    const state = (env as unknown as { sim: { state: Parameters<typeof companyFigures>[0] } }).sim.state;
    const f = companyFigures(state);
    const o = outcome(state);
    expect(Object.keys(f)).toEqual([...Object.keys(o), 'simTime', 'monthlyPayrollCents', 'runwayMonths', 'tasks', 'employees']);
    expect({ ...f }).toMatchObject(o);
  });
});

describe('every status view agrees with companyFigures', () => {
  const cfg = loadPreset('default');
  for (const [name, make] of [
    ['greedy', () => new GreedyPolicy()],
    ['random', () => new RandomPolicy()],
  ] as const) {
    it(`along a ${name} episode`, () => {
      const env = new Env();
      env.reset({ seed: 3, preset: cfg, options: { max_steps: 400 } });
      const policy = make();
      policy.reset(3);
      let last: { lastCommand: string | null; lastExit: number; lastOutput: unknown } = { lastCommand: null, lastExit: 0, lastOutput: null };
      for (let i = 0; i < 400; i++) {
        const cmd = policy.act(last);
        if (cmd === null) break;
        const r = env.step(cmd);
        const sim = env.simulation!;
        const f = companyFigures(sim.state);
        const st = statusOf(sim);
        expect([st.bankrupt, st.horizon_reached, st.funds_cents, st.monthly_payroll_cents, st.runway_months]).toEqual([f.bankrupt, f.horizonReached, f.fundsCents, f.monthlyPayrollCents, f.runwayMonths]);
        expect([st.active_tasks, st.planned_tasks, st.completed_tasks]).toEqual([f.tasks.active, f.tasks.planned, f.tasks.completed]);
        const rs = readState(sim);
        expect([rs.bankrupt, rs.active_tasks, rs.planned_tasks, rs.employee_count, rs.monthly_payroll_cents]).toEqual([f.bankrupt, f.tasks.active, f.tasks.planned, f.employees, f.monthlyPayrollCents]);
        const cs = toPlain(sim.clone().execute('company status').value) as { tasks: unknown; risk: { bankrupt: boolean; months_runway: number | null } };
        expect(cs.tasks).toEqual(f.tasks);
        expect(cs.risk).toEqual({ bankrupt: f.bankrupt, months_runway: f.runwayMonths });
        expect(r.terminated).toBe(f.terminated);
        expect(r.info.terminal_reason).toBe(f.reason ?? (r.truncated ? 'max_steps' : null));
        if (r.observation.command === 'sim resume' && r.observation.ok) {
          expect(r.observation.text).toContain(`"terminal_reason": ${f.reason === null ? 'null' : `"${f.reason}"`}`);
        }
        last = { lastCommand: cmd, lastExit: r.observation.exit_code, lastOutput: JSON.parse(r.observation.text === '' ? 'null' : r.observation.text.startsWith('{') ? r.observation.text : 'null') };
        if (r.terminated || r.truncated) break;
      }
    });
  }
});
