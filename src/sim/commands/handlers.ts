/**
 * Command handlers: each validates, applies and renders one agent command exactly as the reference's
 * `cli/*_commands.py` does. A handler either returns its typed result (src/sim/commands/results.ts: the JSON it
 * prints, fields in output order) or throws `CommandError` before changing anything (the reference rolls the
 * whole command back on any error).
 */
import { addBusinessHours, addWholeBusinessHours, civilFromDays, dayOf, firstBusinessOfMonth, isoformat, makeInstant, nextMonthStart, parseMdy, parseYm } from '../model/calendar.js';
import { D, type Dec, decFromFloat, dmax, toFloat } from '../py/decimal.js';
import { activeTasks, advanceTime, decFromRounded3, fetchNextEvent, quantize, recalculateEtas, type Ctx, type UuidFn } from '../model/engine.js';
import { F, type Float, listChain, type ListChain, memoList, memoRendered } from '../py/pyjson.js';
import { pyFormatFixed, pyRound } from '../py/pyfloat.js';
import { DOMAINS_ALPHA, LEDGER_CATEGORIES, TASK_STATUSES, type Client, type Domain, type Employee, type SimState, type Task } from '../model/types.js';
import { marketTask, replacementTemplate, type WorldMemo } from '../model/world-cache.js';
import { deadlineBusinessDays } from '../model/deadline.js';
import { claimAccepted, claimedTasks, clientsByName, companyFigures, isBankrupt, outcome } from '../model/status.js';
import { marketEntry, type WorldEntries, worldEntries } from './market-entry.js';
import { mapPacked } from '../py/packed.js';
import type {
  ClientHistoryResult,
  ClientListResult,
  CompanyStatusResult,
  EmployeeListResult,
  FinanceLedgerResult,
  MarketBrowseResult,
  MarketTaskRow,
  MonthRow,
  LedgerRow,
  PrestigeChangeRow,
  ReportMonthlyResult,
  ScratchpadClearResult,
  ScratchpadReadResult,
  ScratchpadWriteResult,
  SimResumeResult,
  TaskAcceptResult,
  TaskAssignResult,
  TaskCancelResult,
  TaskDispatchResult,
  TaskInspectResult,
  TaskListResult,
  WakeEvent,
} from './results.js';
import { before, listingOrder, marketOrder } from './market-order.js';
import type { ParsedOptions } from './spec.js';

/** A rejected command: rendered as `{"error": message}` with the given exit code, state untouched. */
export class CommandError extends Error {
  constructor(message: string, readonly exit = 1) {
    super(message);
  }
}

/** Everything a handler needs. */
export interface HandlerCtx extends Ctx {
  readonly uuid: UuidFn;
  /** Resolve a UUID string (any Python-accepted form) to an entity id of the given kind. */
  readonly fromUuid: (kind: 'task' | 'employee', hex: string) => number | null;
  /** The simulation's memos (its `Simulation.memos`). */
  readonly memos: StateMemos;
}

/**
 * What the handlers keep of one simulation's state between its commands (each a memo: a missing one is rebuilt, and
 * what a command returns is the same either way). A simulation holds its own (`Simulation.memos`, handed to the
 * handlers in their context) instead of module-level WeakMaps keyed by its state: V8's young-generation collector
 * treats the values of a WeakMap that lives in the old generation as reachable, so an episode's memos (its listing,
 * its market order, its listing texts) and all they reach outlived a finished episode by one more collection and were
 * promoted: most of what a bulk run's workers promoted, to be walked and swept by the major collections.
 */
export interface StateMemos {
  /** The last `company status` result (see `companyStatus`). */
  companyStatus: CompanyStatusResult | null;
  /** The last unfiltered listing (see `Listing`, `browsable`). */
  listing: Listing | null;
  /** The tasks `task accept` took out of the market, in order (see `acceptLog`). */
  acceptLog: Task[] | null;
  /** The market by reward (see `marketByReward`). */
  market: { len: number; list: Task[]; spare: Task[] } | null;
  /** The listing entries and the listings' text chain (see `listingOf`). */
  entries: { world: WorldEntries; chain: ListChain } | null;
  /** The memo of the world template the simulation was created from (null: restored from a snapshot). */
  world: WorldMemo | null;
  /** The employee list's employees by name (see `employeeByName`). */
  employees: { list: readonly Employee[]; len: number; byName: Map<string, Employee> } | null;
}

/** Empty memos, for a new simulation (or a context that keeps none: every call rebuilds then). */
export function stateMemos(): StateMemos {
  return { companyStatus: null, listing: null, acceptLog: null, market: null, entries: null, world: null, employees: null };
}

/** A context's memos: its own, or (a context of the caller's, such as `{ state, cfg }`) new ones for this call. */
function memosOf(ctx: Ctx & { readonly memos?: StateMemos }): StateMemos {
  return ctx.memos ?? stateMemos();
}

function str(opts: ParsedOptions, k: string): string {
  return String(opts[k]);
}

/** Python `UUID(s)` acceptance: optional braces/urn prefix, dashes removed, 32 hex digits. */
export function parseUuidHex(s: string): string | null {
  // Every step below only removes characters: a string shorter than 32 cannot end as 32 hex digits (task titles,
  // employee names). Same result, without the four regex replacements.
  if (s.length < 32) return null;
  let h = s.trim();
  h = h.replace(/^urn:/, '').replace(/^uuid:/, '');
  h = h.replace(/^\{|\}$/g, '').replace(/-/g, '');
  return /^[0-9a-fA-F]{32}$/.test(h) ? h.toLowerCase() : null;
}

const STATUS_RANK: Record<string, number> = { market: 0, planned: 1, active: 2 };

/** A simulation's task ids by title, in id order (read only). */
export interface TitleLookup {
  get(title: string): readonly number[] | undefined;
}

/** Reference `_resolve_task`: by UUID, else by title preferring market < planned < active < others, then rowid. */
export function resolveTask(ctx: HandlerCtx, ident: string, byTitle: TitleLookup): Task | null {
  const hex = parseUuidHex(ident);
  if (hex !== null) {
    const id = ctx.fromUuid('task', hex);
    return id === null ? null : (ctx.state.tasks[id] ?? null);
  }
  const ids = byTitle.get(ident);
  if (!ids || ids.length === 0) return null;
  let best: Task | null = null;
  for (const id of ids) {
    const t = ctx.state.tasks[id] as Task;
    if (best === null || (STATUS_RANK[t.status] ?? 9) < (STATUS_RANK[best.status] ?? 9)) best = t;
  }
  return best;
}

