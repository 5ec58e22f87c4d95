/**
 * Simulation state: one object per company, mirroring the reference's database rows.
 * Instants are µs since epoch; money is integer cents; Numeric columns are Decimals.
 */
import type { Dec } from '../py/decimal.js';

/** The four work domains, in the reference's enum order (the population order of every draw). */
export const DOMAINS = ['research', 'inference', 'data_environment', 'training'] as const;
/** A work domain. */
export type Domain = (typeof DOMAINS)[number];
/** Domains in alphabetical order: the order SQLite returns rows keyed by (id, domain). */
export const DOMAINS_ALPHA: readonly Domain[] = ['data_environment', 'inference', 'research', 'training'];

/** Task lifecycle states (reference `TaskStatus`). */
export const TASK_STATUSES = ['market', 'planned', 'active', 'completed_success', 'completed_fail', 'cancelled'] as const;
/** A task status. */
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Ledger categories (reference `LedgerCategory`). */
export const LEDGER_CATEGORIES = ['monthly_payroll', 'task_reward', 'task_fail_penalty', 'task_cancel_penalty', 'payment_dispute'] as const;
/** A ledger category. */
export type LedgerCategory = (typeof LEDGER_CATEGORIES)[number];

/** Event types with their queue priority (lower first at the same instant). */
export const EVENT_PRIORITY = {
  task_completed: 0,
  payment_dispute: 1,
  bankruptcy: 2,
  task_half_progress: 3,
  horizon_end: 4,
} as const;
/** A scheduled event type. */
export type EventType = keyof typeof EVENT_PRIORITY;

/** An employee; `rates` are Numeric(12,4) units per business hour. */
export interface Employee {
  readonly id: number;
  readonly name: string;
  readonly tier: string;
  salaryCents: number;
  readonly rates: Record<Domain, Dec>;
}

/** A client; `trust` is the company's Numeric(6,3) trust with it, in [0, trust_max]. */
export interface Client {
  readonly id: number;
  readonly name: string;
  readonly rewardMultiplier: number;
  readonly tier: string;
  readonly specialties: readonly Domain[];
  readonly loyalty: number;
  trust: Dec;
}

/** One domain requirement of a task (Numeric(14,4) quantities). */
export interface Requirement {
  readonly domain: Domain;
  required: Dec;
  completed: Dec;
}

/** An employee assigned to a task. */
export interface Assignment {
  readonly employeeId: number;
  readonly assignedAt: number;
}

/** A task row; `id` is the insertion order (SQLite rowid), `reqs` are kept in alphabetical domain order. */
export interface Task {
  readonly id: number;
  readonly title: string;
  readonly clientId: number | null;
  status: TaskStatus;
  readonly requiredPrestige: number;
  readonly rewardCents: number;
  readonly rewardPrestigeDelta: Dec;
  readonly skillBoostPct: Dec;
  acceptedAt: number | null;
  deadline: number | null;
  completedAt: number | null;
  success: boolean | null;
  milestonePct: number;
  readonly requiredTrust: number;
  advertisedRewardCents: number | null;
  readonly marketSlot: number;
  owned: boolean;
  readonly reqs: Requirement[];
  readonly assignments: Assignment[];
}

/** A scheduled, unconsumed event. `seq` breaks exact-time ties deterministically (insertion order). */
export interface SimEvent {
  readonly seq: number;
  readonly type: EventType;
  readonly at: number;
  readonly taskId: number | null;
  readonly milestonePct: number | null;
  readonly dedupeKey: string | null;
}

/** A ledger row; `refId` is an employee or task id according to `refType`. */
export interface LedgerEntry {
  readonly id: number;
  readonly at: number;
  readonly category: LedgerCategory;
  readonly amountCents: number;
  readonly refType: 'employee' | 'task' | null;
  readonly refId: number | null;
}

/** Whole simulation state: plain data, snapshot-able to JSON. */
export interface SimState {
  readonly seed: number;
  readonly companyName: string;
  readonly startTime: number;
  readonly horizonEnd: number;
  simTime: number;
  fundsCents: number;
  readonly initialFundsCents: number;
  readonly prestige: Record<Domain, Dec>;
  readonly employees: Employee[];
  readonly clients: Client[];
  readonly tasks: Task[];
  events: SimEvent[];
  nextEventSeq: number;
  readonly ledger: LedgerEntry[];
  scratchpad: string;
  /** Company-scoped counters used by corrected modes (e.g. unique replacement titles). */
  replacementSerial: number;
}
