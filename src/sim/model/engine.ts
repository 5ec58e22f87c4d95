/**
 * The discrete-event engine: progress flush, effective rates, ETA solving, the event queue,
 * payroll, decay and completion handling, following the reference's `core/` package step by step.
 */
import type { ExperimentConfig } from '../config/types.js';
import { addBusinessHours, addBusinessMicros, CalendarEndError, businessHoursBetween, businessMicrosBetween, FRACTION_ABOVE_HALF, FRACTION_BELOW_HALF, FRACTION_NONE, isoformat, payrollBoundaries, US_PER_HOUR, US_PER_SEC } from './calendar.js';
import { D, DZERO, Dec, dcmp, decFromFloat, decFromPlain, decFromScaled, decToNumber, decViaFloat, dint, fractionTail, dmax, dmin, isPos, toFloat } from '../py/decimal.js';
import { POW10, pyFormatFixed, pyRound } from '../py/pyfloat.js';
import { F, type Float } from '../py/pyjson.js';
import { pyPow } from '../py/pymath.js';
import { EVENT_PRIORITY, type Domain, type Employee, type EventType, type SimEvent, type SimState, type Task } from './types.js';
import { claimedTasks, isBankrupt } from './status.js';
import { LAST_EXACT_INSTANT } from './deadline.js';
import { mapPacked } from '../py/packed.js';

/** Engine context: the mutable state and its immutable configuration. */
export interface Ctx {
  readonly state: SimState;
  readonly cfg: ExperimentConfig;
}

/** Employees beyond this many (best first) contribute nothing to a task-domain (reference `_EFFICIENT_TEAM_SIZE`). */
export const EFFICIENT_TEAM_SIZE = 4;


// ---------------------------------------------------------------------------------------------
// Rates and progress

/** Active tasks in rowid order. */
export function activeTasks(state: SimState): Task[] {
  const out: Task[] = [];
  for (const t of claimedTasks(state)) if (t.status === 'active') out.push(t);
  return out;
}

let assignmentCounts: Int32Array = new Int32Array(64);
/**
 * effectiveRates' contributions of one task-domain, in its first slots (a task-domain's array each, pushed, took room
 * for 17 elements per requirement of every active task per flush and ETA pass). Holds stale Decimals past them.
 */
const contributionScratch: Dec[] = [];
/** A zeroed count array with room for index `id` (employee ids are small integers; see effectiveRates). */
function grownCounts(counts: Int32Array, id: number): Int32Array {
  let n = counts.length;
  while (n <= id) n *= 2;
  return new Int32Array(n);
}

/** Effective per-domain rates of every active task: rate/k split, top-4 sum (reference `compute_effective_rates`). */
export function effectiveRates(state: SimState, active: Task[] = activeTasks(state)): Map<number, Map<Domain, Dec>> {
  // Assignments per employee id, in a reused scratch array: the ids in use are zeroed first (so nothing is left over
  // from an earlier call, even one that threw), then counted. Ids are employee indexes (small, non-negative integers).
  // (Snapshots hold ids below the employee count, at most 10,000; any other id takes a Map.)
  let counts: Int32Array | null = assignmentCounts;
  for (const t of active) {
    for (const a of t.assignments) {
      const id = a.employeeId;
      if (!(id < counts.length)) {
        if (!(Number.isInteger(id) && id >= 0 && id < 2 ** 20)) {
          counts = null;
          break;
        }
        counts = assignmentCounts = grownCounts(counts, id);
      }
      counts[id] = 0;
    }
    if (counts === null) break;
  }
  let countMap: Map<number, number> | null = null;
  if (counts !== null) for (const t of active) for (const a of t.assignments) (counts[a.employeeId] as number)++;
  else {
    countMap = new Map<number, number>();
    for (const t of active) for (const a of t.assignments) countMap.set(a.employeeId, (countMap.get(a.employeeId) ?? 0) + 1);
  }
  const out = new Map<number, Map<Domain, Dec>>();
  // Each task-domain's contributions in the first n slots of one reused array (read before the next are written).
  const contributions = contributionScratch;
  for (const t of active) {
    const m = new Map<Domain, Dec>();
    for (const r of t.reqs) {
      let n = 0;
      for (const a of t.assignments) {
        const k = counts !== null ? (counts[a.employeeId] as number) : (countMap?.get(a.employeeId) ?? 0);
        if (k <= 0) continue;
        const emp = state.employees[a.employeeId];
        const base = emp ? emp.rates[r.domain] : DZERO;
        const c = k === 1 ? base : base.div(dint(k));
        if (n < contributions.length) contributions[n] = c;
        else contributions.push(c);
        n++;
      }
      sortDescending(contributions, n);
      m.set(r.domain, sumFirst(contributions, EFFICIENT_TEAM_SIZE, n));
    }
    out.set(t.id, m);
  }
  return out;
}

/**
 * The Decimal sum of the first `n` of `xs` (of its first `len` elements) from zero (`DZERO.add(xs[0]).add(xs[1])...`),
 * in ten-thousandths when every term is non-negative with at most 4 decimals (employee rates are stored so): the Decimal sums are then exact (a few
 * digits), and the value is built as decimal.js's one form of it (decFromScaled; one nonzero term is returned as it is:
 * zero plus a Decimal of at most 28 digits is that Decimal's value; no terms give DZERO). Other terms (rates shared between tasks, rate/k) take the Decimal sum.
 * test/property/completion-shortcuts.test.ts compares the two.
 */
export function sumFirst(xs: readonly Dec[], n: number, len: number = xs.length): Dec {
  const k = len < n ? len : n;
  if (k === 0) return DZERO;
  if (k === 1 && !(xs[0] as Dec).isZero()) return xs[0] as Dec;
  let total = 0;
  for (let i = 0; i < k; i++) {
    const v = scaledExact(xs[i] as Dec, 4);
    if (!(v >= 0 && v < 1e15)) {
      let sum = DZERO;
      for (let j = 0; j < k; j++) sum = sum.add(xs[j] as Dec);
      return sum;
    }
    total += v;
  }
  return decFromScaled(total, 4);
}

/**
 * `xs.sort((x, y) => dcmp(y, x))` in place (of its first `len` elements, the others left as they are), as an insertion
 * sort (stable, like Array.prototype.sort, with the same comparator: the same order) for the few contributions of a
 * task-domain, without the sort's scratch allocation.
 */
export function sortDescending(xs: Dec[], len: number = xs.length): void {
  for (let i = 1; i < len; i++) {
    const x = xs[i] as Dec;
    let j = i;
    while (j > 0 && dcmp(x, xs[j - 1] as Dec) > 0) {
      xs[j] = xs[j - 1] as Dec;
      j--;
    }
    xs[j] = x;
  }
}

