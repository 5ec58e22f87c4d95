/**
 * The typed result of every agent command: one named type per verb (`CommandResults` maps the verb to it), the
 * `{error}` of a rejected command, and the wake events of `sim resume`. They are `type` aliases of plain objects,
 * so every result is also an `Out` (the JSON tree `pyJsonDumps` renders); the order of the fields in the
 * handlers' object literals is the order of the JSON text. Fields typed `Float` print as Python floats.
 *
 * Next to each type, its keys in JSON order (`RESULT_KEYS`, `ROW_KEYS`, `WAKE_EVENT_KEYS`): the compiler checks
 * that a list names exactly the type's keys, and test/unit/command-results.test.ts that real outputs carry
 * exactly these keys in this order, so the types and the runtime shapes cannot drift apart.
 */
import type { Float } from '../py/pyjson.js';
import type { TerminalReason } from '../model/status.js';
import type { Domain, EventType, LedgerCategory, TaskStatus } from '../model/types.js';
import type { WakeEvent } from '../model/engine.js';

export type {
  BankruptcyWakeEvent,
  HorizonEndWakeEvent,
  MonthlyPayrollWakeEvent,
  TaskCompletedWakeEvent,
  TaskHalfWakeEvent,
  UnknownWakeEvent,
  WakeEvent,
} from '../model/engine.js';

/** A rejected command (exit code 1, or 2 for a usage error): the message, state untouched. */
export type ErrorResult = { error: string };

/** `sim resume`: what happened while time advanced to the next wake-up, and whether the run is over. */
export type SimResumeResult = {
  ok: true;
  old_sim_time: string;
  new_sim_time: string;
  checkpoint_event_type: EventType | null;
  events_processed: number;
  payrolls_applied: number;
  balance_delta: number;
  wake_events: WakeEvent[];
  bankrupt: boolean;
  horizon_reached: boolean;
  terminal_reason: TerminalReason | null;
};

/** The owned tasks by state (`company status` `tasks`). */
export type TaskCountsRow = { active: number; planned: number; completed: number; cancelled: number };
/** `company status` `risk`. */
export type RiskRow = { months_runway: Float | null; bankrupt: boolean };
/** `company status`. */
export type CompanyStatusResult = {
  company_id: string;
  company_name: string;
  funds_cents: number;
  prestige: Record<Domain, Float>;
  sim_time: string;
  horizon_end: string;
  tasks: TaskCountsRow;
  employees: number;
  next_payroll: string;
  monthly_payroll_cents: number;
  risk: RiskRow;
};

/** One employee of `employee list`. */
export type EmployeeRow = { name: string; tier: string; salary_cents: number; skill_rates: Record<Domain, Float>; active_tasks: string[] };
/** `employee list`. */
export type EmployeeListResult = { count: number; employees: EmployeeRow[] };

/** What a task asks and offers, as `market browse` and `task inspect` list it (in this order). */
export type TaskTerms = {
  required_prestige: number;
  required_trust: number;
  reward_funds_cents: number;
  reward_prestige_delta: Float;
  skill_boost_pct: Float;
};
/** One requirement of a market task. */
export type MarketRequirementRow = { domain: Domain; required_qty: Float };
/** One task of `market browse`. */
export type MarketTaskRow = { task_id: string; client_name: string | null } & TaskTerms & { requirements: MarketRequirementRow[] };
/** `market browse`. */
export type MarketBrowseResult = { total: number; offset: number; limit: number; tasks: MarketTaskRow[] };

/** `task accept`. */
export type TaskAcceptResult = { task_id: string; status: TaskStatus; accepted_at: string; deadline: string; replacement_task_id: string };
/** `task assign`. */
export type TaskAssignResult = { task_id: string; status: TaskStatus; newly_assigned: string[]; total_assigned: string[] };
/** `task dispatch`. */
export type TaskDispatchResult = { task_id: string; status: TaskStatus; assignment_count: number; assigned_employees: string[] };

/** One task of `task list`. */
export type TaskListRow = {
  task_id: string;
  title: string;
  status: TaskStatus;
  client_name: string | null;
  progress_pct: Float;
  deadline: string | null;
  at_risk: boolean;
};
/** `task list`. */
export type TaskListResult = { count: number; tasks: TaskListRow[] };

/** One requirement of `task inspect`. */
export type TaskRequirementRow = { domain: Domain; required_qty: Float; completed_qty: Float; remaining_qty: Float };
/** One assignment of `task inspect`. */
export type TaskAssignmentRow = { employee: string; assigned_at: string };
/** `task inspect`. */
export type TaskInspectResult = { task_id: string; title: string; status: TaskStatus; client_name: string | null } & TaskTerms & {
  accepted_at: string | null;
  deadline: string | null;
  completed_at: string | null;
  success: boolean | null;
  progress_pct: Float;
  requirements: TaskRequirementRow[];
  assignments: TaskAssignmentRow[];
};

