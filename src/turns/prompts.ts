/**
 * The texts of the paper's turn protocol, exactly as the reference harness builds them
 * (`agent/prompt.py`: SYSTEM_PROMPT, build_turn_context, build_initial_user_prompt; the scratchpad suffix and
 * the truncation marker of `agent/runtime/litellm_runtime.py`). The texts are data the benchmark depends on:
 * they are reproduced byte for byte, including Python's number formatting (`:,.2f`, `round(x, 1)`, `str()`).
 */
import { type Out, PyFloat, pyFormatFixed, pyRepr, pyRound } from '../sim/index.js';

/** The reference system prompt (`agent/prompt.py` SYSTEM_PROMPT; the paper's Appendix C, Listing 1). */
export const SYSTEM_PROMPT: string = [
  'You are the CEO of a startup in a business simulation. Maximize funds and prestige while avoiding bankruptcy.',
  '',
  'All actions use `yc-bench` CLI commands via `run_command`. All return JSON.',
  '',
  '## Core Workflow (repeat every turn)',
  '',
  '**You must always have active tasks running. Every turn, follow this loop:**',
  '',
  '1. `yc-bench market browse` — pick a task',
  '2. `yc-bench task accept --task-id Task-42` — accept it',
  '3. `yc-bench task assign --task-id Task-42 --employees Emp_1,Emp_4,Emp_7` — assign employees (check `employee list` for skill rates)',
  '4. `yc-bench task dispatch --task-id Task-42` — start work',
  '5. `yc-bench sim resume` — advance to next event (requires active tasks)',
  '',
  'Run multiple tasks concurrently when possible. Accept → assign → dispatch a second task before calling sim resume.',
  '',
  '**Use `yc-bench scratchpad write`** to save strategy notes — your conversation history is truncated after 20 turns, but scratchpad persists in the system prompt. Write reusable rules, not one-off observations.',
  '',
  '## Commands',
  '',
  '### Observe',
  '- `yc-bench company status` — funds, prestige, payroll',
  '- `yc-bench employee list` — employees with skill rates per domain',
  '- `yc-bench market browse [--domain X] [--reward-min-cents N] [--limit N]` — available tasks',
  '- `yc-bench task list [--status X]` — your tasks',
  '- `yc-bench task inspect --task-id Task-42` — task details',
  '- `yc-bench client list` — clients with trust levels',
  '- `yc-bench client history` — per-client success/failure rates',
  '- `yc-bench finance ledger` — financial history',
  '',
  '### Act',
  '- `yc-bench task accept --task-id Task-42` — accept from market',
  '- `yc-bench task assign --task-id Task-42 --employees Emp_1,Emp_4,Emp_7` — assign employees (comma-separated)',
  '- `yc-bench task dispatch --task-id Task-42` — start work (must assign first)',
  '- `yc-bench task cancel --task-id Task-42 --reason "text"` — cancel (prestige penalty)',
  '- `yc-bench sim resume` — advance time',
  '- `yc-bench scratchpad write --content "text"` — save notes',
  '- `yc-bench scratchpad append --content "text"` — append notes',
  '',
  '## Key Mechanics',
  '',
  '- **Salary bumps**: completed tasks raise salary for every assigned employee. More employees assigned = higher payroll growth.',
  '- **Throughput split**: employees on multiple active tasks split their rate (rate/N). Two tasks run at 50% each.',
  '- **Deadlines**: success before deadline = reward + prestige. Failure = prestige penalty, no reward.',
  '- **Trust**: completing tasks for a client builds trust → less work per task, access to gated tasks. Working for one client erodes trust with others.',
  '- **Not all clients are reliable.** Check `client history` for failure patterns.',
  '- **Payroll**: deducted monthly. Funds < 0 = bankruptcy.',
  '- Prestige grows per domain. Higher prestige unlocks better-paying tasks.',
  '',
].join('\n');

/** Heading under which the runtime appends the scratchpad to the system prompt. */
export const SCRATCHPAD_HEADING = '\n\n## Your Scratchpad Notes\n';

/** The system prompt of one LLM call: the base prompt plus the scratchpad when it is non-empty. */
export function systemPromptWith(base: string, scratchpad: string | null): string {
  return scratchpad ? `${base}${SCRATCHPAD_HEADING}${scratchpad}` : base;
}

/** The user message that replaces dropped rounds (`_proactive_truncate`). */
export function truncationMarker(keepRounds: number): string {
  return `[Earlier turns removed. Only the last ${keepRounds} turns are retained in this context window.]`;
}

/** The state the reference reads before building a message (`agent/loop.py` `_snapshot_state`). */
export interface StateSnapshot {
  /** ISO time as the reference's naive datetimes print (`2025-01-17T11:13:55.712087`). */
  sim_time: string;
  horizon_end: string;
  /** Integer cents. */
  funds_cents: number;
  active_tasks: number;
  planned_tasks: number;
  employee_count: number;
  /** Integer cents per month (sum of salaries). */
  monthly_payroll_cents: number;
  bankrupt: boolean;
  /** Scratchpad content, or null when empty. */
  scratchpad: string | null;
}