/**
 * Move progress of active tasks from t0 to t1 (reference `flush_progress`, with its hours quirk unless fixed). Each
 * requirement's new value comes from {@link flushedFast} when doubles decide it, else from the Decimal steps (the
 * Decimal hours computed once, when first needed).
 *
 * `completing`: the id of a task whose completion is handled right after this flush, before anything reads its
 * progress (advanceTime passes the task of the `task_completed` event it processes at t1): handleTaskComplete's first
 * step sets every requirement's progress to its required amount, so the flushed values of that task are never read,
 * and its flush is left out (the other tasks' flushes do not depend on it: rates read assignments and statuses, not
 * progress). With one active task, the usual case, that leaves nothing to flush: no rates, no business hours.
 * test/unit/engine-flush-skip.test.ts compares the states with and without it.
 */
export function flushProgress(ctx: Ctx, t0: number, t1: number, completing: number | null = null): void {
  const active = activeTasks(ctx.state);
  if (active.length === 0) return;
  if (active.length === 1 && (active[0] as Task).id === completing) return;
  const correct = ctx.cfg.fixes.progress_flush_hours;
  // businessHoursBetween is positive exactly when its microseconds are
  const us = businessMicrosBetween(t0, t1, correct);
  if (!(us > 0)) return;
  const hoursF = us / US_PER_HOUR;
  let hours: Dec | null = null;
  const rates = effectiveRates(ctx.state, active);
  for (const t of active) {
    if (t.id === completing) continue;
    const m = rates.get(t.id);
    for (const r of t.reqs) {
      const rate = m?.get(r.domain) ?? DZERO;
      const fast = flushedFast(r.completed, r.required, rate, hoursF);
      if (fast !== null) {
        r.completed = fast;
        continue;
      }
      hours ??= businessHoursBetween(t0, t1, correct);
      let after = r.completed.add(rate.mul(hours));
      if (dcmp(after, r.required) > 0) after = r.required;
      if (after.isNegative() && !after.isZero()) after = DZERO;
      // Stored as Numeric(14,4): the next reader reloads it from SQLite (see quantize()).
      r.completed = quantize(after, 4);
    }
  }
}

/**
 * A requirement's flushed progress `quantize(min(completed + rate·hours, required) clamped at 0, 4)` from doubles, for
 * completed >= 0, rate >= 0 and a `required` of at most 4 decimals, with `hoursF` = the flush's microseconds / 3.6e9;
 * null when they do not decide it (then the caller takes the Decimal steps). The reference's hours are within 1e-26 of
 * the microseconds' exact quotient and its product and sum are rounded to 28 digits, so its sum is within 1e-25 of the
 * exact x = completed + rate·hours; the double x̃ (completed, rate and hoursF converted, one product, one sum: five
 * roundings of at most 2^-53 of the terms' magnitude) is within b = 2e-15·(completed + rate·hours) + 1e-20 of x. So:
 * - x̃ > required + b: x > required, the value is `required` (of at most 4 decimals: quantize returns it);
 * - x̃ < required - b: x < required, x >= 0, and quantize's result is x rounded to 4 places, half-even (its text
 *   fallback decides only ties within 1e-12 of a unit), which is n/10^4 for n the integer nearest x̃·10^4 when that
 *   product's fraction lies more than b·10^4 + 2.3e-16·x̃·10^4 (the product's rounding) from one half: built as
 *   {@link decFromScaled}, decimal.js's single form of that value;
 * - otherwise null. test/property/flush-progress.test.ts compares it with the Decimal steps.
 */
export function flushedFast(completed: Dec, required: Dec, rate: Dec, hoursF: number): Dec | null {
  if (completed.isNegative() || rate.isNegative() || required.decimalPlaces() > 4) return null;
  const c = toFloat(completed);
  const q = toFloat(required);
  const x = c + toFloat(rate) * hoursF;
  const b = 2e-15 * x + 1e-20;
  if (x > q + b) return required;
  if (!(x < q - b)) return null;
  const y = x * 1e4;
  if (!(y < 1e15)) return null;
  const n = Math.floor(y);
  const f = y - n;
  if (Math.abs(f - 0.5) <= b * 1e4 + 2.3e-16 * y + 1e-9) return null;
  return decFromScaled(f < 0.5 ? n : n + 1, 4);
}

// ---------------------------------------------------------------------------------------------
// ETA solving and the event queue

/**
 * Completion instant: now + max over domains of remaining/rate business hours; null if a domain cannot progress.
 * The instant is found from doubles when they decide it, else by the Decimal steps ({@link solveCompletionDecimal}).
 * With H = max remaining/rate (the exact quotients; the reference's are rounded to 28 digits, off by under 1e-27 of
 * H) and u its estimate in microseconds (required, completed and the rate converted to doubles, one subtraction, one
 * division, one product by 3.6e9: six roundings of at most 2^-53 of the operands' magnitude, so |u - H·3.6e9| < err =
 * 1e-15 · 3.6e9 · (required + completed) / rate, the largest such bound over the domains, as the max of estimates is
 * within the largest estimate error of the max):
 * - when u's fraction lies farther than err plus {@link addBusinessMicros}'s margins from 0, 1/2 and 1, floor(H·3.6e9)
 *   = floor(u) and the side of one half are certain;
 * - when it lies within err of a whole number, the largest estimate exceeds every other by more than 2·err (so its
 *   domain has the largest quotient), and that domain's remaining and rate have at most 4 decimals (a / 10^4 and b /
 *   10^4, a and b integers) with b dividing 4e8·a, the quotient a/b is a decimal with H·4e8 whole: H·3.6e9 = round(u),
 *   a multiple of 9, and the Decimal division is exact;
 * and addBusinessMicros gives the Decimal steps' instant. test/property/business-hours.test.ts compares the two.
 */