/** The prestige change of one domain in `task cancel`. */
export type PrestigeChangeRow = { old: Float; new: Float; delta: Float };
/** `task cancel` (with `fixes.task_cancel`; the reference's cancel always fails). */
export type TaskCancelResult = {
  task_id: string;
  status: TaskStatus;
  reason: string;
  cancel_penalty_per_domain: Float;
  prestige_changes: Partial<Record<Domain, PrestigeChangeRow>>;
  trust_delta: Float;
  bankrupt: boolean;
};

/** One client of `client list`. */
export type ClientRow = { client_id: string; name: string; trust_level: Float; tier: string; specialties: Domain[] };
/** `client list`. */
export type ClientListResult = { count: number; clients: ClientRow[] };

/** One client of `client history`. */
export type ClientHistoryRow = { client_name: string; trust_level: Float; tasks_succeeded: number; tasks_failed: number; failure_rate_pct: Float };
/** `client history`. */
export type ClientHistoryResult = { count: number; client_history: ClientHistoryRow[] };

/** One entry of `finance ledger`. */
export type LedgerRow = { id: string; occurred_at: string; category: LedgerCategory; amount_cents: number; ref_type: 'employee' | 'task' | null; ref_id: string | null };
/** `finance ledger`. */
export type FinanceLedgerResult = { count: number; total_amount_cents: number; entries: LedgerRow[] };

/** One month of `report monthly`. */
export type MonthRow = { month_start: string; revenue_cents: number; cost_cents: number; return_cents: number; ending_funds_cents: number };
/** `report monthly` (empty in the reference; computed from the ledger with `fixes.report_monthly`). */
export type ReportMonthlyResult = { count: number; months: MonthRow[] };

/** `scratchpad read`. */
export type ScratchpadReadResult = { content: string };
/** `scratchpad write` and `scratchpad append`: the new content. */
export type ScratchpadWriteResult = { ok: true; content: string };
/** `scratchpad clear`. */
export type ScratchpadClearResult = { ok: true };

/** Each verb's result when the command is accepted (`never`: the verb is always rejected, as in the reference). */
export type CommandResults = {
  'sim init': never;
  'sim resume': SimResumeResult;
  'company status': CompanyStatusResult;
  'employee list': EmployeeListResult;
  'market browse': MarketBrowseResult;
  'task accept': TaskAcceptResult;
  'task assign': TaskAssignResult;
  'task assign-all': never;
  'task dispatch': TaskDispatchResult;
  'task list': TaskListResult;
  'task inspect': TaskInspectResult;
  'task cancel': TaskCancelResult;
  'finance ledger': FinanceLedgerResult;
  'report monthly': ReportMonthlyResult;
  'client list': ClientListResult;
  'client history': ClientHistoryResult;
  'scratchpad read': ScratchpadReadResult;
  'scratchpad write': ScratchpadWriteResult;
  'scratchpad append': ScratchpadWriteResult;
  'scratchpad clear': ScratchpadClearResult;
};

/** A command verb (`group name`). */
export type Verb = keyof CommandResults;

/** The value of a command: its verb's result when accepted, `{error}` when rejected, null for `--help`. */
export type CommandValue = CommandResults[Verb] | ErrorResult | null;

/** Anything carrying a command's verb and typed value (`CommandResult`, the turn executor's `ExecutedCommand`). */
export interface VerbValue {
  readonly verb: string | null;
  readonly value: CommandValue;
}

/** True when the value is a rejection (`{error}`; no accepted result has an `error` field). */
export function isError(value: CommandValue): value is ErrorResult {
  return value !== null && 'error' in value;
}

/** True when `r` is an accepted command of `verb`: its value is then that verb's result. */
export function isVerb<V extends Verb, R extends VerbValue>(r: R, verb: V): r is R & { readonly verb: V; readonly value: CommandResults[V] } {
  return r.verb === verb && r.value !== null && !isError(r.value);
}

// Keys in JSON order, checked against the types --------------------------------------------------------------

/** The keys of `T` that a list leaves out (never when it names them all). */
type Missing<T, K extends readonly PropertyKey[]> = [T] extends [never] ? never : Exclude<keyof T, K[number]>;

/** A list of `T`'s keys, checked by the compiler to name each key of `T` (the test checks the order). */
export function keysOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(keys: K & ([Missing<T, K>] extends [never] ? unknown : { missing: Missing<T, K> })): K => keys;
}

/** The keys of `TaskTerms` in JSON order. */
const TASK_TERMS_KEYS = keysOf<TaskTerms>()(['required_prestige', 'required_trust', 'reward_funds_cents', 'reward_prestige_delta', 'skill_boost_pct']);