function resolveEmployee(ctx: HandlerCtx, ident: string): Employee | null {
  const hex = parseUuidHex(ident);
  if (hex !== null) {
    const id = ctx.fromUuid('employee', hex);
    return id === null ? null : (ctx.state.employees[id] ?? null);
  }
  return employeeByName(ctx.memos, ctx.state.employees, ident);
}

/**
 * The employees of `employees` by name, the first of a name as `find` gives it, indexed once per list and kept in the
 * simulation's memos (`task assign` looks up every name it is given). Names are readonly and an employee list never
 * changes length in a simulation; another list, or one of another length than the index was built for, is indexed
 * again, and a name not indexed takes the scan.
 */
function employeeByName(memos: StateMemos, employees: readonly Employee[], ident: string): Employee | null {
  let ix = memos.employees;
  if (ix === null || ix.list !== employees || ix.len !== employees.length) {
    const byName = new Map<string, Employee>();
    for (const e of employees) if (!byName.has(e.name)) byName.set(e.name, e);
    memos.employees = ix = { list: employees, len: employees.length, byName };
  }
  const hit = ix.byName.get(ident);
  if (hit !== undefined) return hit;
  return employees.find((e) => e.name === ident) ?? null;
}

/** Whether `t` has an assignment of employee `id` (a loop: `some` with a closure, per name per task, showed in profiles). */
function hasAssignee(t: Task, id: number): boolean {
  const as = t.assignments;
  for (let i = 0; i < as.length; i++) if ((as[i] as Task['assignments'][number]).employeeId === id) return true;
  return false;
}

/** Whether an employee of `emps` not assigned to `t` comes twice in `emps` (by pairs: for a few employees). */
export function repeatsUnassigned(t: Task, emps: readonly Employee[]): boolean {
  for (let i = 1; i < emps.length; i++) {
    const id = (emps[i] as Employee).id;
    for (let j = 0; j < i; j++) if ((emps[j] as Employee).id === id && !hasAssignee(t, id)) return true;
  }
  return false;
}

/** {@link repeatsUnassigned} by a Set of the ids seen (for long lists). */
export function repeatsUnassignedLong(t: Task, emps: readonly Employee[]): boolean {
  const seen = new Set<number>();
  for (const e of emps) {
    if (hasAssignee(t, e.id)) continue;
    if (seen.has(e.id)) return true;
    seen.add(e.id);
  }
  return false;
}

/** Whether `t` has an assignment of an employee assigned to `u` (loops: a Set of `u`'s ids and `some` with a closure per claimed task showed in profiles). */
function sharesAssignee(t: Task, u: Task): boolean {
  const as = u.assignments;
  for (let i = 0; i < as.length; i++) if (hasAssignee(t, (as[i] as Task['assignments'][number]).employeeId)) return true;
  return false;
}

/** `--employees A,B`: the non-empty trimmed names, memoised for the last text (agents repeat one staffing). */
let lastNamesText: string | null = null;
let lastNames: readonly string[] = [];
function employeeNames(text: string): readonly string[] {
  if (text === lastNamesText) return lastNames;
  const names: string[] = [];
  for (const part of text.split(',')) {
    const n = part.trim();
    if (n.length > 0) names.push(n);
  }
  lastNamesText = text;
  lastNames = names; // not frozen: read by the loops below only (a frozen array's iterator is slower)
  return lastNames;
}

function clientName(ctx: Ctx, t: Task): string | null {
  return t.clientId !== null ? (ctx.state.clients[t.clientId]?.name ?? null) : null;
}

function progressPct(t: Task): number {
  let req = 0;
  let done = 0;
  for (const r of t.reqs) req += toFloat(r.required);
  for (const r of t.reqs) done += toFloat(r.completed);
  return req > 0 ? (done / req) * 100 : 0.0;
}

/**
 * The last list `sortedNames` sorted: the assignees' names in assignment order, and those names sorted. `task assign`
 * and `task dispatch` report the same staffing task after task (agents assign one team); the names are read from the
 * employees on every call and compared with the last ones, so the sort is skipped only for the very same names.
 */
let lastAssignees: readonly string[] = [];
let lastSorted: readonly string[] = [];

/** The assignees' names sorted (`.sort()`: by UTF-16 code units), a new array; 'unknown' for an id without an employee. */
export function sortedNames(ctx: Ctx, t: Task): string[] {
  const as = t.assignments;
  const employees = ctx.state.employees;
  let same = as.length === lastAssignees.length;
  for (let i = 0; i < as.length && same; i++) same = (employees[(as[i] as Task['assignments'][number]).employeeId]?.name ?? 'unknown') === lastAssignees[i];
  if (same) return lastSorted.slice();
  const names = mapPacked(as, (a) => employees[a.employeeId]?.name ?? 'unknown');
  lastAssignees = names;
  lastSorted = names.slice().sort();
  return lastSorted.slice();
}

// ---------------------------------------------------------------------------------------------

/** `sim init`: only one simulation per environment (the reference refuses a second init, after parsing the date). */
export function simInit(opts: ParsedOptions): never {
  const date = str(opts, 'start_date');
  if (parseMdy(date) === null) throw new CommandError(`Invalid value: Invalid date format: ${date}. Use MM/DD/YYYY.`, 2);
  throw new CommandError('A simulation already exists. Only one simulation per database is supported.');
}

/** Whether any task is active (active tasks are among the claimed ones). */
function hasActive(state: SimState): boolean {
  for (const t of claimedTasks(state)) if (t.status === 'active') return true;
  return false;
}

/** `sim resume`: advance to the next event (one advance: every advance yields a wake event). */
export function simResume(ctx: HandlerCtx): SimResumeResult {
  const { state } = ctx;
  if (!hasActive(state)) {
    throw new CommandError('No active tasks. Accept and dispatch a task before calling sim resume. Use: market browse → task accept → task dispatch → sim resume');
  }
  const oldTime = state.simTime;
  const wakes: WakeEvent[] = [];
  let balance = 0;
  let payrolls = 0;
  let events = 0;
  let checkpoint: SimResumeResult['checkpoint_event_type'] = null;
  for (;;) {
    const ev = fetchNextEvent(state, state.horizonEnd);
    if (ev === null) break;
    checkpoint = ev.type;
    const r = advanceTime(ctx, ev.at, ctx.uuid);
    events += r.eventsProcessed;
    payrolls += r.payrollsApplied;
    balance += r.balanceDelta;
    wakes.push(...r.wakeEvents);
    if (r.bankrupt || r.horizonReached) break;
    if (r.wakeEvents.length > 0) break;
    if (!hasActive(state)) break;
  }
  const end = outcome(state);
  const now = isoformat(state.simTime);
  return {
    ok: true,
    old_sim_time: ctx.cfg.fixes.resume_old_sim_time ? isoformat(oldTime) : now,
    new_sim_time: now,
    checkpoint_event_type: checkpoint,
    events_processed: events,
    payrolls_applied: payrolls,
    balance_delta: balance,
    wake_events: wakes,
    bankrupt: end.bankrupt,
    horizon_reached: end.horizonReached,
    terminal_reason: end.reason,
  };
}