/** Python's `format(x, ',.Nf')` for a float. */
export function pyFormatGrouped(x: number, digits: number): string {
  const s = pyFormatFixed(x, digits);
  const neg = s.startsWith('-');
  const body = neg ? s.slice(1) : s;
  const dot = body.indexOf('.');
  const int = dot >= 0 ? body.slice(0, dot) : body;
  const frac = dot >= 0 ? body.slice(dot) : '';
  if (!/^\d+$/.test(int)) return s; // nan, inf
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${neg ? '-' : ''}${grouped}${frac}`;
}

/** `f"${cents / 100:,.2f}"` without the dollar sign. */
function money2(cents: number): string {
  return pyFormatGrouped(cents / 100, 2);
}

function runwayMonths(funds: number, payroll: number): string | null {
  return payroll > 0 ? pyRepr(pyRound(funds / payroll, 1)) : null;
}

function pyStrRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = q;
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === '\\') out += '\\\\';
    else if (ch === q) out += `\\${q}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return out + q;
}

/** Python `repr()` of a JSON value as `json.loads` returns it. */
function pyReprValue(v: Out): string {
  if (typeof v === 'string') return pyStrRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyReprValue).join(', ')}]`;
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) {
    return `{${Object.keys(v).map((k) => `${pyStrRepr(k)}: ${pyReprValue(v[k] as Out)}`).join(', ')}}`;
  }
  return pyStr(v);
}

/** Python `str()` of a JSON value as `json.loads` returns it (`True`, `None`, `50.0`, `['a']`). */
export function pyStr(v: Out | undefined): string {
  if (v === undefined || v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? (Math.abs(v) < 1e21 ? v.toFixed(0) : BigInt(v).toString()) : pyRepr(v);
  if (v instanceof PyFloat) return pyRepr(v.value);
  return pyReprValue(v);
}

/** Python truthiness of a JSON value. */
export function pyTruthy(v: Out | undefined): boolean {
  if (v === undefined || v === null || v === false || v === '' || v === 0) return false;
  if (v instanceof PyFloat) return v.value !== 0;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function num(v: Out | undefined): number | null {
  if (typeof v === 'number') return v;
  if (v instanceof PyFloat) return v.value;
  if (v === true) return 1;
  if (v === false) return 0;
  return null;
}

/** `ev.get(key, default)`: the value when the key is present (even null), else the default. */
function get(ev: { [k: string]: Out }, key: string, dflt: Out): Out {
  return Object.prototype.hasOwnProperty.call(ev, key) ? (ev[key] as Out) : dflt;
}

/** One "Events since last turn" line per wake event, as `build_turn_context` formats it. */
export function formatWakeEvent(raw: Out): string {
  const ev: { [k: string]: Out } = raw !== null && typeof raw === 'object' && !Array.isArray(raw) && !(raw instanceof PyFloat) ? raw : {};
  const type = get(ev, 'type', 'unknown');
  if (type === 'task_completed') {
    const success = get(ev, 'success', false);
    const titleV = get(ev, 'task_title', null);
    const title = pyTruthy(titleV) ? pyStr(titleV) : pyStr(get(ev, 'task_id', '?'));
    const client = get(ev, 'client_name', '');
    const clientStr = pyTruthy(client) ? ` (client: ${pyStr(client)})` : '';
    const funds = get(ev, 'funds_delta', 0);
    const fundsN = num(funds) ?? 0;
    const fundsStr = pyTruthy(success) && pyTruthy(funds) ? ` +$${pyFormatGrouped(fundsN / 100, 0)}` : '';
    const margin = get(ev, 'deadline_margin', '');
    const marginStr = pyTruthy(margin) ? ` [${pyStr(margin)}]` : '';
    const nEmp = get(ev, 'employees_assigned', 0);
    const bump = num(get(ev, 'salary_bump_total_cents', 0)) ?? 0;
    const bumpStr =
      bump > 0 ? ` | ${pyStr(nEmp)} employees, +$${pyFormatGrouped(bump / 100, 0)}/mo payroll` : pyTruthy(nEmp) ? ` | ${pyStr(nEmp)} employees` : '';
    if (pyTruthy(success)) return `- ${title}${clientStr}: SUCCESS${fundsStr}${marginStr}${bumpStr}`;
    return `- ${title}${clientStr}: FAILED — missed deadline${marginStr}, no reward`;
  }
  if (type === 'task_half') return `- Task ${pyStr(get(ev, 'task_id', '?'))}: ${pyStr(get(ev, 'milestone_pct', '?'))}% progress reached`;
  if (type === 'payment_dispute') {
    const clawback = num(get(ev, 'clawback_cents', 0)) ?? 0;
    return `- PAYMENT DISPUTE from ${pyStr(get(ev, 'client_name', 'unknown'))}: -$${pyFormatGrouped(clawback / 100, 2)} clawed back`;
  }
  if (type === 'horizon_end') return '- **Horizon end reached. Simulation complete.**';
  if (type === 'bankruptcy') return '- **BANKRUPTCY. Simulation terminated.**';
  return `- Event: ${pyStr(type)}`;
}

/**
 * The per-turn context message (`build_turn_context`). `historyLimit` is the reference's hard-coded 20 in the
 * memory note (the `memory_note_rounds` fix passes `history_keep_rounds` instead).
 */
export function buildTurnContext(turnNumber: number, s: StateSnapshot, wakeEvents: readonly Out[] | null = null, historyLimit = 20): string {
  const runway = runwayMonths(s.funds_cents, s.monthly_payroll_cents);
  const runwayStr = runway !== null ? `~${runway} months` : '∞ (no payroll)';
  const untilTruncation = Math.max(0, historyLimit - turnNumber);
  const memoryNote =
    untilTruncation > 0
      ? `Your context window holds ${historyLimit} turns. ${untilTruncation} turns before oldest messages start dropping. Use scratchpad to persist important observations.`
      : `Your context window holds ${historyLimit} turns. Older messages have been dropped. Use scratchpad to persist important observations.`;
  const parts = [
    `## Turn ${turnNumber} — Simulation State`,
    `- **Current time**: ${s.sim_time}`,
    `- **Horizon end**: ${s.horizon_end}`,
    `- **Funds**: $${money2(s.funds_cents)} (${s.funds_cents} cents)`,
    `- **Monthly payroll**: $${money2(s.monthly_payroll_cents)}`,
    `- **Runway**: ${runwayStr}`,
    `- **Employees**: ${s.employee_count}`,
    `- **Active tasks**: ${s.active_tasks}`,
    `- **Planned tasks**: ${s.planned_tasks}`,
    `- **Memory**: ${memoryNote}`,
  ];
  if (s.bankrupt) parts.push('\n**WARNING: Company is bankrupt. Run will terminate.**');
  if (wakeEvents && wakeEvents.length > 0) {
    parts.push('\n### Events since last turn:');
    for (const ev of wakeEvents) parts.push(formatWakeEvent(ev));
  }
  if (s.active_tasks === 0 && s.planned_tasks === 0) {
    parts.push(
      '\n**ACTION REQUIRED**: No tasks are running. ' +
        'Do NOT call `sim resume` — it will just burn payroll with zero revenue. ' +
        'Accept a task, assign employees to it, and dispatch it first.',
    );
  } else if (s.planned_tasks > 0 && s.active_tasks === 0) {
    parts.push(
      '\n**ACTION REQUIRED**: You have planned tasks but none are dispatched. ' +
        "Do NOT call `sim resume` yet — dispatch first or you'll just burn payroll. " +
        'Assign employees and dispatch now.',
    );
  } else {
    parts.push('\nDecide your next actions. Use `run_command` to execute CLI commands.');
  }
  return parts.join('\n');
}

