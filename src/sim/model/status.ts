/**
 * The one terminal rule and the one set of company figures. An episode is over when the company is bankrupt
 * (funds below zero) or the simulated clock has reached the horizon; every layer (the commands' outputs, the
 * step env, the turn protocol, the exporters, the bench) asks these functions instead of restating the rule.
 */
import { pyRound } from '../py/pyfloat.js';
import type { Client, SimState, Task } from './types.js';
import { mapPacked } from '../py/packed.js';

/** Why an episode ended by the simulation's own rule (the reference's `terminal_reason`). */
export type TerminalReason = 'bankruptcy' | 'horizon_end';

/** Where the company stands against the terminal rule. */
export interface Outcome {
  /** Bankrupt or at the horizon: no agent command can continue the episode. */
  readonly terminated: boolean;
  /** `bankruptcy` before `horizon_end` when both hold; null while the episode runs. */
  readonly reason: TerminalReason | null;
  readonly bankrupt: boolean;
  readonly horizonReached: boolean;
  readonly fundsCents: number;
  /** The horizon instant (µs since epoch). */
  readonly horizonEnd: number;
}

/** Funds below zero. */
export function isBankrupt(state: Pick<SimState, 'fundsCents'>): boolean {
  return state.fundsCents < 0;
}

/** The simulated clock has reached the horizon. */
export function isHorizonReached(state: Pick<SimState, 'simTime' | 'horizonEnd'>): boolean {
  return state.simTime >= state.horizonEnd;
}

/** `bankruptcy` before `horizon_end` when both hold; null while the episode runs (`Outcome.reason`). */
function reasonOf(bankrupt: boolean, horizonReached: boolean): TerminalReason | null {
  return bankrupt ? 'bankruptcy' : horizonReached ? 'horizon_end' : null;
}

/**
 * `outcome(state).reason` without the rest of the outcome (an object): what a caller that needs only the reason, once
 * per step, asks (`Env`'s steps). Null while the episode runs; `terminated` is `reason !== null`.
 */
export function terminalReason(state: Pick<SimState, 'fundsCents' | 'simTime' | 'horizonEnd'>): TerminalReason | null {
  return reasonOf(isBankrupt(state), isHorizonReached(state));
}

/** The terminal rule: is the episode over, and why. */
export function outcome(state: Pick<SimState, 'fundsCents' | 'simTime' | 'horizonEnd'>): Outcome {
  const bankrupt = isBankrupt(state);
  const horizonReached = isHorizonReached(state);
  return {
    terminated: bankrupt || horizonReached,
    reason: reasonOf(bankrupt, horizonReached),
    bankrupt,
    horizonReached,
    fundsCents: state.fundsCents,
    horizonEnd: state.horizonEnd,
  };
}

/** Monthly payroll total in cents. */
export function payrollOf(state: Pick<SimState, 'employees'>): number {
  let s = 0;
  for (const e of state.employees) s += e.salaryCents;
  return s;
}

/** A tasks array's claimed tasks and the array length they were taken at (see {@link claimedTasks}). */
interface Claimed {
  len: number;
  tasks: readonly Task[];
  /** What {@link taskCounts} last kept of these claimed tasks (null: nothing yet). */
  counts: KeptCounts | null;
}

/**
 * {@link taskCounts}' record of one claimed list (`tasks`, compared by reference: the list is a new array whenever a
 * task is claimed): how many of its tasks were owned and completed when last counted, and the others, in list order.
 * A completed task stays completed and owned (only the engine completes a task, an active one; no command takes a
 * task that is not planned or active, and no task is ever disowned), so it is counted once; every other task is
 * looked at again on each count (a cancelled task too: it is final as well, but nothing else depends on that).
 */
interface KeptCounts {
  readonly tasks: readonly Task[];
  completed: number;
  rest: Task[];
}
/**
 * Kept on the tasks array itself, under this symbol (a non-enumerable property: no snapshot, copy or comparison of the
 * array sees it), not in a module-level WeakMap, whose values V8's young-generation collector treats as reachable
 * while the map is in the old generation (a finished episode's lists were promoted). A frozen array (none of a
 * simulation's) keeps its record in `claimedFrozen`.
 */
const CLAIMED: unique symbol = Symbol('claimed');
const claimedFrozen = new WeakMap<readonly Task[], Claimed>();

function claimedOf(all: readonly Task[]): Claimed | undefined {
  const c = (all as { [CLAIMED]?: Claimed })[CLAIMED];
  return c !== undefined ? c : Object.isExtensible(all) ? undefined : claimedFrozen.get(all);
}

