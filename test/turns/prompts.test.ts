/**
 * The turn protocol's texts for given states, against strings written out by hand from the reference's templates
 * (`agent/prompt.py`): Python number formatting (`:,.2f`, `:,.0f` with round-half-even, `round(x, 1)`), every
 * wake-event line, both nudges, the bankrupt warning, the memory note, the episode prompt.
 */
import { describe, expect, it } from 'vitest';
import { PyFloat, type Out } from '../../src/sim/py/pyjson.js';
import { buildInitialUserPrompt, buildTurnContext, pyFormatGrouped, SYSTEM_PROMPT, systemPromptWith, truncationMarker, type StateSnapshot } from '../../src/turns/prompts.js';
import { TurnEnv } from '../../src/turns/turns.js';

const base = { sim_time: '2025-03-04T10:30:00', horizon_end: '2026-01-01T09:00:00', employee_count: 8, scratchpad: null };
const state = (o: Partial<StateSnapshot>): StateSnapshot => ({ funds_cents: 0, active_tasks: 0, planned_tasks: 0, monthly_payroll_cents: 0, bankrupt: false, ...base, ...o });

const INITIAL_SEED1 = `## Simulation Start — Take Immediate Action
- current_time: 2025-01-01T09:00:00
- horizon_end: 2026-01-01T09:00:00
- funds: $200,000.00
- monthly_payroll: $38,005.03
- runway: ~5.3 months
- employees: 8
- active_tasks: 0
- planned_tasks: 0

**Your immediate priority**: generate revenue before payroll drains your runway.
Complete these steps now (multiple commands per turn are fine):
1. \`yc-bench market browse\` — see available tasks
2. \`yc-bench task accept --task-id Task-42\` — accept a task
3. \`yc-bench task assign-all --task-id Task-42\` — assign employees (or use \`task assign\` to pick individuals)
4. \`yc-bench task dispatch --task-id Task-42\` — start work
5. \`yc-bench sim resume\` — advance time

**IMPORTANT**: Check each command's result before proceeding to the next.
If \`task accept\` fails (trust or prestige too low), try a different task.
Do NOT call \`sim resume\` unless you have at least one active task — it will skip forward with zero revenue.`;

describe('system prompt', () => {
  it('is the reference SYSTEM_PROMPT (Appendix C, Listing 1), with the scratchpad appended only when non-empty', () => {
    expect(SYSTEM_PROMPT.startsWith('You are the CEO of a startup in a business simulation. Maximize funds and prestige while avoiding bankruptcy.\n\nAll actions use `yc-bench` CLI commands via `run_command`. All return JSON.\n')).toBe(true);
    expect(SYSTEM_PROMPT.endsWith('- Prestige grows per domain. Higher prestige unlocks better-paying tasks.\n')).toBe(true);
    expect(SYSTEM_PROMPT.split('\n')).toHaveLength(49);
    expect(systemPromptWith('P', null)).toBe('P');
    expect(systemPromptWith('P', '')).toBe('P');
    expect(systemPromptWith('P', 'a\nb')).toBe('P\n\n## Your Scratchpad Notes\na\nb');
    expect(truncationMarker(20)).toBe('[Earlier turns removed. Only the last 20 turns are retained in this context window.]');
  });
});

describe('fresh start', () => {
  it('reset gives the system prompt and the initial prompt of seed 1', () => {
    const env = new TurnEnv();
    const { messages, info } = env.reset({ seed: 1 });
    expect(messages).toEqual([
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: INITIAL_SEED1 },
    ]);
    expect(info).toMatchObject({ turn: 0, calls: 0, episode: 1, funds_cents: 20_000_000, terminal_reason: null });
  });

  it('episode prompt, negative funds, no payroll', () => {
    const text = buildInitialUserPrompt(state({ funds_cents: -5, bankrupt: true }), 3);
    expect(text.split('\n').slice(0, 14).join('\n')).toBe(`## Episode 3 — Restarting After Bankruptcy

You went bankrupt in episode 2. The simulation has been reset,
but your **scratchpad notes from the previous episode are preserved**.
Check your scratchpad notes for strategy from the previous episode.
and learn from past mistakes before taking action.

## Simulation Start — Take Immediate Action
- current_time: 2025-03-04T10:30:00
- horizon_end: 2026-01-01T09:00:00
- funds: $-0.05
- monthly_payroll: $0.00
- runway: ∞
- employees: 8`);
    expect(text.endsWith('it will skip forward with zero revenue.\nWARNING: company is already bankrupt at initialization.')).toBe(true);
  });
});

const HEAD7 = `## Turn 7 — Simulation State
- **Current time**: 2025-03-04T10:30:00
- **Horizon end**: 2026-01-01T09:00:00
- **Funds**: $12,345.67 (1234567 cents)
- **Monthly payroll**: $38,005.03
- **Runway**: ~0.3 months
- **Employees**: 8
- **Active tasks**: 2
- **Planned tasks**: 1
- **Memory**: Your context window holds 20 turns. 13 turns before oldest messages start dropping. Use scratchpad to persist important observations.`;