/** The first user message of an episode (`build_initial_user_prompt`). */
export function buildInitialUserPrompt(s: StateSnapshot, episode = 1): string {
  const runway = runwayMonths(s.funds_cents, s.monthly_payroll_cents);
  const runwayStr = runway !== null ? `~${runway} months` : '∞';
  const lines: string[] = [];
  if (episode > 1) {
    lines.push(
      `## Episode ${episode} — Restarting After Bankruptcy`,
      '',
      `You went bankrupt in episode ${episode - 1}. The simulation has been reset,`,
      'but your **scratchpad notes from the previous episode are preserved**.',
      'Check your scratchpad notes for strategy from the previous episode.',
      'and learn from past mistakes before taking action.',
      '',
    );
  }
  lines.push(
    '## Simulation Start — Take Immediate Action',
    `- current_time: ${s.sim_time}`,
    `- horizon_end: ${s.horizon_end}`,
    `- funds: $${money2(s.funds_cents)}`,
    `- monthly_payroll: $${money2(s.monthly_payroll_cents)}`,
    `- runway: ${runwayStr}`,
    `- employees: ${s.employee_count}`,
    `- active_tasks: ${s.active_tasks}`,
    `- planned_tasks: ${s.planned_tasks}`,
    '',
    '**Your immediate priority**: generate revenue before payroll drains your runway.',
    'Complete these steps now (multiple commands per turn are fine):',
    '1. `yc-bench market browse` — see available tasks',
    '2. `yc-bench task accept --task-id Task-42` — accept a task',
    '3. `yc-bench task assign-all --task-id Task-42` — assign employees (or use `task assign` to pick individuals)',
    '4. `yc-bench task dispatch --task-id Task-42` — start work',
    '5. `yc-bench sim resume` — advance time',
    '',
    "**IMPORTANT**: Check each command's result before proceeding to the next.",
    'If `task accept` fails (trust or prestige too low), try a different task.',
    'Do NOT call `sim resume` unless you have at least one active task — it will skip forward with zero revenue.',
  );
  if (s.bankrupt) lines.push('WARNING: company is already bankrupt at initialization.');
  return lines.join('\n');
}