export function solveCompletion(task: Task, now: number, rates: Map<Domain, Dec> | undefined): number | null {
  const reqs = task.reqs;
  if (reqs.length === 0) return null;
  let u = 0;
  let second = 0;
  let best = -1;
  let err = 0;
  for (let i = 0; i < reqs.length; i++) {
    const r = reqs[i] as Task['reqs'][number];
    // remaining = required - completed > 0 (the difference's sign is exact)
    if (dcmp(r.required, r.completed) <= 0) continue;
    const rate = rates?.get(r.domain) ?? DZERO;
    if (!isPos(rate)) return null;
    const req = toFloat(r.required);
    const done = toFloat(r.completed);
    const rt = toFloat(rate);
    const h = ((req - done) / rt) * US_PER_HOUR;
    if (h > u) {
      second = u;
      u = h;
      best = i;
    } else if (h > second) second = h;
    const e = ((req + done) / rt) * US_PER_HOUR * 1e-15;
    if (e > err) err = e;
  }
  if (best >= 0 && u < 9e14 && err < 1e-2) {
    const m = Math.floor(u);
    const f = u - m;
    let at = -1;
    if (f > err + 1e-6 && f < 1 - err - 1e-6 && Math.abs(f - 0.5) > err + 1e-3) {
      at = addBusinessMicros(now, m, f < 0.5 ? FRACTION_BELOW_HALF : FRACTION_ABOVE_HALF);
    } else if ((f <= err || f >= 1 - err) && u - second > 2 * err) {
      const r = reqs[best] as Task['reqs'][number];
      if (wholeMicrosQuotient(r.required, r.completed, rates?.get(r.domain) ?? DZERO)) at = addBusinessMicros(now, Math.round(u), FRACTION_NONE);
    }
    if (at >= 0) return exactOrNever(at);
  }
  return solveCompletionDecimal(task, now, rates);
}

/**
 * Whether (required - completed) / rate is a decimal q with q·4e8 whole, decided in integers: each of at most 4
 * decimals and below 10^8 (so x·10^4 is an integer below 2^53 that the double product rounds to), and b = rate·10^4 <
 * 10^7 dividing 4e8·a for a = (required - completed)·10^4 (products below 10^14: exact).
 */
function wholeMicrosQuotient(required: Dec, completed: Dec, rate: Dec): boolean {
  if (required.decimalPlaces() > 4 || completed.decimalPlaces() > 4 || rate.decimalPlaces() > 4) return false;
  const req = toFloat(required);
  const done = toFloat(completed);
  const rt = toFloat(rate);
  if (!(req < 1e8 && done < 1e8 && rt > 0 && rt < 1000)) return false;
  const a = Math.round(req * 1e4) - Math.round(done * 1e4);
  const b = Math.round(rt * 1e4);
  return a > 0 && (((a % b) * (4e8 % b)) % b) === 0;
}

/**
 * `addBusinessHours`, or null (never) when the instant would pass the last exact instant, 2**53 - 1 µs (2255-06-05;
 * beyond it a double holds only every 2nd, 4th, ... 32nd microsecond, so the instant was exact only by chance) or year
 * 9999. Every run ends before 2200 (calendar.ts runBounds), so a completion or milestone that late can only follow the
 * horizon's end, like a zero rate's, which is never scheduled either (before, one between 2255 and 9999 was scheduled
 * and every snapshot showed its instant). Reachable inside the ranges: a skill rate of 0.0001, split across an
 * employee's tasks, puts a task's completion billions of business hours away (the reference's datetime raises
 * OverflowError there and the run stops; here it went on as `internal`, closing a server's session).
 */
function untilCalendarEnd(now: number, hours: Dec): number | null {
  try {
    return exactOrNever(addBusinessHours(now, hours));
  } catch (err) {
    if (err instanceof CalendarEndError) return null;
    throw err;
  }
}

/** An ETA instant, or null (never) past the last exact instant (2**53 - 1 µs): see {@link untilCalendarEnd}. */
function exactOrNever(at: number): number | null {
  return at <= LAST_EXACT_INSTANT ? at : null;
}

/** {@link solveCompletion} by the reference's Decimal steps. */
export function solveCompletionDecimal(task: Task, now: number, rates: Map<Domain, Dec> | undefined): number | null {
  if (task.reqs.length === 0) return null;
  let maxHours = DZERO;
  for (const r of task.reqs) {
    const remaining = r.required.sub(r.completed);
    if (!isPos(remaining)) continue;
    const rate = rates?.get(r.domain) ?? DZERO;
    if (!isPos(rate)) return null;
    const h = remaining.div(rate);
    if (dcmp(h, maxHours) > 0) maxHours = h;
  }
  if (!isPos(maxHours)) return now;
  return untilCalendarEnd(now, maxHours);
}

/** Instant at which Σdone ≥ threshold·Σrequired (piecewise-linear solve); null if unreachable. */
export function solveMilestone(task: Task, now: number, rates: Map<Domain, Dec> | undefined, threshold: number): number | null {
  if (task.reqs.length === 0) return null;
  let totalRequired = DZERO;
  for (const r of task.reqs) totalRequired = totalRequired.add(r.required);
  if (!isPos(totalRequired)) return now;
  const target = decFromFloat(threshold).mul(totalRequired);
  let current = DZERO;
  for (const r of task.reqs) current = current.add(dmin(r.required, r.completed));
  if (current.gte(target)) return now;
  const doms = mapPacked(task.reqs, (r) => {
    const remaining = r.required.sub(r.completed);
    const rate = rates?.get(r.domain) ?? DZERO;
    let cap: Dec | null;
    if (isPos(remaining) && !isPos(rate)) cap = null;
    else if (!isPos(remaining)) cap = DZERO;
    else cap = remaining.div(rate);
    return { completed: r.completed, required: r.required, rate, cap };
  });
  const bpSet: Dec[] = [];
  for (const d of doms) if (d.cap !== null && isPos(d.cap) && !bpSet.some((b) => b.eq(d.cap as Dec))) bpSet.push(d.cap);
  bpSet.sort((a, b) => a.cmp(b));
  let h = DZERO;
  let sum = current;
  const slopeAt = (hh: Dec): Dec => {
    let s = DZERO;
    for (const d of doms) if (d.cap !== null && dcmp(d.cap, hh) > 0) s = s.add(d.rate);
    return s;
  };
  for (const bp of bpSet) {
    const slope = slopeAt(h);
    if (!isPos(slope)) {
      if (sum.gte(target)) return untilCalendarEnd(now, h);
      h = bp;
      sum = DZERO;
      for (const d of doms) sum = sum.add(dmin(d.required, d.completed.add(d.rate.mul(h))));
      continue;
    }
    const dh = target.sub(sum).div(slope);
    if (h.add(dh).lte(bp)) return untilCalendarEnd(now, h.add(dh));
    sum = sum.add(slope.mul(bp.sub(h)));
    h = bp;
  }
  const slope = slopeAt(h);
  if (isPos(slope)) {
    const needed = target.sub(sum);
    if (!isPos(needed)) return untilCalendarEnd(now, h);
    return untilCalendarEnd(now, h.add(needed.div(slope)));
  }
  if (sum.gte(target)) return untilCalendarEnd(now, h);
  return null;
}