/** The keys of each verb's result in JSON order (empty for the verbs that are always rejected). */
export const RESULT_KEYS = {
  'sim init': keysOf<never>()([]),
  'sim resume': keysOf<SimResumeResult>()([
    'ok',
    'old_sim_time',
    'new_sim_time',
    'checkpoint_event_type',
    'events_processed',
    'payrolls_applied',
    'balance_delta',
    'wake_events',
    'bankrupt',
    'horizon_reached',
    'terminal_reason',
  ]),
  'company status': keysOf<CompanyStatusResult>()([
    'company_id',
    'company_name',
    'funds_cents',
    'prestige',
    'sim_time',
    'horizon_end',
    'tasks',
    'employees',
    'next_payroll',
    'monthly_payroll_cents',
    'risk',
  ]),
  'employee list': keysOf<EmployeeListResult>()(['count', 'employees']),
  'market browse': keysOf<MarketBrowseResult>()(['total', 'offset', 'limit', 'tasks']),
  'task accept': keysOf<TaskAcceptResult>()(['task_id', 'status', 'accepted_at', 'deadline', 'replacement_task_id']),
  'task assign': keysOf<TaskAssignResult>()(['task_id', 'status', 'newly_assigned', 'total_assigned']),
  'task assign-all': keysOf<never>()([]),
  'task dispatch': keysOf<TaskDispatchResult>()(['task_id', 'status', 'assignment_count', 'assigned_employees']),
  'task list': keysOf<TaskListResult>()(['count', 'tasks']),
  'task inspect': keysOf<TaskInspectResult>()([
    ...['task_id', 'title', 'status', 'client_name'] as const,
    ...TASK_TERMS_KEYS,
    ...['accepted_at', 'deadline', 'completed_at', 'success', 'progress_pct', 'requirements', 'assignments'] as const,
  ]),
  'task cancel': keysOf<TaskCancelResult>()(['task_id', 'status', 'reason', 'cancel_penalty_per_domain', 'prestige_changes', 'trust_delta', 'bankrupt']),
  'finance ledger': keysOf<FinanceLedgerResult>()(['count', 'total_amount_cents', 'entries']),
  'report monthly': keysOf<ReportMonthlyResult>()(['count', 'months']),
  'client list': keysOf<ClientListResult>()(['count', 'clients']),
  'client history': keysOf<ClientHistoryResult>()(['count', 'client_history']),
  'scratchpad read': keysOf<ScratchpadReadResult>()(['content']),
  'scratchpad write': keysOf<ScratchpadWriteResult>()(['ok', 'content']),
  'scratchpad append': keysOf<ScratchpadWriteResult>()(['ok', 'content']),
  'scratchpad clear': keysOf<ScratchpadClearResult>()(['ok']),
} as const satisfies { readonly [V in Verb]: readonly string[] };

/** The keys of the nested rows in JSON order. */
export const ROW_KEYS = {
  error: keysOf<ErrorResult>()(['error']),
  taskCounts: keysOf<TaskCountsRow>()(['active', 'planned', 'completed', 'cancelled']),
  risk: keysOf<RiskRow>()(['months_runway', 'bankrupt']),
  employee: keysOf<EmployeeRow>()(['name', 'tier', 'salary_cents', 'skill_rates', 'active_tasks']),
  marketRequirement: keysOf<MarketRequirementRow>()(['domain', 'required_qty']),
  marketTask: keysOf<MarketTaskRow>()(['task_id', 'client_name', ...TASK_TERMS_KEYS, 'requirements']),
  taskList: keysOf<TaskListRow>()(['task_id', 'title', 'status', 'client_name', 'progress_pct', 'deadline', 'at_risk']),
  taskRequirement: keysOf<TaskRequirementRow>()(['domain', 'required_qty', 'completed_qty', 'remaining_qty']),
  taskAssignment: keysOf<TaskAssignmentRow>()(['employee', 'assigned_at']),
  prestigeChange: keysOf<PrestigeChangeRow>()(['old', 'new', 'delta']),
  client: keysOf<ClientRow>()(['client_id', 'name', 'trust_level', 'tier', 'specialties']),
  clientHistory: keysOf<ClientHistoryRow>()(['client_name', 'trust_level', 'tasks_succeeded', 'tasks_failed', 'failure_rate_pct']),
  ledger: keysOf<LedgerRow>()(['id', 'occurred_at', 'category', 'amount_cents', 'ref_type', 'ref_id']),
  month: keysOf<MonthRow>()(['month_start', 'revenue_cents', 'cost_cents', 'return_cents', 'ending_funds_cents']),
} as const;

type WakeOf<T extends WakeEvent['type']> = Extract<WakeEvent, { type: T }>;

/** The keys of each wake event type in JSON order. */
export const WAKE_EVENT_KEYS = {
  task_half: keysOf<WakeOf<'task_half'>>()(['type', 'task_id', 'milestone_pct', 'handled']),
  task_completed: keysOf<WakeOf<'task_completed'>>()([
    'type',
    'task_id',
    'task_title',
    'client_name',
    'success',
    'funds_delta',
    'listed_reward',
    'trust_delta',
    'deadline_margin',
    'employees_assigned',
    'salary_bump_total_cents',
    'bankrupt',
  ]),
  monthly_payroll: keysOf<WakeOf<'monthly_payroll'>>()(['type', 'funds_after']),
  horizon_end: keysOf<WakeOf<'horizon_end'>>()(['type', 'reached']),
  bankruptcy: keysOf<WakeOf<'bankruptcy'>>()(['type', 'bankrupt']),
  unknown: keysOf<WakeOf<'unknown'>>()(['type', 'event_type']),
} as const satisfies { readonly [T in WakeEvent['type']]: readonly string[] };