/** Next payroll instant as `company status` reports it (always next month unless the fix is on). */
export function nextPayroll(ctx: Ctx): number {
  const t = ctx.state.simTime;
  if (ctx.cfg.fixes.next_payroll) {
    const thisMonth = firstBusinessOfMonth(t);
    if (thisMonth > t) return thisMonth;
  }
  return firstBusinessOfMonth(nextMonthStart(t));
}

/**
 * Whether two `company status` results print the same text: every field equal (numbers by `Object.is`: a float's text
 * tells -0 from 0). Every key of the result is compared (test/unit/step-memos.test.ts changes each one in turn).
 */
export function sameCompanyStatus(a: CompanyStatusResult, b: CompanyStatusResult): boolean {
  const ap = a.prestige;
  const bp = b.prestige;
  // Both built by `companyStatusOf`: the same domains, in this order.
  for (const d of DOMAINS_ALPHA) if (!Object.is(ap[d], bp[d])) return false;
  const at = a.tasks;
  const bt = b.tasks;
  return (
    a.funds_cents === b.funds_cents &&
    a.sim_time === b.sim_time &&
    a.monthly_payroll_cents === b.monthly_payroll_cents &&
    a.next_payroll === b.next_payroll &&
    a.employees === b.employees &&
    at.active === bt.active &&
    at.planned === bt.planned &&
    at.completed === bt.completed &&
    at.cancelled === bt.cancelled &&
    Object.is(a.risk.months_runway, b.risk.months_runway) &&
    a.risk.bankrupt === b.risk.bankrupt &&
    a.horizon_end === b.horizon_end &&
    a.company_id === b.company_id &&
    a.company_name === b.company_name
  );
}

/**
 * `company status`. While the figures it reports do not change (an agent's steps mostly read: no time passes, no money
 * moves), a result that prints the same as this simulation's last one is that same object, deep-frozen and its text
 * memoised (`memoRendered`): a reply copies the text of the last such step (~750 bytes of escaped JSON, most of a
 * JSON `step_batch` entry's cost) instead of rendering it again. The built result itself is compared
 * (`sameCompanyStatus`), so what is returned always prints what a fresh result would.
 */
export function companyStatus(ctx: HandlerCtx): CompanyStatusResult {
  const r = companyStatusOf(ctx);
  const memos = ctx.memos;
  const last = memos.companyStatus;
  if (last !== null && sameCompanyStatus(last, r)) return memoRendered(last);
  memos.companyStatus = r;
  return r;
}

function companyStatusOf(ctx: HandlerCtx): CompanyStatusResult {
  const { state } = ctx;
  const prestige = {} as Record<Domain, Float>;
  for (const d of DOMAINS_ALPHA) prestige[d] = F(toFloat(state.prestige[d]));
  const f = companyFigures(state);
  return {
    company_id: ctx.uuid('company', 0),
    company_name: state.companyName,
    funds_cents: f.fundsCents,
    prestige,
    sim_time: isoformat(f.simTime),
    horizon_end: isoformat(f.horizonEnd),
    tasks: f.tasks,
    employees: f.employees,
    next_payroll: isoformat(nextPayroll(ctx)),
    monthly_payroll_cents: f.monthlyPayrollCents,
    risk: {
      months_runway: f.runwayMonths !== null ? F(f.runwayMonths) : null,
      bankrupt: f.bankrupt,
    },
  };
}

/** `employee list`. */
export function employeeList(ctx: HandlerCtx): EmployeeListResult {
  const { state } = ctx;
  const active = activeTasks(state);
  const employees = mapPacked(state.employees, (e) => {
    const rates = {} as Record<Domain, Float>;
    for (const d of DOMAINS_ALPHA) rates[d] = F(pyRound(toFloat(e.rates[d]), 2));
    return {
      name: e.name,
      tier: e.tier,
      salary_cents: e.salaryCents,
      skill_rates: rates,
      active_tasks: mapPacked(active.filter((t) => t.assignments.some((a) => a.employeeId === e.id)), (t) => t.title),
    };
  });
  return { count: employees.length, employees };
}

/** `pm[d]` by comparisons of the (interned) domain texts: a keyed load with a varying key was a generic lookup per requirement. */
function prestigeOf(pm: Readonly<Record<Domain, number>>, d: Domain): number {
  return d === 'research' ? pm.research : d === 'inference' ? pm.inference : d === 'data_environment' ? pm.data_environment : d === 'training' ? pm.training : pm[d];
}

/** Prestige per domain truncated to int, as `market browse` compares it. */
function intPrestige(ctx: Ctx): Record<Domain, number> {
  const p = ctx.state.prestige;
  return {
    research: Math.trunc(toFloat(p.research)),
    inference: Math.trunc(toFloat(p.inference)),
    data_environment: Math.trunc(toFloat(p.data_environment)),
    training: Math.trunc(toFloat(p.training)),
  };
}

/**
 * The unfiltered listing of a company and what it was computed from. It depends on the market (its membership changes
 * only with the task count, as `marketByReward` relies on; a listed task's own fields never change), the prestige per
 * domain and the clients' trust. Prestige and trust are immutable Decimals replaced on every change, so unchanged
 * references mean unchanged values: the listing is reused until one of them is replaced (a Discrete step computes it
 * for its frame, and most steps change neither).
 *
 * A replaced value that decides nothing differently keeps the listing too (every `sim resume` replaces them: daily
 * prestige and trust decay): the listing reads prestige only truncated to int (`pm`), and a client's trust only
 * through `trust < requiredTrust` of its trust-gated tasks that reach that test. `trustLo[i]`/`trustHi[i]` are the
 * largest such `requiredTrust` the trust of client i met and the smallest it did not (-Infinity/Infinity when none):
 * any trust in `[trustLo[i], trustHi[i])` passes and fails the same tasks. With `pm` unchanged the same tasks reach
 * the trust test, so those bounds decide the whole listing. When the task count grew (accepts) and the gates decide
 * the same, the listing is extended (`listingExtended`) instead of listing the whole market again.
 */