describe('turn context', () => {
  it('after a resume with wake events of every kind, with active and planned tasks', () => {
    const events: Out[] = [
      { type: 'task_completed', task_id: 'u1', task_title: 'Task-42', client_name: 'Nova Corp', success: true, funds_delta: 1234567, deadline_margin: 'ahead by 12h', employees_assigned: 4, salary_bump_total_cents: 12345 },
      { type: 'task_completed', task_id: 'u2', task_title: null, client_name: null, success: true, funds_delta: 250, deadline_margin: null, employees_assigned: 0, salary_bump_total_cents: 0 },
      { type: 'task_completed', task_id: 'u3', task_title: 'Task-7', client_name: 'Helix', success: true, funds_delta: 350, deadline_margin: 'ahead by 0h', employees_assigned: 2, salary_bump_total_cents: 0 },
      { type: 'task_completed', task_id: 'u4', task_title: 'Task-9', client_name: 'Helix', success: false, funds_delta: -500, deadline_margin: 'late by 3h', employees_assigned: 2, salary_bump_total_cents: 0 },
      { type: 'task_half', task_id: 'abc', milestone_pct: 50 },
      { type: 'task_half', task_id: 'abd', milestone_pct: new PyFloat(50) },
      { type: 'payment_dispute', client_name: 'Acme', clawback_cents: 123450 },
      { type: 'monthly_payroll', funds_after: 5 },
      { type: 'horizon_end', reached: true },
      { type: 'bankruptcy', bankrupt: true },
    ];
    const text = buildTurnContext(7, state({ funds_cents: 1234567, active_tasks: 2, planned_tasks: 1, monthly_payroll_cents: 3800503 }), events);
    expect(text).toBe(`${HEAD7}

### Events since last turn:
- Task-42 (client: Nova Corp): SUCCESS +$12,346 [ahead by 12h] | 4 employees, +$123/mo payroll
- u2: SUCCESS +$2
- Task-7 (client: Helix): SUCCESS +$4 [ahead by 0h] | 2 employees
- Task-9 (client: Helix): FAILED — missed deadline [late by 3h], no reward
- Task abc: 50% progress reached
- Task abd: 50.0% progress reached
- PAYMENT DISPUTE from Acme: -$1,234.50 clawed back
- Event: monthly_payroll
- **Horizon end reached. Simulation complete.**
- **BANKRUPTCY. Simulation terminated.**

Decide your next actions. Use \`run_command\` to execute CLI commands.`);
  });

  it('negative funds: bankrupt warning, planned-task nudge, dropped-history note', () => {
    expect(buildTurnContext(20, state({ funds_cents: -123456, planned_tasks: 1, monthly_payroll_cents: 50000, bankrupt: true }))).toBe(`## Turn 20 — Simulation State
- **Current time**: 2025-03-04T10:30:00
- **Horizon end**: 2026-01-01T09:00:00
- **Funds**: $-1,234.56 (-123456 cents)
- **Monthly payroll**: $500.00
- **Runway**: ~-2.5 months
- **Employees**: 8
- **Active tasks**: 0
- **Planned tasks**: 1
- **Memory**: Your context window holds 20 turns. Older messages have been dropped. Use scratchpad to persist important observations.

**WARNING: Company is bankrupt. Run will terminate.**

**ACTION REQUIRED**: You have planned tasks but none are dispatched. Do NOT call \`sim resume\` yet — dispatch first or you'll just burn payroll. Assign employees and dispatch now.`);
  });

  it('no tasks, no payroll, empty event list', () => {
    expect(buildTurnContext(19, state({}), [])).toBe(`## Turn 19 — Simulation State
- **Current time**: 2025-03-04T10:30:00
- **Horizon end**: 2026-01-01T09:00:00
- **Funds**: $0.00 (0 cents)
- **Monthly payroll**: $0.00
- **Runway**: ∞ (no payroll)
- **Employees**: 8
- **Active tasks**: 0
- **Planned tasks**: 0
- **Memory**: Your context window holds 20 turns. 1 turns before oldest messages start dropping. Use scratchpad to persist important observations.

**ACTION REQUIRED**: No tasks are running. Do NOT call \`sim resume\` — it will just burn payroll with zero revenue. Accept a task, assign employees to it, and dispatch it first.`);
  });

  it("Python's grouped fixed-point formatting (round half to even on the binary value)", () => {
    expect(pyFormatGrouped(2.5, 0)).toBe('2');
    expect(pyFormatGrouped(3.5, 0)).toBe('4');
    expect(pyFormatGrouped(1234567.891, 2)).toBe('1,234,567.89');
    expect(pyFormatGrouped(-1234.565, 2)).toBe('-1,234.57');
    expect(pyFormatGrouped(0.125, 2)).toBe('0.12');
    expect(pyFormatGrouped(999.995, 2)).toBe('1,000.00');
    expect(pyFormatGrouped(-0.001, 2)).toBe('-0.00');
  });
});
