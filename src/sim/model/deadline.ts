/**
 * A task's deadline, and the latest one a world config can give.
 *
 * `task accept` sets the deadline `deadlineBusinessDays(w, maxQty)` business days of `workday_end_hour -
 * workday_start_hour` hours after the acceptance (the reference: `add_business_hours(now, max(min_days,
 * int(maxqty / qty_per_day)) * span)`, maxqty after the trust cut). Instants are microseconds since 1970 in doubles,
 * exact only up to 2**53 µs (2255-06-05): `latestDeadline` bounds a config's deadlines from the world's distributions,
 * so that the loader can refuse a config whose deadlines could pass that (src/config/load.ts).
 */
import { addWholeBusinessHours, CalendarEndError, LAST_START_DATE, runBounds } from './calendar.js';
import type { DistSpec, WorldConfig } from '../config/types.js';

/** The business days `task accept` gives a task whose largest requirement (after the trust cut) is `maxQty` units. */
export function deadlineBusinessDays(w: Pick<WorldConfig, 'deadline_min_biz_days' | 'deadline_qty_per_day'>, maxQty: number): number {
  return Math.max(w.deadline_min_biz_days, Math.trunc(maxQty / w.deadline_qty_per_day));
}

/** The longest horizon a run may have (the preset schema's and the reset option's maximum of `horizon_years`). */
export const MAX_HORIZON_YEARS = 100;

/** The latest instant any run ends (the last start date plus the longest horizon): no task is accepted after it. */
export const LATEST_RUN_END = runBounds(LAST_START_DATE, MAX_HORIZON_YEARS).horizonEnd;

/** The last exact instant: 2**53 - 1 µs (2255-06-05T23:47:34.740991). */
export const LAST_EXACT_INSTANT = Number.MAX_SAFE_INTEGER;

/**
 * The largest integer part a draw of `spec` can have: `high` (every family but `constant` ends clamped to it, the
 * beta and normal draws then rounded to 4 decimals, a uniform one at most an ulp above it), rounded up; a constant's
 * value, truncated.
 */
function largestIntDraw(spec: DistSpec): number {
  return spec.type === 'constant' ? Math.trunc(spec.value) : Math.ceil(spec.high);
}

/** The facts of a config's latest deadline, for `latestDeadline` and the loader's message. */
export interface LatestDeadline {
  /** The largest required prestige a task can have (the first ten tasks have 1). */
  prestige: number;
  /** The largest drawn quantity of a domain, before the prestige scale. */
  qty: number;
  /** The largest requirement a task can have when accepted: max(200, qty scaled), the trust cut's floor being 200. */
  maxQty: number;
  /** deadlineBusinessDays of maxQty. */
  days: number;
  /** The workday's hours (workday_end_hour - workday_start_hour). */
  span: number;
  /** days × span business hours. */
  hours: number;
  /** The most business hours a deadline may be after LATEST_RUN_END and stay exact. */
  maxHours: number;
}

let maxHoursMemo: number | undefined;

/** The most whole business hours after LATEST_RUN_END that end at or before LAST_EXACT_INSTANT (computed once). */
function maxExactHours(): number {
  if (maxHoursMemo !== undefined) return maxHoursMemo;
  const fits = (n: number): boolean => {
    try {
      return addWholeBusinessHours(LATEST_RUN_END, n) <= LAST_EXACT_INSTANT;
    } catch (e) {
      if (e instanceof CalendarEndError) return false;
      throw e;
    }
  };
  // 2**20 hours (~430 years of business days) is past it, and before year 9999 from any run end.
  let lo = 1;
  let hi = 2 ** 20;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  maxHoursMemo = lo;
  return lo;
}

/**
 * The latest deadline a world config can give, as business hours after the acceptance, with what it is made of. An
 * upper bound: every draw's integer part at its largest (world.ts: a requirement is int(int(qty draw) × (1 +
 * prestige_qty_scale × (prestige - 1))), the prestige int(prestige draw), or 1 for the first ten tasks), and float
 * products and quotients are monotone, so no task's deadline is later. A deadline ends at or before
 * LAST_EXACT_INSTANT from every acceptance (at or before LATEST_RUN_END) when `hours <= maxHours`.
 */
export function latestDeadline(w: WorldConfig): LatestDeadline {
  const prestige = Math.max(1, largestIntDraw(w.dist.required_prestige));
  const qty = Math.max(0, largestIntDraw(w.dist.required_qty));
  const scale = 1 + w.prestige_qty_scale * (prestige - 1);
  const maxQty = Math.max(200, Math.trunc(qty * scale));
  const days = deadlineBusinessDays(w, maxQty);
  const span = w.workday_end_hour - w.workday_start_hour;
  return { prestige, qty, maxQty, days, span, hours: days * span, maxHours: maxExactHours() };
}