interface Listing {
  readonly len: number;
  /**
   * The prestige per domain (in `DOMAINS_ALPHA` order) and each client's trust the listing was taken with, or took in
   * since (`decidesSame`, in place: a listing extended from another takes over its arrays, and the other is dropped).
   */
  readonly prestige: Dec[];
  readonly trust: Dec[];
  readonly pm: Readonly<Record<Domain, number>>;
  /** Narrowed in place by `listingExtended` (the listing it extends is replaced by the one it builds, which takes them). */
  readonly trustLo: number[];
  readonly trustHi: number[];
  /** The length of the state's accept log (`StateMemos.acceptLog`) when the listing was taken. */
  readonly accepted: number;
  readonly tasks: readonly Task[];
}

/*
 * The accept log (`StateMemos.acceptLog`): the tasks `task accept` took out of the market, in order (one per task
 * appended: its replacement). With the log's length when a listing was taken, the tasks that left the market since are
 * known without reading every listed task (`listingExtended`).
 */

/**
 * Whether `c`, computed at `c.len` tasks, decides every gate as the state's prestige and trust do now. When it does,
 * the replaced values are taken into `c` (their references: the next call compares those alone).
 */
function decidesSame(c: Listing, s: SimState): boolean {
  const clients = s.clients;
  const trust = c.trust;
  if (clients.length !== trust.length) return false;
  // The domains by name, in DOMAINS_ALPHA order (a keyed load with a varying key is a generic lookup).
  const p = s.prestige;
  const cp = c.prestige;
  const pSame = p.data_environment === cp[0] && p.inference === cp[1] && p.research === cp[2] && p.training === cp[3];
  let tSame = true;
  for (let i = 0; i < clients.length && tSame; i++) if ((clients[i] as (typeof clients)[number]).trust !== trust[i]) tSame = false;
  if (pSame && tSame) return true;
  // Some value was replaced: the same decisions when each decides as the one the listing was computed from.
  if (!pSame) {
    const pm = c.pm;
    if (Math.trunc(toFloat(p.research)) !== pm.research || Math.trunc(toFloat(p.inference)) !== pm.inference) return false;
    if (Math.trunc(toFloat(p.data_environment)) !== pm.data_environment || Math.trunc(toFloat(p.training)) !== pm.training) return false;
  }
  if (!tSame) {
    for (let i = 0; i < clients.length; i++) {
      const c0 = clients[i] as (typeof clients)[number] | undefined;
      if (c0 === undefined || c0.trust === trust[i]) continue;
      const lo = c.trustLo[i] as number;
      const hi = c.trustHi[i] as number;
      if (lo === -Infinity && hi === Infinity) continue;
      const tf = toFloat(c0.trust);
      // Negated: a NaN trust is not known to decide the same.
      if (!(tf >= lo && tf < hi)) return false;
    }
  }
  // Taken in place (see `Listing.prestige`): no arrays per listing.
  cp[0] = p.data_environment;
  cp[1] = p.inference;
  cp[2] = p.research;
  cp[3] = p.training;
  for (let i = 0; i < clients.length; i++) trust[i] = (clients[i] as (typeof clients)[number]).trust;
  return true;
}

/**
 * Whether a market task passes the prestige and trust gates of `market browse`. `pm`: `intPrestige`, `maxP` and `minP`
 * its largest and smallest; `trustF`: each client's trust as a float by client index, converted on first use (toFloat
 * per listed task showed in profiles); `trustLo`/`trustHi`, when given, narrowed to the bounds of the trust tests
 * made (see `Listing`).
 */
function gatesPass(t: Task, pm: Readonly<Record<Domain, number>>, maxP: number, minP: number, clients: SimState['clients'], trustF: (number | undefined)[], trustLo: number[] | null, trustHi: number[] | null): boolean {
  if (t.requiredPrestige > maxP) return false;
  // Every domain's prestige is at least minP: nothing to look up when the task asks for no more.
  // Loops, not some/every with closures: this runs for every market task of every listing.
  if (!(t.requiredPrestige <= minP)) {
    for (const r of t.reqs) if (!(prestigeOf(pm, r.domain) >= t.requiredPrestige)) return false;
  }
  if (t.requiredTrust > 0 && t.clientId !== null) {
    const c = clients[t.clientId];
    let tf = 0.0;
    if (c) {
      tf = trustF[t.clientId] ?? (trustF[t.clientId] = toFloat(c.trust));
      if (trustLo !== null && trustHi !== null) {
        if (tf < t.requiredTrust) {
          if (t.requiredTrust < (trustHi[t.clientId] as number)) trustHi[t.clientId] = t.requiredTrust;
        } else if (t.requiredTrust > (trustLo[t.clientId] as number)) trustLo[t.clientId] = t.requiredTrust;
      }
    }
    if (tf < t.requiredTrust) return false;
  }
  return true;
}

/**
 * The listing after tasks were appended since `c` (accepts: each leaves the market and appends its replacement), with
 * every gate deciding as in `c` (`decidesSame`): `c`'s tasks still on the market merged with the appended ones that
 * pass the gates, in listing order, without reading the rest of the market. Stored as the current listing.
 */
function listingExtended(c: Listing, st: SimState, memos: StateMemos): readonly Task[] {
  const pm = c.pm;
  const maxP = Math.max(pm.research, pm.inference, pm.data_environment, pm.training);
  const minP = Math.min(pm.research, pm.inference, pm.data_environment, pm.training);
  const trustLo = c.trustLo;
  const trustHi = c.trustHi;
  const trustF: (number | undefined)[] = [];
  const added: Task[] = [];
  for (let i = c.len; i < st.tasks.length; i++) {
    const t = st.tasks[i] as Task;
    if (t.status === 'market' && gatesPass(t, pm, maxP, minP, st.clients, trustF, trustLo, trustHi)) added.push(t);
  }
  const log = memos.acceptLog;
  const accepted = log === null ? 0 : log.length;
  let out: Task[];
  if (log !== null && accepted - c.accepted === st.tasks.length - c.len) {
    // Every task appended since came with an accept logged since: the tasks that left the market are those logged.
    // The appended ones (in listing order) merged in at their places as the listed ones are copied: one pass, no
    // insertion moving the rest of the listing (the order is total: each goes before the first task not before it).
    if (added.length > 1) added.sort(listingOrder);
    out = [];
    let j = 0;
    for (let i = 0; i < c.tasks.length; i++) {
      const t = c.tasks[i] as Task;
      let left = false;
      for (let k = c.accepted; k < accepted; k++) if (log[k] === t) left = true;
      if (left) continue;
      while (j < added.length && before(added[j] as Task, t)) out.push(added[j++] as Task);
      out.push(t);
    }
    while (j < added.length) out.push(added[j++] as Task);
  } else {
    // `marketOrder` over `added` (every one on the market) from 0: `c.tasks` less the tasks that left the market,
    // merged with `added` sorted, in the order `marketByReward` keeps.
    out = marketOrder(added, c.tasks, 0);
  }
  const tasks = Object.freeze(out);
  memos.listing = { len: st.tasks.length, prestige: c.prestige, trust: c.trust, pm, trustLo, trustHi, accepted, tasks };
  return tasks;
}