/** Record `tasks` as the claimed list of `all` at length `len`; the record. */
function setClaimed(all: readonly Task[], len: number, tasks: readonly Task[]): Claimed {
  const c = (all as { [CLAIMED]?: Claimed })[CLAIMED];
  if (c !== undefined) {
    c.len = len;
    c.tasks = tasks;
    return c;
  }
  const made: Claimed = { len, tasks, counts: null };
  if (Object.isExtensible(all)) Object.defineProperty(all, CLAIMED, { value: made });
  else claimedFrozen.set(all, made);
  return made;
}

/**
 * The tasks of `state` that are owned or out of the market, in id order (read only): every task that a status count,
 * an owned-task listing or the engine's active set can include (an active, planned, completed or cancelled task has
 * left the market), a few dozen where the market holds hundreds. A task leaves the market, and becomes owned, only
 * in `task accept`, which always appends its replacement to the same array; no task returns to the market. So the
 * list is taken again when the array's length changes and is current while it does not (later status changes move
 * a listed task between states that are all out of the market). A restored simulation has arrays of its own.
 */
export function claimedTasks(state: Pick<SimState, 'tasks'>): readonly Task[] {
  return claimed(state).tasks;
}

/** The record of `claimedTasks(state)`, current (its `tasks` taken again when the array's length changed). */
function claimed(state: Pick<SimState, 'tasks'>): Claimed {
  const all = state.tasks;
  const c = claimedOf(all);
  if (c !== undefined && c.len === all.length) return c;
  const tasks: Task[] = [];
  for (const t of all) if (t.owned || t.status !== 'market') tasks.push(t);
  return setClaimed(all, all.length, tasks);
}

/**
 * `task accept`'s update of the claimed list, after it took `task` out of the market and appended its replacement to
 * `all` (then `lenBefore + 1` long): when the list was current at `lenBefore` (the accept takes it to count the slot's
 * generation), it is that list with `task` inserted in id order, as a scan would find it (the appended replacement is
 * on the market, not owned), taken without the scan of every task. Anything else leaves the list to the next scan.
 */
export function claimAccepted(all: readonly Task[], task: Task, lenBefore: number): void {
  const c = claimedOf(all);
  const rep = all[lenBefore];
  if (c === undefined || c.len !== lenBefore || all.length !== lenBefore + 1 || rep === undefined || rep.owned || rep.status !== 'market') return;
  if (all[task.id] !== task || !(task.owned || task.status !== 'market')) return;
  // A new array: a caller may hold the old one.
  const tasks: Task[] = [];
  let placed = false;
  for (let i = 0; i < c.tasks.length; i++) {
    const t = c.tasks[i] as Task;
    if (t === task) return;
    if (!placed && t.id > task.id) {
      tasks.push(task);
      placed = true;
    }
    tasks.push(t);
  }
  if (!placed) tasks.push(task);
  setClaimed(all, all.length, tasks);
}

/** The company's tasks by state (`taskCounts`). */
export interface TaskCounts {
  active: number;
  planned: number;
  completed: number;
  cancelled: number;
}

/**
 * The company's tasks by state, as `company status` counts them. Every env step's status block counts them: the
 * completed tasks (most of an episode's claimed tasks) are counted once per claimed list and kept with it
 * (`KeptCounts`), the others looked at each time.
 */
export function taskCounts(state: Pick<SimState, 'tasks'>): TaskCounts {
  return countTasks(state, { active: 0, planned: 0, completed: 0, cancelled: 0 });
}

/**
 * `taskCounts(state)` written into `counts` (every field set) and returned: for a caller that reads the counts at once
 * and keeps one object for them (the env's in-process status blocks), no object a count.
 */