/** Insert an event; an unconsumed event with the same dedupe key is returned instead (reference `insert_event`). */
export function insertEvent(state: SimState, type: EventType, at: number, taskId: number | null, milestonePct: number | null, dedupeKey: string | null): SimEvent {
  if (dedupeKey !== null) {
    const existing = state.events.find((e) => e.dedupeKey === dedupeKey);
    if (existing) return existing;
  }
  const ev: SimEvent = { seq: state.nextEventSeq++, type, at, taskId, milestonePct, dedupeKey };
  state.events.push(ev);
  return ev;
}

/** Next unconsumed event at or before `upTo`, ordered by (time, priority, insertion). */
export function fetchNextEvent(state: SimState, upTo: number): SimEvent | null {
  let best: SimEvent | null = null;
  for (const e of state.events) {
    if (e.at > upTo) continue;
    if (
      best === null ||
      e.at < best.at ||
      (e.at === best.at && (EVENT_PRIORITY[e.type] < EVENT_PRIORITY[best.type] || (EVENT_PRIORITY[e.type] === EVENT_PRIORITY[best.type] && e.seq < best.seq)))
    ) {
      best = e;
    }
  }
  return best;
}

function consumeEvent(state: SimState, ev: SimEvent): void {
  const i = state.events.indexOf(ev);
  if (i >= 0) state.events.splice(i, 1);
}

const milestoneOrders = new WeakMap<readonly number[], { copy: number[]; sorted: readonly number[] }>();
/** `[...ms].sort((a, b) => a - b)`, remembered while `ms` holds the same values (read only). */
function sortedMilestones(ms: readonly number[]): readonly number[] {
  const c = milestoneOrders.get(ms);
  if (c !== undefined && c.copy.length === ms.length && c.copy.every((m, i) => Object.is(m, ms[i]))) return c.sorted;
  const copy = [...ms];
  const sorted = [...ms].sort((a, b) => a - b);
  milestoneOrders.set(ms, { copy, sorted });
  return sorted;
}

/**
 * The dedupe key `task:${tid}:completed` of a completion event, one text per task id below 65536 (built once: a
 * recalculation's insertEvent compares it with the queued events' keys, the same text of an earlier pass by identity).
 */
const completedKeys: (string | undefined)[] = [];
export function completedKey(tid: number): string {
  if (!(Number.isInteger(tid) && tid >= 0 && tid < 65_536)) return `task:${tid}:completed`;
  let k = completedKeys[tid];
  if (k === undefined) {
    // filled up to tid: a packed array (a store far past the end would make it a dictionary)
    while (completedKeys.length < tid) completedKeys.push(undefined);
    k = completedKeys[tid] = `task:${tid}:completed`;
  }
  return k;
}