/**
 * Market tasks a company can see: sorted by reward descending (ties by rowid), passing prestige and trust gates.
 * Read-only (the unfiltered listing is shared while it is current, and frozen).
 */
export function browsable(ctx: Ctx & { readonly memos?: StateMemos }, filter: { domain?: Domain; rewardMin?: number } = {}): readonly Task[] {
  const unfiltered = filter.domain === undefined && filter.rewardMin === undefined;
  const memos = memosOf(ctx);
  if (unfiltered) {
    const c = memos.listing;
    if (c !== null && c.len <= ctx.state.tasks.length && decidesSame(c, ctx.state)) return c.len === ctx.state.tasks.length ? c.tasks : listingExtended(c, ctx.state, memos);
  }
  const pm = intPrestige(ctx);
  const maxP = Math.max(pm.research, pm.inference, pm.data_environment, pm.training);
  const minP = Math.min(pm.research, pm.inference, pm.data_environment, pm.training);
  const out: Task[] = [];
  const clients = ctx.state.clients;
  const trustF: (number | undefined)[] = [];
  // Per client index, the trust bounds within which the listing stays the same (see `Listing`); unfiltered only.
  const trustLo: number[] | null = unfiltered ? mapPacked(clients, () => -Infinity) : null;
  const trustHi: number[] | null = unfiltered ? mapPacked(clients, () => Infinity) : null;
  for (const t of marketByReward(ctx.state, memos)) {
    if (t.status !== 'market') continue;
    if (filter.rewardMin !== undefined && t.rewardCents < filter.rewardMin) continue;
    if (filter.domain !== undefined) {
      let has = false;
      for (const r of t.reqs) if (r.domain === filter.domain) has = true;
      if (!has) continue;
    }
    if (gatesPass(t, pm, maxP, minP, clients, trustF, trustLo, trustHi)) out.push(t);
  }
  if (unfiltered) {
    const st = ctx.state;
    memos.listing = {
      len: st.tasks.length,
      prestige: mapPacked(DOMAINS_ALPHA, (d) => st.prestige[d]),
      trust: mapPacked(st.clients, (c) => c.trust),
      pm,
      trustLo: trustLo as number[],
      trustHi: trustHi as number[],
      accepted: memos.acceptLog?.length ?? 0,
      tasks: Object.freeze(out),
    };
  }
  return out;
}

/**
 * Market tasks by reward descending, ties by rowid (cached). Market membership only changes on
 * `task accept`, which always appends a replacement task, so the task count is a sufficient version;
 * a new version updates the previous order (`marketOrder`) instead of sorting again, into the array of the order
 * before (the two are swapped: the returned list is read by the caller before the next update).
 */
function marketByReward(state: SimState, memos: StateMemos): Task[] {
  const c = memos.market;
  if (c === null || c.len > state.tasks.length) {
    const list = marketOrder(state.tasks, null, 0);
    memos.market = { len: state.tasks.length, list, spare: [] };
    return list;
  }
  if (c.len === state.tasks.length) return c.list;
  const list = marketOrder(state.tasks, c.list, c.len, c.spare);
  c.spare = c.list;
  c.list = list;
  c.len = state.tasks.length;
  return list;
}

/**
 * The listing entries (by task id, see `WorldEntries`) of the episodes of one generated world: kept in the world
 * template's memo (`WorldTemplate.memo`, shared by every simulation created from it). An episode on a seed already
 * played finds its tasks' entries at their ids (the same tasks, replacements included while the same commands are
 * played), where a per-simulation record started empty. A simulation restored from a snapshot (no template) finds them
 * here, through the Decimal of its first task's prestige delta.
 */
const entriesByWorld = new WeakMap<Dec, WorldEntries>();
/** A company's listing entries by task id (see `marketEntry`), and its listings' text chain (`memoList`). */
function listingOf(state: SimState, memos: StateMemos): { world: WorldEntries; chain: ListChain } {
  let listing = memos.entries;
  if (listing === null) {
    let world: WorldEntries | undefined;
    const wm = memos.world;
    if (wm !== null) world = (wm.entries ??= worldEntries()) as WorldEntries;
    else {
      const key = state.tasks[0]?.rewardPrestigeDelta;
      world = key !== undefined ? entriesByWorld.get(key) : undefined;
      if (world === undefined) {
        world = worldEntries();
        if (key !== undefined) entriesByWorld.set(key, world);
      }
    }
    memos.entries = listing = { world, chain: listChain() };
  }
  return listing;
}

/** `market browse [--domain D] [--reward-min-cents N] [--limit N] [--offset N]`. */
export function marketBrowse(ctx: HandlerCtx, opts: ParsedOptions): MarketBrowseResult {
  const limit = opts['limit'] !== undefined ? Number(opts['limit']) : ctx.cfg.world.market_browse_default_limit;
  const offset = opts['offset'] !== undefined ? Number(opts['offset']) : 0;
  const filter: { domain?: Domain; rewardMin?: number } = {};
  if (opts['domain'] !== undefined) filter.domain = opts['domain'] as Domain;
  if (opts['reward_min_cents'] !== undefined) filter.rewardMin = Number(opts['reward_min_cents']);
  const all = browsable(ctx, filter);
  const listing = listingOf(ctx.state, ctx.memos);
  const world = listing.world;
  const tasks: MarketTaskRow[] = [];
  // By index: `all` may be the shared frozen listing, whose iterator V8 runs without its fast path (an object per
  // element); an offset past the end, like a negative one, skips nothing more than the elements there are.
  // Every entry goes through `marketEntry`, which compares each listed field of the task: a listed task changed in
  // place must be listed as it is now (test/unit/market-entry.test.ts). Handing out the last listing's entries by task
  // identity skips those loads (~1.02x a bulk worker's episode, docs/speed-history.md, forty-third session) but would
  // list such a task as it was.
  for (let i = Math.max(0, offset); i < all.length; i++) {
    const t = all[i] as Task;
    tasks.push(marketEntry(t, clientName(ctx, t), world));
    if (tasks.length >= limit) break;
  }
  // The entries are memoised and a listing mostly repeats the last one: its text copies the runs they share.
  return { total: ctx.cfg.fixes.market_browse_total ? all.length : tasks.length, offset, limit, tasks: memoList(tasks, listing.chain) };
}