export function countTasks(state: Pick<SimState, 'tasks'>, counts: TaskCounts): TaskCounts {
  // The record itself (one lookup on the array, not `claimedTasks` and then the record).
  const c = claimed(state);
  const list = c.tasks;
  let kept = c.counts;
  if (kept === null || kept.tasks !== list) {
    kept = { tasks: list, completed: 0, rest: [] };
    for (const t of list) {
      if (t.owned && (t.status === 'completed_success' || t.status === 'completed_fail')) kept.completed++;
      else kept.rest.push(t);
    }
    c.counts = kept;
  }
  counts.active = 0;
  counts.planned = 0;
  counts.completed = kept.completed;
  counts.cancelled = 0;
  const rest = kept.rest;
  let n = 0;
  for (let i = 0; i < rest.length; i++) {
    const t = rest[i] as Task;
    rest[n++] = t;
    if (!t.owned) continue;
    if (t.status === 'active') counts.active++;
    else if (t.status === 'planned') counts.planned++;
    else if (t.status === 'completed_success' || t.status === 'completed_fail') {
      // Completed since the last count: counted from now on with the others.
      counts.completed++;
      kept.completed++;
      n--;
    } else if (t.status === 'cancelled') counts.cancelled++;
  }
  // Only when a task left the list (rare): setting an array's length is a call into the runtime even when unchanged.
  if (n !== rest.length) rest.length = n;
  return counts;
}

/** Funds over monthly payroll, rounded like Python's `round(x, 2)`; null without payroll (`CompanyFigures.runwayMonths`). */
export function runwayMonths(fundsCents: number, payrollCents: number): number | null {
  return payrollCents > 0 ? pyRound(fundsCents / payrollCents, 2) : null;
}

/** The company figures every status view reports (`company status`, the env's status block, the turn context). */
export interface CompanyFigures extends Outcome {
  readonly simTime: number;
  readonly monthlyPayrollCents: number;
  /** Funds over monthly payroll, rounded like Python's `round(x, 2)`; null without payroll. */
  readonly runwayMonths: number | null;
  readonly tasks: TaskCounts;
  readonly employees: number;
}

/** The company's figures in one pass: the terminal rule, payroll and runway, task counts. */
export function companyFigures(state: SimState): CompanyFigures {
  const payroll = payrollOf(state);
  // The outcome's fields copied one by one, not spread: V8 builds a spread object on a slow path
  // (6 µs of the 8 µs this took, called twice per env step; same fields, same order).
  const o = outcome(state);
  return {
    terminated: o.terminated,
    reason: o.reason,
    bankrupt: o.bankrupt,
    horizonReached: o.horizonReached,
    fundsCents: o.fundsCents,
    horizonEnd: o.horizonEnd,
    simTime: state.simTime,
    monthlyPayrollCents: payroll,
    runwayMonths: runwayMonths(state.fundsCents, payroll),
    tasks: taskCounts(state),
    employees: state.employees.length,
  };
}

/** The last order of a clients array: the same client objects, with the names they had then. */
interface ClientOrder {
  input: Client[];
  names: string[];
  sorted: readonly Client[];
}
/**
 * Kept on the clients array itself, under this symbol (a non-enumerable property, as `CLAIMED`), not in a module-level
 * WeakMap (an episode's order was copied by the scavenge after it ended, and promoted when it was taken before the
 * one before). A frozen array keeps its order in `clientOrdersFrozen`.
 */
const CLIENT_ORDER: unique symbol = Symbol('clientOrder');
const clientOrdersFrozen = new WeakMap<readonly Client[], ClientOrder>();

function clientOrderOf(clients: readonly Client[]): ClientOrder | undefined {
  const c = (clients as { [CLIENT_ORDER]?: ClientOrder })[CLIENT_ORDER];
  return c !== undefined ? c : Object.isExtensible(clients) ? undefined : clientOrdersFrozen.get(clients);
}

function setClientOrder(clients: readonly Client[], order: ClientOrder): void {
  const c = (clients as { [CLIENT_ORDER]?: ClientOrder })[CLIENT_ORDER];
  if (c !== undefined) {
    c.input = order.input;
    c.names = order.names;
    c.sorted = order.sorted;
  } else if (Object.isExtensible(clients)) Object.defineProperty(clients, CLIENT_ORDER, { value: order });
  else clientOrdersFrozen.set(clients, order);
}

/**
 * Clients ordered by name (the reference's `order_by(Client.name)`; names compare as SQLite compares bytes, and are
 * unique). The same array is returned while no client or name changed, so callers may key caches on it; read only.
 */
export function clientsByName(clients: readonly Client[]): readonly Client[] {
  const c = clientOrderOf(clients);
  if (c !== undefined && c.input.length === clients.length) {
    let same = true;
    for (let i = 0; i < clients.length && same; i++) same = c.input[i] === clients[i] && c.names[i] === (clients[i] as Client).name;
    if (same) return c.sorted;
  }
  const input = [...clients];
  const sorted = Object.freeze([...clients].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
  setClientOrder(clients, { input, names: mapPacked(input, (x) => x.name), sorted });
  return sorted;
}