/** Re-solve completion and next-milestone events for impacted active tasks (all active when null). */
export function recalculateEtas(ctx: Ctx, now: number, impacted: Set<number> | null): void {
  const { state } = ctx;
  const ids: number[] = impacted === null ? mapPacked(activeTasks(state), (t) => t.id) : [...impacted].sort((a, b) => a - b);
  if (ids.length === 0) return;
  // `impacted` holds exactly the ids (read here only): no Set of them again.
  const idSet = impacted ?? new Set(ids);
  state.events = state.events.filter((e) => !((e.type === 'task_completed' || e.type === 'task_half_progress') && e.taskId !== null && idSet.has(e.taskId)));
  const rates = effectiveRates(state);
  const milestones = sortedMilestones(ctx.cfg.world.task_progress_milestones);
  for (const tid of ids) {
    const task = state.tasks[tid];
    if (!task || task.status !== 'active') continue;
    const tr = rates.get(tid);
    const done = solveCompletion(task, now, tr);
    if (done !== null) insertEvent(state, 'task_completed', done, tid, null, completedKey(tid));
    const emitted = task.milestonePct;
    for (const m of milestones) {
      const pct = Math.trunc(m * 100);
      if (pct <= emitted) continue;
      const at = solveMilestone(task, now, tr, m);
      if (at !== null) {
        insertEvent(state, 'task_half_progress', at, tid, pct, `task:${tid}:milestone:${pct}`);
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Money, decay, completion

/** Append a ledger row and move funds by the same amount. */
export function book(state: SimState, at: number, category: SimState['ledger'][number]['category'], amount: number, refType: 'employee' | 'task', refId: number): void {
  state.ledger.push({ id: state.ledger.length, at, category, amountCents: amount, refType, refId });
  state.fundsCents += amount;
}

function applyPayroll(ctx: Ctx, at: number): boolean {
  const { state } = ctx;
  for (const e of state.employees) book(state, at, 'monthly_payroll', -Math.trunc(e.salaryCents), 'employee', e.id);
  return isBankrupt(state);
}

function applyPrestigeDecay(ctx: Ctx, days: number): void {
  const w = ctx.cfg.world;
  if (w.prestige_decay_per_day <= 0 || days <= 0) return;
  const decay = decFromFloat(w.prestige_decay_per_day * days);
  const floor = decFromFloat(w.prestige_min);
  const p = ctx.state.prestige;
  for (const d of Object.keys(p) as Domain[]) p[d] = quantize(dmax(floor, p[d].sub(decay)), 3);
}

function applyTrustDecay(ctx: Ctx, days: number): void {
  const w = ctx.cfg.world;
  if (w.trust_decay_per_day <= 0 || days <= 0) return;
  const f = w.trust_decay_per_day * days;
  const floor = decFromFloat(w.trust_min);
  const zeroFloor = floor.isZero();
  const parts = decayParts(f, floor);
  let decay: Dec | null = null;
  for (const c of ctx.state.clients) {
    // max(0, 0 - decay) is 0: nothing to compute for clients without trust (most of them).
    if (zeroFloor && c.trust.isZero()) continue;
    const fast = parts !== null ? decayedMillis(c.trust, parts) : null;
    if (fast !== null) c.trust = millisDec(fast);
    else c.trust = quantize(dmax(floor, c.trust.sub((decay ??= decFromFloat(f)))), 3);
  }
}

/**
 * A decay amount `Decimal(repr(f))` split at the third decimal place: f·1000 = units + 0.tail, `near` when 0.tail is
 * within 1e-8 of one half (or unknown), and the floor in thousandths.
 */
export interface DecayParts {
  readonly units: number;
  readonly tailZero: boolean;
  /** 0.tail < 0.5 (meaningful when !tailZero and !near). */
  readonly tailBelowHalf: boolean;
  readonly near: boolean;
  readonly floorMillis: number;
}

/**
 * {@link DecayParts} of `Decimal(repr(f))` and a floor, or null when the fast path below does not apply: f outside
 * [1e-6, 100), or a floor that is negative, above 100 or has more than 3 decimals.
 */
export function decayParts(f: number, floor: Dec): DecayParts | null {
  if (!(f >= 1e-6 && f < 100)) return null;
  if (floor.isNegative() || floor.decimalPlaces() > 3 || dcmp(floor, HUNDRED) >= 0) return null;
  const floorMillis = Math.round(toFloat(floor) * 1000);
  // Without the text of repr(f), from the double itself: |repr(f) - f| <= half an ulp of f (< 8e-15 for f < 100) and
  // f·1000 is rounded once (error < 1.2e-11 below 1e5), so g = f·1000 is within 2e-11 of repr(f)·1000. Away from
  // integers (more than 1e-6 off) g's integer part is that of repr(f)·1000, the tail is not zero, and g's fraction is
  // within 2e-11 of the true tail: its side of one half is certain outside a 1e-8 margin (`near` inside it).
  const g = f * 1000;
  const gi = Math.floor(g);
  const gf = g - gi;
  if (gf > 1e-6 && gf < 1 - 1e-6) return { units: gi, tailZero: false, tailBelowHalf: gf < 0.5, near: Math.abs(gf - 0.5) < 1e-8, floorMillis };
  // repr of a double in [1e-6, 100) is plain positional notation with at most 17 significant digits
  const s = String(f);
  const dot = s.indexOf('.');
  const ip = dot < 0 ? s : s.slice(0, dot);
  const fp = dot < 0 ? '' : s.slice(dot + 1);
  const units = Number(ip) * 1000 + Number(fp.slice(0, 3).padEnd(3, '0'));
  const rest = fp.slice(3);
  let tailZero = true;
  for (let i = 0; i < rest.length; i++) if (rest.charCodeAt(i) !== 48) tailZero = false;
  const v = rest.length > 0 ? Number(`0.${rest.slice(0, 15)}`) : 0;
  return { units, tailZero, tailBelowHalf: v < 0.5, near: !tailZero && Math.abs(v - 0.5) < 1e-8, floorMillis };
}
const HUNDRED = D(100);

/**
 * `quantize(dmax(floor, trust - Decimal(repr(f))), 3)` in thousandths, or null where this does not decide it (then the
 * caller computes it with Decimals). Identical because, with trust = T/1000 (T an integer, 0 <= trust < 100), f·1000 =
 * units + 0.tail (0 <= 0.tail < 1, exactly the digits of repr(f)) and the floor F/1000 (0 <= F < 100000):
 * - the Decimal subtraction is exact: repr(f) >= 1e-6 has at most 17 significant digits, so its last digit is at or
 *   above 1e-22, and both operands are below 100: the difference needs at most 24 of the context's 28 digits;
 * - x = trust - decay > floor iff T - units > F (0.tail < 1 and all else integers); otherwise null (dmax takes the
 *   floor: left to the caller);
 * - a zero tail: x has at most 3 decimals and quantize returns it: (T - units)/1000;
 * - else x·1000 = (T - units - 1) + (1 - 0.tail), and 0.tail is at least 1e-8 away from 1/2 (`near` otherwise: null).
 *   quantize's own test then rounds half-even at the third decimal exactly (its float shortcut applies when the tail
 *   is more than (int part + 1)·1e-12 away from one half, and x < 100), so the result is T - units when 0.tail < 1/2,
 *   else T - units - 1. (0.tail is compared through its first 15 digits as a double: off by less than 1e-15.)
 */
export function decayedMillis(trust: Dec, p: DecayParts): number | null {
  if (p.near || trust.isNegative() || trust.decimalPlaces() > 3 || dcmp(trust, HUNDRED) >= 0) return null;
  const t = Math.round(toFloat(trust) * 1000); // exact: |trust·1000| < 1e5, the double off by < 1e-10
  const r = t - p.units;
  if (!(r > p.floorMillis)) return null;
  if (p.tailZero || p.tailBelowHalf) return r;
  return r - 1;
}

const MILLIS_MAX = 100_000;
/** millisDec's instances by m (an array: no hashing per lookup). */
const millisMemo: (Dec | undefined)[] = new Array<Dec | undefined>(MILLIS_MAX);
/** The Decimal m/1000 for an integer 0 <= m < 100000 (shared instances: Decimals are immutable). */
export function millisDec(m: number): Dec {
  let d = millisMemo[m];
  if (d === undefined) {
    d = D(m).div(THOUSAND);
    if (m >= 0 && m < MILLIS_MAX && Number.isInteger(m)) millisMemo[m] = d;
  }
  return d;
}
const THOUSAND = D(1000);

/**
 * `decFromFloat(x)` for a double x of at most three decimals (x = pyRound(y, 3)): millisDec(m) when 0 < x < 100 and
 * m = round(x * 1000) gives back x as m / 1000. Why it is the same value: the division is correctly rounded, so x is
 * the double nearest to the decimal m/1000, which has at most 8 significant digits; str(x) is the shortest text that
 * converts back to x, and no other decimal of at most 15 significant digits converts to x (DBL_DIG = 15), so str(x)
 * denotes m/1000. Other values (zeros and their sign included) go to decFromFloat. Skips decFromFloat's memo (a Map
 * keyed by a heap number). test/property/decimal-shortcuts.test.ts compares the two.
 */
export function decFromRounded3(x: number): Dec {
  if (x > 0 && x < 100) {
    const m = Math.round(x * 1000);
    if (m / 1000 === x) return millisDec(m);
  }
  return decFromFloat(x);
}

/**
 * The first `k` of `emps` ordered by their rate in domain `d` descending, ties by position in `emps`: what
 * `emps.map((e, i) => ({ e, i })).sort((x, y) => dcmp(y.e.rates[d], x.e.rates[d]) || x.i - y.i).slice(0, k)` gives (a
 * strict order, so any correct selection gives the same list), kept by insertion as `emps` is visited in order: an
 * employee goes after every one already kept whose rate is at least its own. No scratch arrays or closures.
 */
export function topByRate(emps: readonly Employee[], d: Domain, k: number): Employee[] {
  const top: Employee[] = [];
  for (const e of emps) {
    const rate = e.rates[d];
    let p = top.length;
    while (p > 0 && dcmp((top[p - 1] as Employee).rates[d], rate) < 0) p--;
    if (p >= k) continue;
    top.splice(p, 0, e);
    if (top.length > k) top.pop();
  }
  return top;
}

/**
 * x·10^scale when x has at most `scale` decimals and |x·10^scale| < 2^50, else NaN: then x·10^scale is an integer N and
 * toFloat(x)·10^scale is within 2.3e-16·N (two roundings) of it, below one half, so Math.round gives N.
 */
export function scaledExact(x: Dec, scale: number): number {
  if (x.decimalPlaces() > scale) return NaN;
  const n = Math.round(toFloat(x) * (POW10[scale] as number));
  return Math.abs(n) < 1_125_899_906_842_624 ? n : NaN;
}

/**
 * A completed task's prestige `quantize(dmin(pmax, prestige + inc), 3)`, in thousandths when all three have at most 3
 * decimals (the stored prestige and delta always do): the sum is then exact (P + I thousandths), dmin picks by value
 * (P + I < PM), and quantize returns a value of at most 3 decimals as it is; built as decimal.js's one form of that
 * value (millisDec's shared instances for 0 <= P + I < 10^5, else decFromScaled). Other values take the Decimal steps.
 * test/property/completion-shortcuts.test.ts compares the two.
 */
export function raisedPrestige(prestige: Dec, inc: Dec, pmax: Dec): Dec {
  const p = scaledExact(prestige, 3);
  const i = scaledExact(inc, 3);
  const pm = scaledExact(pmax, 3);
  const z = p + i;
  if (z >= 0 && z < 1_125_899_906_842_624 && pm === pm) {
    if (!(z < pm)) return pmax;
    return z < MILLIS_MAX ? millisDec(z) : decFromScaled(z, 3);
  }
  return quantize(dmin(pmax, prestige.add(inc)), 3);
}

/**
 * A skill boost's new rate `quantize(dmin(rate + rate·pct, cap), 4)`, in integers when rate and pct are non-negative
 * with at most 4 decimals (R and P ten-thousandths) and cap has at most 4: rate + rate·pct = Z / 10^8 exactly with Z =
 * R·10^4 + R·P (R < 10^9, P < 10^5: below 1.1e14, and a Decimal of at most 8 decimals and 15 digits: the product and
 * sum are exact); dmin takes the cap (cap < 10^7) when
 * cap·10^8 < Z (returned as it is: quantize keeps a value of at most 4 decimals); quantize rounds Z / 10^8 to 4 places
 * half-even, which is the nearest when Z mod 10^4 != 5000 (the tie is left to the Decimal steps, whose text of the
 * double decides it). Built as decimal.js's one form of the value (decFromScaled). test/property/completion-shortcuts.test.ts
 * compares the two.
 */
export function boostedRate(rate: Dec, pct: Dec, cap: Dec): Dec {
  const r = scaledExact(rate, 4);
  const p = scaledExact(pct, 4);
  const c = scaledExact(cap, 4);
  if (r >= 0 && r < 1e9 && p >= 0 && p < 1e5 && c === c && c < 1e11) {
    const z = r * 10_000 + r * p; // below 1.1e14: exact
    const rem = z % 10_000;
    if (rem !== 5000) {
      if (c * 10_000 < z) return cap;
      const q = (z - rem) / 10_000;
      return decFromScaled(rem > 5000 ? q + 1 : q, 4);
    }
  }
  return quantize(dmin(rate.add(rate.mul(pct)), cap), 4);
}

/** Result of a completion handler, before it is rendered as a wake event. */
interface CompletionResult {
  success: boolean;
  fundsDelta: number;
  listedReward: number;
  trustDelta: number;
  bankrupt: boolean;
  appliedBumps: number;
}

function tierMidpoints(ctx: Ctx): Record<string, number> {
  const w = ctx.cfg.world;
  return {
    junior: Math.floor((w.salary_junior.min_cents + w.salary_junior.max_cents) / 2),
    mid: Math.floor((w.salary_mid.min_cents + w.salary_mid.max_cents) / 2),
    senior: Math.floor((w.salary_senior.min_cents + w.salary_senior.max_cents) / 2),
  };
}

/** A client's trust after a completion, and the change as the wake event reports it. */
export interface TrustStep {
  readonly trust: Dec;
  readonly delta: number;
}

/** The world parameters a completion's trust updates read. */
const TRUST_PARAMS = ['trust_max', 'trust_min', 'trust_gain_base', 'trust_gain_diminishing_power', 'trust_fail_penalty', 'trust_cross_client_decay'] as const;
type TrustParams = Pick<ExperimentConfig['world'], (typeof TRUST_PARAMS)[number]>;

/**
 * The trust updates of a completion by the old trust, remembered: each is a pure function of the old trust's value
 * and of the parameters kept here (computed by {@link completedTrustOf} and {@link crossDecayedTrustOf}), so a
 * remembered result is the one they would compute again; a change of any parameter starts a new memo. Keyed by the
 * Decimal instance (stored trusts are mostly millisDec's shared instances: a few thousand values at most); each map
 * is cleared when it reaches TRUST_MEMO_MAX entries. Saves the glibc `pow` of the gain, the rounding and the
 * Decimal per client and completion.
 */
export interface TrustMemo {
  readonly p: TrustParams;
  readonly success: Map<Dec, TrustStep>;
  readonly fail: Map<Dec, TrustStep>;
  readonly cross: Map<Dec, Dec>;
}
const TRUST_MEMO_MAX = 16_384;
let lastTrustMemo: TrustMemo | null = null;

export function trustMemo(w: TrustParams): TrustMemo {
  const m = lastTrustMemo;
  if (m !== null && TRUST_PARAMS.every((k) => Object.is(m.p[k], w[k]))) return m;
  const p = {} as Record<(typeof TRUST_PARAMS)[number], number>;
  for (const k of TRUST_PARAMS) p[k] = w[k];
  return (lastTrustMemo = { p, success: new Map(), fail: new Map(), cross: new Map() });
}

/** The completed task's client's trust after a success (diminishing gain) or a failure (penalty), and its change. */
export function completedTrustOf(w: TrustParams, trust: Dec, success: boolean): TrustStep {
  const old = toFloat(trust);
  let next: number;
  if (success) {
    const ratio = old / w.trust_max;
    const gain = w.trust_gain_base * pyPow(1 - ratio, w.trust_gain_diminishing_power);
    next = Math.min(w.trust_max, old + gain);
  } else {
    next = Math.max(w.trust_min, old - w.trust_fail_penalty);
  }
  return { trust: decFromRounded3(pyRound(next, 3)), delta: next - old };
}

/** Another client's trust after a completion's cross-client decay (`trust` itself when at or below the floor). */
export function crossDecayedTrustOf(w: TrustParams, trust: Dec): Dec {
  const o = toFloat(trust);
  return o > w.trust_min ? decFromRounded3(pyRound(Math.max(w.trust_min, o - w.trust_cross_client_decay), 3)) : trust;
}

export function completedTrust(memo: TrustMemo, trust: Dec, success: boolean): TrustStep {
  const map = success ? memo.success : memo.fail;
  let step = map.get(trust);
  if (step === undefined) {
    step = completedTrustOf(memo.p, trust, success);
    if (map.size >= TRUST_MEMO_MAX) map.clear();
    map.set(trust, step);
  }
  return step;
}

export function crossDecayedTrust(memo: TrustMemo, trust: Dec): Dec {
  let next = memo.cross.get(trust);
  if (next === undefined) {
    next = crossDecayedTrustOf(memo.p, trust);
    if (memo.cross.size >= TRUST_MEMO_MAX) memo.cross.clear();
    memo.cross.set(trust, next);
  }
  return next;
}

function handleTaskComplete(ctx: Ctx, task: Task, now: number): CompletionResult {
  const { state } = ctx;
  const w = ctx.cfg.world;
  for (const r of task.reqs) r.completed = r.required;
  task.completedAt = now;
  const success = task.deadline !== null && now <= task.deadline;
  let fundsDelta = 0;
  let appliedBumps = 0;
  if (success) {
    task.status = 'completed_success';
    task.success = true;
    book(state, now, 'task_reward', task.rewardCents, 'task', task.id);
    fundsDelta = task.rewardCents;
    const pmax = decFromFloat(w.prestige_max);
    const inc = decViaFloat(task.rewardPrestigeDelta);
    for (const r of task.reqs) state.prestige[r.domain] = raisedPrestige(state.prestige[r.domain], inc, pmax);
    if (isPos(task.skillBoostPct)) {
      const pct = decViaFloat(task.skillBoostPct);
      const cap = decFromFloat(w.skill_rate_max);
      const emps: Employee[] = [];
      for (const a of task.assignments) {
        const e = state.employees[a.employeeId];
        if (e !== undefined) emps.push(e);
      }
      for (const r of task.reqs) {
        const d = r.domain;
        for (const e of topByRate(emps, d, EFFICIENT_TEAM_SIZE)) {
          const rate = e.rates[d];
          e.rates[d] = boostedRate(rate, pct, cap);
        }
      }
    }
    if (w.salary_bump_pct > 0) {
      const mids = tierMidpoints(ctx);
      for (const a of task.assignments) {
        const e = state.employees[a.employeeId];
        if (e && e.salaryCents < w.salary_max_cents) {
          const bump = Math.trunc((mids[e.tier] ?? 0) * w.salary_bump_pct);
          const next = Math.min(w.salary_max_cents, e.salaryCents + bump);
          appliedBumps += next - e.salaryCents;
          e.salaryCents = next;
        }
      }
    }
  } else {
    task.status = 'completed_fail';
    task.success = false;
    const penalty = decFromFloat(w.penalty_fail_multiplier).mul(task.rewardPrestigeDelta);
    const pmin = decFromFloat(w.prestige_min);
    for (const r of task.reqs) state.prestige[r.domain] = quantize(dmax(pmin, state.prestige[r.domain].sub(penalty)), 3);
    if (w.penalty_fail_funds_pct > 0) {
      const advertised = task.advertisedRewardCents || task.rewardCents;
      const cents = Math.trunc(advertised * w.penalty_fail_funds_pct);
      book(state, now, ctx.cfg.fixes.fail_penalty_category ? 'task_fail_penalty' : 'task_reward', -cents, 'task', task.id);
      fundsDelta = -cents;
    }
  }
  let trustDelta = 0.0;
  if (task.clientId !== null) {
    const memo = trustMemo(w);
    const client = state.clients[task.clientId];
    if (client) {
      const step = completedTrust(memo, client.trust, success);
      trustDelta = step.delta;
      client.trust = step.trust;
    }
    if (w.trust_cross_client_decay > 0) {
      for (const other of state.clients) {
        if (other.id === task.clientId) continue;
        other.trust = crossDecayedTrust(memo, other.trust);
      }
    }
  }
  return {
    success,
    fundsDelta,
    listedReward: task.advertisedRewardCents || task.rewardCents,
    trustDelta,
    bankrupt: isBankrupt(state),
    appliedBumps,
  };
}

/** Deterministic UUID-shaped identifier of an entity (the reference uses random uuid4s). */
export type UuidFn = (kind: string, id: number) => string;

/** Wake event of a `task_half_progress` event: the task reached a progress milestone. */
export type TaskHalfWakeEvent = { type: 'task_half'; task_id: string; milestone_pct: number; handled: boolean };
/** Wake event of a finished task: success or failure, what it paid or cost, the client's trust change. */
export type TaskCompletedWakeEvent = {
  type: 'task_completed';
  task_id: string;
  task_title: string;
  client_name: string | null;
  success: boolean;
  funds_delta: number;
  listed_reward: number;
  trust_delta: Float;
  deadline_margin: string | null;
  employees_assigned: number;
  salary_bump_total_cents: number;
  bankrupt: boolean;
};
/** Wake event of a payroll run, with the funds after it. */
export type MonthlyPayrollWakeEvent = { type: 'monthly_payroll'; funds_after: number };
/** Wake event of the horizon's end. */
export type HorizonEndWakeEvent = { type: 'horizon_end'; reached: true };
/** Wake event of a bankruptcy event. */
export type BankruptcyWakeEvent = { type: 'bankruptcy'; bankrupt: true };
/** Wake event of an event type without a handler (the reference's fallback; nothing schedules one today). */
export type UnknownWakeEvent = { type: 'unknown'; event_type: EventType };
/** What `sim resume` reports of each event it processed (`wake_events`), discriminated by `type`. */
export type WakeEvent = TaskHalfWakeEvent | TaskCompletedWakeEvent | MonthlyPayrollWakeEvent | HorizonEndWakeEvent | BankruptcyWakeEvent | UnknownWakeEvent;

function dispatchEvent(ctx: Ctx, ev: SimEvent, now: number, uuid: UuidFn): Exclude<WakeEvent, MonthlyPayrollWakeEvent> {
  const { state } = ctx;
  const w = ctx.cfg.world;
  if (ev.type === 'task_half_progress') {
    const task = ev.taskId !== null ? state.tasks[ev.taskId] : undefined;
    const pct = ev.milestonePct ?? 50;
    if (task) task.milestonePct = Math.max(task.milestonePct, pct);
    recalculateEtas(ctx, now, null);
    return { type: 'task_half', task_id: uuid('task', ev.taskId ?? -1), milestone_pct: pct, handled: task !== undefined };
  }
  if (ev.type === 'task_completed') {
    const task = state.tasks[ev.taskId ?? -1];
    if (!task) throw new Error(`task_completed event for unknown task ${ev.taskId}`);
    const res = handleTaskComplete(ctx, task, now);
    recalculateEtas(ctx, now, null);
    const client = task.clientId !== null ? state.clients[task.clientId] : undefined;
    let margin: string | null = null;
    if (task.deadline !== null && task.completedAt !== null) {
      const hoursDiff = (task.deadline - task.completedAt) / US_PER_SEC / 3600;
      margin = `${hoursDiff >= 0 ? 'ahead by' : 'late by'} ${pyFormatFixed(Math.abs(hoursDiff), 0)}h`;
    }
    let bumpTotal = 0;
    let n = 0;
    for (const a of task.assignments) {
      const e = state.employees[a.employeeId];
      if (!e) continue;
      n++;
      if (res.success && !ctx.cfg.fixes.salary_bump_total) bumpTotal += Math.trunc(e.salaryCents * w.salary_bump_pct);
    }
    if (ctx.cfg.fixes.salary_bump_total) bumpTotal = res.appliedBumps;
    return {
      type: 'task_completed',
      task_id: uuid('task', task.id),
      task_title: task.title,
      client_name: client ? client.name : null,
      success: res.success,
      funds_delta: res.fundsDelta,
      listed_reward: res.listedReward,
      trust_delta: F(res.trustDelta),
      deadline_margin: margin,
      employees_assigned: n,
      salary_bump_total_cents: bumpTotal,
      bankrupt: res.bankrupt,
    };
  }
  if (ev.type === 'horizon_end') return { type: 'horizon_end', reached: true };
  if (ev.type === 'bankruptcy') return { type: 'bankruptcy', bankrupt: true };
  return { type: 'unknown', event_type: ev.type };
}

/** Outcome of one `advance_time` call. */
export interface AdvanceResult {
  eventsProcessed: number;
  payrollsApplied: number;
  balanceDelta: number;
  bankrupt: boolean;
  horizonReached: boolean;
  wakeEvents: WakeEvent[];
}

/** Reference `advance_time`: process payroll and events up to `target`; payroll always ends the call. */
export function advanceTime(ctx: Ctx, target: number, uuid: UuidFn): AdvanceResult {
  const { state } = ctx;
  let cur = state.simTime;
  const startFunds = state.fundsCents;
  const res: AdvanceResult = { eventsProcessed: 0, payrollsApplied: 0, balanceDelta: 0, bankrupt: false, horizonReached: false, wakeEvents: [] };
  const payrolls = payrollBoundaries(cur, target);
  let pi = 0;
  for (;;) {
    const nextPayroll = pi < payrolls.length ? (payrolls[pi] as number) : null;
    const nextEvent = fetchNextEvent(state, target);
    let action: 'payroll' | 'event' | 'target' = 'target';
    let at = target;
    if (nextEvent !== null && (nextEvent.at < at || (nextEvent.at === at))) {
      action = 'event';
      at = nextEvent.at;
    }
    if (nextPayroll !== null && nextPayroll <= target && (nextPayroll < at || nextPayroll === at)) {
      action = 'payroll';
      at = nextPayroll;
    }
    if (at > cur) {
      const days = (at - cur) / US_PER_SEC / 86400.0;
      // the task of a completion processed at `at` (its flushed progress is overwritten unread: see flushProgress)
      const completing = action === 'event' && (nextEvent as SimEvent).type === 'task_completed' ? (nextEvent as SimEvent).taskId : null;
      flushProgress(ctx, cur, at, completing);
      applyPrestigeDecay(ctx, days);
      applyTrustDecay(ctx, days);
      cur = at;
    }
    if (action === 'target') break;
    if (action === 'payroll') {
      const bankrupt = applyPayroll(ctx, cur);
      res.payrollsApplied++;
      pi++;
      res.wakeEvents.push({ type: 'monthly_payroll', funds_after: state.fundsCents });
      if (bankrupt) {
        insertEvent(state, 'bankruptcy', cur, null, null, `bankruptcy:${isoformat(cur)}`);
        res.bankrupt = true;
      }
      break;
    }
    const ev = nextEvent as SimEvent;
    const wake = dispatchEvent(ctx, ev, cur, uuid);
    consumeEvent(state, ev);
    res.eventsProcessed++;
    res.wakeEvents.push(wake);
    if (ev.type === 'horizon_end') {
      res.horizonReached = true;
      break;
    }
    if (ev.type === 'bankruptcy' || (wake.type === 'task_completed' && wake.bankrupt)) {
      res.bankrupt = true;
      break;
    }
  }
  state.simTime = cur;
  res.balanceDelta = state.fundsCents - startFunds;
  return res;
}

/**
 * Decimal quantization the reference's SQLite storage applies (`Decimal('%.{s}f' % float(x))`).
 *
 * Where it applies: the reference flushes a modified row and drops its last Python reference when the
 * function that changed it returns; SQLAlchemy's identity map holds objects weakly, so the next query
 * reloads the row from SQLite, i.e. quantized. Every function that writes a Numeric column (progress
 * flush, decay, completion, cancel) returns before anyone reads the value again, so we quantize at the
 * write. (Verified by the golden trajectories: trust read by a completion handler after decay in the same
 * `sim resume` is the 3-dp value.)
 */
export function quantize(x: Dec, scale: number): Dec {
  if (x.decimalPlaces() <= scale) return x;
  // quantizeByText's fast path without its text: when the tail read from x's words (off by < 1e-15) is farther from
  // one half than a bound of that function's margin (|integer part| < 10^(e+1)) plus 1e-12, its own tail (x's text,
  // off by < 1e-16) passes its test too and it returns this very value.
  const e = x.e;
  if (e <= 20) {
    const eps = ((e >= 0 ? (POW10[e + 1] as number) : 0) + 1) * 1e-15 * (POW10[scale] as number) + 1e-12;
    if (Math.abs(fractionTail(x, scale) - 0.5) > eps) return x.toDecimalPlaces(scale, Dec.ROUND_HALF_EVEN);
  }
  return quantizeByText(x, scale);
}

/** {@link quantize} for x with more than `scale` decimals, deciding from x's text. */
export function quantizeByText(x: Dec, scale: number): Dec {
  // Fast path: unless x lies so close to a rounding midpoint that converting it to a double could move it
  // across (the double is within 2^-53 |x| of x), '%.Nf' of the double rounds the same way as x itself.
  const s = x.toFixed();
  const dot = s.indexOf('.');
  const tail = Number(`0.${s.slice(dot + 1 + scale, dot + 18 + scale)}`); // position within the last unit
  const eps = (Math.abs(Number(s.slice(0, dot))) + 1) * 1e-15 * 10 ** scale;
  if (Math.abs(tail - 0.5) > eps) return x.toDecimalPlaces(scale, Dec.ROUND_HALF_EVEN);
  return quantizeExact(x, scale);
}

/** The reference's storage round trip, literally: `Decimal('%.{s}f' % float(x))`. */
export function quantizeExact(x: Dec, scale: number): Dec {
  return decFromPlain(pyFormatFixed(decToNumber(x), scale));
}

export { Dec };