/** `task accept --task-id ID`. */
export function taskAccept(ctx: HandlerCtx, opts: ParsedOptions, byTitle: TitleLookup, addTask: (t: Task) => void): TaskAcceptResult {
  const { state, cfg } = ctx;
  const w = cfg.world;
  const ident = str(opts, 'task_id');
  const task = resolveTask(ctx, ident, byTitle);
  if (!task) throw new CommandError(`Task '${ident}' not found.`);
  if (task.status !== 'market') throw new CommandError(`Task ${ident} is not in market status (current: ${task.status}).`);
  for (const r of task.reqs) {
    const p = toFloat(state.prestige[r.domain]);
    if (task.requiredPrestige > p) {
      throw new CommandError(`Company prestige in ${r.domain} (${pyFormatFixed(p, 1)}) does not meet task requirement (${task.requiredPrestige}).`);
    }
  }
  const client = task.clientId !== null ? state.clients[task.clientId] : undefined;
  let trust = 0.0;
  if (client) {
    trust = toFloat(client.trust);
    if (task.requiredTrust > 0 && trust < task.requiredTrust) {
      throw new CommandError(`Client trust with ${client.name} (${pyFormatFixed(trust, 1)}) does not meet task requirement (${task.requiredTrust}).`);
    }
  }
  const isRat = client !== undefined && client.loyalty < -0.3;
  if (!isRat && client) {
    const reduction = w.trust_work_reduction_max * (trust / w.trust_max);
    for (const r of task.reqs) r.required = D(Math.max(200, Math.trunc(toFloat(r.required) * (1 - reduction))));
  }
  let maxQty = -Infinity;
  for (const r of task.reqs) maxQty = Math.max(maxQty, toFloat(r.required));
  const acceptedAt = state.simTime;
  const bizDays = deadlineBusinessDays(w, maxQty);
  const span = w.workday_end_hour - w.workday_start_hour;
  // D(bizDays)·D(span) is the exact product: the same hours when that is a safe integer
  const deadline = Number.isSafeInteger(bizDays * span) && Number.isSafeInteger(bizDays) && Number.isSafeInteger(span) ? addWholeBusinessHours(acceptedAt, bizDays * span) : addBusinessHours(acceptedAt, D(bizDays).mul(D(span)));
  task.advertisedRewardCents = task.rewardCents;
  if (isRat && client) {
    const inflation = Math.max(3.0, w.scope_creep_max * Math.abs(client.loyalty));
    for (const r of task.reqs) r.required = D(Math.trunc(Math.min(25000, Math.max(200, toFloat(r.required) * (1 + inflation)))));
  }
  // Generation counts tasks of this slot accepted in earlier commands (autoflush is off in the reference).
  let generation = 0;
  for (const t of claimedTasks(state)) if (t.marketSlot === task.marketSlot && t.owned) generation++;
  task.status = 'planned';
  task.owned = true;
  task.acceptedAt = acceptedAt;
  task.deadline = deadline;
  const sorted = clientsByName(ctx.state.clients);
  let clientIndex = 0;
  if (task.clientId !== null) {
    // the first client of the task's id in name order (a loop: `findIndex` with a closure per accept showed in profiles)
    for (let i = 0; i < sorted.length; i++) {
      if ((sorted[i] as Client).id === task.clientId) {
        clientIndex = i;
        break;
      }
    }
  }
  const counter = task.marketSlot * 1000 + generation;
  const tt = replacementTemplate(state.seed, counter, task.requiredPrestige, clientIndex, w, client ? client.specialties : null);
  const repClient = sorted.length > 0 ? sorted[tt.clientIndex % sorted.length] : undefined;
  let reward = tt.rewardFundsCents;
  if (cfg.fixes.replacement_client_multiplier && repClient) reward = Math.trunc(reward * repClient.rewardMultiplier);
  let title = tt.title;
  if (cfg.fixes.replacement_unique_titles) title = `Task-R${++state.replacementSerial}`;
  const rep = marketTask(tt, { id: state.tasks.length, title, clientId: repClient ? repClient.id : null, rewardCents: reward, marketSlot: task.marketSlot });
  const lenBefore = state.tasks.length;
  addTask(rep);
  claimAccepted(state.tasks, task, lenBefore);
  const memos = ctx.memos;
  (memos.acceptLog ??= []).push(task);
  return { task_id: task.title, status: task.status, accepted_at: isoformat(acceptedAt), deadline: isoformat(deadline), replacement_task_id: rep.title };
}

function requireOwnedTask(ctx: HandlerCtx, ident: string, byTitle: TitleLookup, allowed: readonly string[], what: string): Task {
  const task = resolveTask(ctx, ident, byTitle);
  if (!task) throw new CommandError(`Task '${ident}' not found.`);
  if (!allowed.includes(task.status)) throw new CommandError(`Task ${ident} ${what} (current: ${task.status}).`);
  if (!task.owned) throw new CommandError(`Task ${ident} does not belong to your company.`);
  return task;
}

/** `task assign --task-id ID --employees A,B`. */
export function taskAssign(ctx: HandlerCtx, opts: ParsedOptions, byTitle: TitleLookup): TaskAssignResult {
  const { state } = ctx;
  const names = employeeNames(str(opts, 'employees'));
  const task = requireOwnedTask(ctx, str(opts, 'task_id'), byTitle, ['planned', 'active'], 'must be planned or active to assign');
  // Validate everything first: the reference rolls back a partially applied assign on the first unknown name.
  const emps: Employee[] = [];
  for (const n of names) {
    const e = resolveEmployee(ctx, n);
    if (!e) throw new CommandError(`Employee '${n}' not found.`);
    emps.push(e);
  }
  // The reference adds the same row twice (autoflush off) and the flush fails on the primary key: an employee not yet
  // assigned named twice. (A few names, the usual staffing, are compared pairwise: no Set per command.)
  if (emps.length <= 16 ? repeatsUnassigned(task, emps) : repeatsUnassignedLong(task, emps)) {
    throw new CommandError('(sqlite3.IntegrityError) UNIQUE constraint failed: task_assignments.task_id, task_assignments.employee_id');
  }
  const newly: string[] = [];
  for (const e of emps) {
    if (hasAssignee(task, e.id)) continue;
    task.assignments.push({ employeeId: e.id, assignedAt: state.simTime });
    newly.push(e.name);
  }
  if (task.status === 'active') {
    const impacted = new Set<number>();
    for (const e of emps) for (const t of claimedTasks(state)) if (t.status === 'active' && hasAssignee(t, e.id)) impacted.add(t.id);
    if (impacted.size > 0) recalculateEtas(ctx, state.simTime, impacted);
  }
  return { task_id: task.title, status: task.status, newly_assigned: newly, total_assigned: sortedNames(ctx, task) };
}

/** `task assign-all`: always disabled in the reference. */
export function taskAssignAll(): never {
  throw new CommandError('assign-all is not available. Use `task assign --task-id <ID> --employees Emp_1,Emp_4,Emp_7` to assign specific employees.');
}

/** `task dispatch --task-id ID`. */
export function taskDispatch(ctx: HandlerCtx, opts: ParsedOptions, byTitle: TitleLookup): TaskDispatchResult {
  const { state } = ctx;
  const task = requireOwnedTask(ctx, str(opts, 'task_id'), byTitle, ['planned'], 'must be planned to dispatch');
  if (task.assignments.length === 0) {
    throw new CommandError('No employees assigned. Use `task assign-all` or `task assign --employee-id Emp_1` first.');
  }
  task.status = 'active';
  const impacted = new Set<number>([task.id]);
  for (const t of claimedTasks(state)) if (t.id !== task.id && t.status === 'active' && sharesAssignee(t, task)) impacted.add(t.id);
  recalculateEtas(ctx, state.simTime, impacted);
  return { task_id: task.title, status: task.status, assignment_count: task.assignments.length, assigned_employees: sortedNames(ctx, task) };
}

/** `task list [--status S]`: owned tasks by accepted_at descending. */
export function taskList(ctx: HandlerCtx, opts: ParsedOptions): TaskListResult {
  const { state } = ctx;
  let status: string | null = null;
  if (opts['status'] !== undefined) {
    status = str(opts, 'status');
    if (!(TASK_STATUSES as readonly string[]).includes(status)) {
      throw new CommandError(`Invalid status: ${status}. Valid: [${TASK_STATUSES.map((s) => `'${s}'`).join(', ')}]`);
    }
  }
  const tasks = claimedTasks(state).filter((t) => t.owned && (status === null || t.status === status));
  tasks.sort((a, b) => {
    if (a.acceptedAt === null || b.acceptedAt === null) return a.acceptedAt === null ? (b.acceptedAt === null ? a.id - b.id : 1) : -1;
    return b.acceptedAt - a.acceptedAt || a.id - b.id;
  });
  const rows = mapPacked(tasks, (t) => ({
    task_id: t.title,
    title: t.title,
    status: t.status,
    client_name: clientName(ctx, t),
    progress_pct: F(pyRound(progressPct(t), 2)),
    deadline: t.deadline !== null ? isoformat(t.deadline) : null,
    at_risk: t.deadline !== null && t.status === 'active' && state.simTime > t.deadline,
  }));
  return { count: rows.length, tasks: rows };
}

/** `task inspect --task-id ID`. */
export function taskInspect(ctx: HandlerCtx, opts: ParsedOptions, byTitle: TitleLookup): TaskInspectResult {
  const ident = str(opts, 'task_id');
  const t = resolveTask(ctx, ident, byTitle);
  if (!t) throw new CommandError(`Task '${ident}' not found.`);
  const assignments = mapPacked(t.assignments, (a) => ({ employee: ctx.state.employees[a.employeeId]?.name ?? 'unknown', assigned_at: isoformat(a.assignedAt) }))
    // The reference returns these in random (UUID) order; we order by assignment time, then name.
    .sort((a, b) => (a.assigned_at < b.assigned_at ? -1 : a.assigned_at > b.assigned_at ? 1 : a.employee < b.employee ? -1 : a.employee > b.employee ? 1 : 0));
  return {
    task_id: t.title,
    title: t.title,
    status: t.status,
    client_name: clientName(ctx, t),
    required_prestige: t.requiredPrestige,
    required_trust: t.requiredTrust,
    reward_funds_cents: t.rewardCents,
    reward_prestige_delta: F(toFloat(t.rewardPrestigeDelta)),
    skill_boost_pct: F(toFloat(t.skillBoostPct)),
    accepted_at: t.acceptedAt !== null ? isoformat(t.acceptedAt) : null,
    deadline: t.deadline !== null ? isoformat(t.deadline) : null,
    completed_at: t.completedAt !== null ? isoformat(t.completedAt) : null,
    success: t.success,
    progress_pct: F(pyRound(progressPct(t), 2)),
    requirements: mapPacked(t.reqs, (r) => ({
      domain: r.domain,
      required_qty: F(toFloat(r.required)),
      completed_qty: F(toFloat(r.completed)),
      remaining_qty: F(toFloat(r.required.sub(r.completed))),
    })),
    assignments,
  };
}

/** `task cancel --task-id ID --reason R`: broken in the reference on SQLite; implemented behind `fixes.task_cancel`. */
export function taskCancel(ctx: HandlerCtx, opts: ParsedOptions, byTitle: TitleLookup): TaskCancelResult {
  const { state, cfg } = ctx;
  const w = cfg.world;
  const ident = str(opts, 'task_id');
  const task = requireOwnedTask(ctx, ident, byTitle, ['planned', 'active'], 'cannot be cancelled');
  if (!cfg.fixes.task_cancel) {
    throw new CommandError(
      "task cancel failed: the reference crashes here on SQLite (AttributeError: Comparator object has no attribute 'astext') and rolls back; nothing was changed. The preset switch fixes.task_cancel enables the intended cancel semantics.",
    );
  }
  const penalty = decFromFloat(w.penalty_cancel_multiplier).mul(task.rewardPrestigeDelta);
  let trustDelta = 0.0;
  if (task.clientId !== null) {
    const c = state.clients[task.clientId];
    if (c) {
      const old = toFloat(c.trust);
      const next = Math.max(w.trust_min, old - w.trust_cancel_penalty);
      trustDelta = next - old;
      c.trust = decFromRounded3(pyRound(next, 3));
    }
  }
  const changes: Partial<Record<Domain, PrestigeChangeRow>> = {};
  const pmin = decFromFloat(w.prestige_min);
  for (const r of task.reqs) {
    const old = state.prestige[r.domain];
    const nv = quantize(dmax(pmin, old.sub(penalty)), 3);
    state.prestige[r.domain] = nv;
    changes[r.domain] = { old: F(toFloat(old)), new: F(toFloat(nv)), delta: F(toFloat(old.sub(nv))) };
  }
  task.status = 'cancelled';
  state.events = state.events.filter((e) => e.taskId !== task.id);
  const freed = new Set(task.assignments.map((a) => a.employeeId));
  const impacted = new Set<number>();
  for (const t of claimedTasks(state)) if (t.id !== task.id && t.status === 'active' && t.assignments.some((a) => freed.has(a.employeeId))) impacted.add(t.id);
  if (impacted.size > 0) recalculateEtas(ctx, state.simTime, impacted);
  return {
    task_id: task.title,
    status: task.status,
    reason: str(opts, 'reason'),
    cancel_penalty_per_domain: F(toFloat(penalty)),
    prestige_changes: changes,
    trust_delta: F(trustDelta),
    bankrupt: isBankrupt(state),
  };
}

/** `client list`. */
export function clientList(ctx: HandlerCtx): ClientListResult {
  const clients = mapPacked(clientsByName(ctx.state.clients), (c) => ({
    client_id: ctx.uuid('client', c.id),
    name: c.name,
    trust_level: F(toFloat(c.trust)),
    tier: c.tier,
    specialties: [...c.specialties],
  }));
  return { count: clients.length, clients };
}

/** `client history`. */
export function clientHistory(ctx: HandlerCtx): ClientHistoryResult {
  const rows = mapPacked(clientsByName(ctx.state.clients), (c) => {
    let ok = 0;
    let fail = 0;
    for (const t of ctx.state.tasks) {
      if (!t.owned || t.clientId !== c.id) continue;
      if (t.status === 'completed_success') ok++;
      else if (t.status === 'completed_fail') fail++;
    }
    const total = ok + fail;
    return {
      client_name: c.name,
      trust_level: F(toFloat(c.trust)),
      tasks_succeeded: ok,
      tasks_failed: fail,
      failure_rate_pct: F(total > 0 ? pyRound((fail / total) * 100, 1) : 0.0),
    };
  });
  return { count: rows.length, client_history: rows };
}

function badDate(s: string): CommandError {
  return new CommandError(`Invalid value: Invalid date format: ${s}. Use MM/DD/YYYY.`, 2);
}

/** `finance ledger [--from D] [--to D] [--category C]`. */
export function financeLedger(ctx: HandlerCtx, opts: ParsedOptions): FinanceLedgerResult {
  let from: number | null = null;
  let to: number | null = null;
  if (opts['from_date'] !== undefined) {
    from = parseMdy(str(opts, 'from_date'));
    if (from === null) throw badDate(str(opts, 'from_date'));
  }
  if (opts['to_date'] !== undefined) {
    to = parseMdy(str(opts, 'to_date'));
    if (to === null) throw badDate(str(opts, 'to_date'));
  }
  let cat: string | null = null;
  if (opts['category'] !== undefined) {
    cat = str(opts, 'category');
    if (!(LEDGER_CATEGORIES as readonly string[]).includes(cat)) {
      throw new CommandError(`Invalid category: ${cat}. Valid: [${LEDGER_CATEGORIES.map((c) => `'${c}'`).join(', ')}]`);
    }
  }
  const entries: LedgerRow[] = [];
  let total = 0;
  for (const e of ctx.state.ledger) {
    if (from !== null && e.at < from) continue;
    if (to !== null && e.at > to) continue;
    if (cat !== null && e.category !== cat) continue;
    total += e.amountCents;
    entries.push({
      id: ctx.uuid('ledger', e.id),
      occurred_at: isoformat(e.at),
      category: e.category,
      amount_cents: e.amountCents,
      ref_type: e.refType,
      ref_id: e.refId === null || e.refType === null ? null : ctx.uuid(e.refType, e.refId),
    });
  }
  return { count: entries.length, total_amount_cents: total, entries };
}

/** `report monthly`: empty in the reference; computed from the ledger under `fixes.report_monthly`. */
export function reportMonthly(ctx: HandlerCtx, opts: ParsedOptions): ReportMonthlyResult {
  let from: number | null = null;
  let to: number | null = null;
  for (const [k, set] of [['from_month', (v: number) => (from = v)], ['to_month', (v: number) => (to = v)]] as const) {
    if (opts[k] !== undefined) {
      const v = parseYm(str(opts, k));
      if (v === null) throw new CommandError(`Invalid value: Invalid month format: ${str(opts, k)}. Use YYYY-MM.`, 2);
      set(v);
    }
  }
  if (!ctx.cfg.fixes.report_monthly) return { count: 0, months: [] };
  const { state } = ctx;
  const months: MonthRow[] = [];
  let funds = state.initialFundsCents;
  let i = 0;
  const ledger = state.ledger;
  for (let m = dayOf(state.startTime) * 86_400_000_000; m <= state.simTime; m = nextMonthStart(m)) {
    const [y, mo] = civilFromDays(dayOf(m));
    const monthStart = makeInstant(y, mo, 1);
    const end = nextMonthStart(monthStart);
    let revenue = 0;
    let cost = 0;
    while (i < ledger.length && (ledger[i]?.at ?? Infinity) < end) {
      const e = ledger[i++] as (typeof ledger)[number];
      if (e.amountCents >= 0) revenue += e.amountCents;
      else cost += -e.amountCents;
      funds += e.amountCents;
    }
    if ((from !== null && monthStart < from) || (to !== null && monthStart > to)) continue;
    months.push({
      month_start: isoformat(monthStart).slice(0, 10),
      revenue_cents: revenue,
      cost_cents: cost,
      return_cents: revenue - cost,
      ending_funds_cents: funds,
    });
  }
  return { count: months.length, months };
}

/** `scratchpad read`. */
export function scratchpadRead(ctx: HandlerCtx): ScratchpadReadResult {
  return { content: ctx.state.scratchpad };
}

/** `scratchpad write --content C`. */
export function scratchpadWrite(ctx: HandlerCtx, opts: ParsedOptions): ScratchpadWriteResult {
  ctx.state.scratchpad = str(opts, 'content');
  return { ok: true, content: ctx.state.scratchpad };
}

/** `scratchpad append --content C`: a newline between the old and the new content. */
export function scratchpadAppend(ctx: HandlerCtx, opts: ParsedOptions): ScratchpadWriteResult {
  const { state } = ctx;
  const c = str(opts, 'content');
  state.scratchpad = state.scratchpad ? `${state.scratchpad}\n${c}` : c;
  return { ok: true, content: state.scratchpad };
}

/** `scratchpad clear`. */
export function scratchpadClear(ctx: HandlerCtx): ScratchpadClearResult {
  ctx.state.scratchpad = '';
  return { ok: true };
}
