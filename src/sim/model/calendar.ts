/**
 * Simulated wall clock and business calendar.
 *
 * Instants are integer microseconds since 1970-01-01T00:00:00 (naive UTC, like the reference's
 * SQLite-stored datetimes). Every conversion between business hours (Decimal) and instants follows
 * the reference's `core/business_time.py` operation by operation, including its float round trips.
 */
import { D, Dec, DZERO, dcmp, decFromFloatOnce, decToNumber, dint, fractionTail, isPos, scaledFloor } from '../py/decimal.js';
import { POW10 } from '../py/pyfloat.js';

/** Microseconds per second / hour / day. */
export const US_PER_SEC = 1_000_000;
export const US_PER_HOUR = 3_600_000_000;
export const US_PER_DAY = 86_400_000_000;

const D3600 = D(3600);

/** Working day bounds in hours (the reference hard-codes 09:00-18:00). */
export interface BusinessCalendar {
  readonly startHour: number;
  readonly endHour: number;
}

/** The reference's hard-coded calendar (Mon-Fri 09:00-18:00). */
export const DEFAULT_CALENDAR: BusinessCalendar = { startHour: 9, endHour: 18 };

/** Days since epoch -> [year, month (1-12), day]. Proleptic Gregorian (Hinnant's algorithm). */
export function civilFromDays(z0: number): [number, number, number] {
  const z = z0 + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const y = yoe + era * 400;
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [m <= 2 ? y + 1 : y, m, d];
}

/** [year, month (1-12), day] -> days since epoch. */
export function daysFromCivil(y0: number, m: number, d: number): number {
  const y = m <= 2 ? y0 - 1 : y0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Instant (µs) from calendar fields. */
export function makeInstant(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, us = 0): number {
  return daysFromCivil(y, mo, d) * US_PER_DAY + h * US_PER_HOUR + mi * 60 * US_PER_SEC + s * US_PER_SEC + us;
}

/** Day number (days since epoch) of an instant. */
export function dayOf(t: number): number {
  return Math.floor(t / US_PER_DAY);
}

/** Python `weekday()`: Monday = 0 ... Sunday = 6. */
export function weekday(t: number): number {
  return (((dayOf(t) + 3) % 7) + 7) % 7;
}

/** True on Monday-Friday. */
export function isWeekday(t: number): boolean {
  return weekday(t) < 5;
}

/** Same day at hour:00:00.000000. */
export function atHour(t: number, hour: number): number {
  return dayOf(t) * US_PER_DAY + hour * US_PER_HOUR;
}

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/**
 * The last `ISO_MEMO` instants formatted, replaced in turn. A step formats the same few instants step after step: the
 * status block's `sim_time` and `horizon_end`, and `company status`'s text those and `next_payroll` (three: with two
 * entries every one of them missed, each step).
 */
const ISO_MEMO = 4;
const isoT: (number | undefined)[] = [undefined, undefined, undefined, undefined];
const isoS: string[] = ['', '', '', ''];
let isoNext = 0;

/** Python `datetime.isoformat()` of a naive datetime (microseconds only when non-zero). Remembers the last four. */
export function isoformat(t: number): string {
  for (let i = 0; i < ISO_MEMO; i++) if (Object.is(t, isoT[i])) return isoS[i] as string;
  const s = formatIso(t);
  isoT[isoNext] = t;
  isoS[isoNext] = s;
  isoNext = (isoNext + 1) % ISO_MEMO;
  return s;
}

function formatIso(t: number): string {
  const day = dayOf(t);
  const [y, mo, d] = civilFromDays(day);
  let rem = t - day * US_PER_DAY;
  const h = Math.floor(rem / US_PER_HOUR);
  rem -= h * US_PER_HOUR;
  const mi = Math.floor(rem / (60 * US_PER_SEC));
  rem -= mi * 60 * US_PER_SEC;
  const s = Math.floor(rem / US_PER_SEC);
  const us = rem - s * US_PER_SEC;
  const ys = String(y).padStart(4, '0');
  const base = `${ys}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}`;
  return us === 0 ? base : `${base}.${String(us).padStart(6, '0')}`;
}

/** Parse `YYYY-MM-DD` (ISO date) to midnight. Returns null when malformed. */
export function parseIsoDate(s: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return null;
  return validDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** Parse `MM/DD/YYYY` like Python's `strptime(s, "%m/%d/%Y")` (1-2 digit month/day). */
export function parseMdy(s: string): number | null {
  const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(s);
  if (!m) return null;
  return validDate(Number(m[3]), Number(m[1]), Number(m[2]));
}

/** Parse `YYYY-MM` like `strptime(s, "%Y-%m")`, to the first of the month. */
export function parseYm(s: string): number | null {
  const m = /^(\d{4})-(\d{1,2})$/.exec(s);
  if (!m) return null;
  return validDate(Number(m[1]), Number(m[2]), 1);
}

function validDate(y: number, mo: number, d: number): number | null {
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || y < 1 || y > 9999) return null;
  const t = makeInstant(y, mo, d);
  const [y2, mo2, d2] = civilFromDays(dayOf(t));
  if (y2 !== y || mo2 !== mo || d2 !== d) return null;
  return t;
}

/** Python `timedelta(seconds=float(x))` in µs: integer part exact, fraction via the C `accum` path, half-even. */
export function timedeltaSecondsToUs(seconds: number): number {
  const ip = Math.trunc(seconds);
  const frac = seconds - ip;
  let us = ip * US_PER_SEC;
  if (frac === 0) return us;
  const fus = frac * 1e6;
  const ip2 = Math.trunc(fus);
  us += ip2;
  const leftover = fus - ip2;
  if (leftover === 0) return us;
  let whole = Math.round(Math.abs(leftover)) * Math.sign(leftover); // C round(): half away from zero
  if (Math.abs(whole - leftover) === 0.5) {
    // exactly halfway: CPython rounds to make the total even
    const candidate = us + whole;
    if (candidate % 2 !== 0) whole = whole - Math.sign(leftover);
  }
  return us + whole;
}

/** Python `td.total_seconds()` for a µs delta. */
export function totalSeconds(deltaUs: number): number {
  return deltaUs / US_PER_SEC;
}

/**
 * Decimal hours of a µs delta, computed as the reference does: `Decimal(str(td.total_seconds())) / 3600` (28
 * significant digits, half-even). A whole number of hours h (1..63: full business days and the quirk's 15-hour days,
 * most calls) is dint(h). Any other integer delta 1 <= N < 3.6e14 µs is built from its quotient by integer arithmetic
 * ({@link hoursOfMicros}); the rest go through the Decimal division.
 */
export function deltaHours(deltaUs: number): Dec {
  if (deltaUs % US_PER_HOUR === 0 && deltaUs >= US_PER_HOUR && deltaUs < 64 * US_PER_HOUR) return dint(deltaUs / US_PER_HOUR);
  if (deltaUs >= 1 && deltaUs < 3.6e14 && Number.isInteger(deltaUs)) return hoursOfMicros(deltaUs);
  return decFromFloatOnce(deltaUs / US_PER_SEC).div(D3600);
}

/**
 * `decFromFloatOnce(N / 1e6).div(3600)` for an integer 1 <= N < 3.6e14, without the Decimal division. Why it is equal:
 * - str(N / 1e6) denotes N·10^-6 exactly (N has at most 15 digits: the double nearest to N·10^-6 prints as the
 *   shortest text that reads back as it, and no other decimal of at most 15 digits reads as the same double);
 * - so the quotient is N / (3600·10^6) = (25N / 9)·10^-10. With 25N = 9Q + R (0 <= R <= 8, 25N < 2^53: exact), it is
 *   (Q + R/9)·10^-10, whose digits are Q's L digits (L <= 15, Q >= 2) followed by the digit R repeated forever;
 * - decimal.js rounds the quotient correctly to 28 significant digits, half-even: when R = 0 the value is exact (Q's
 *   digits, its trailing zeros dropped); otherwise its first 28 digits are Q's and 28 - L times R, and what is cut
 *   off, R/9 of a unit in the last place, is below one half for R <= 4 and above it for R >= 5 (never a tie), so the
 *   last digit R becomes R + 1 <= 9 (no carry) for R >= 5;
 * - decimal.js keeps one form per value, the one decFromPlain builds from those digits: exponent e = L - 11 (Q·10^-10
 *   has L - 10 digits before the point), the digits in base-1e7 words of which the first holds (e + 1) mod 7 of them
 *   (7 for 0), the last padded with zeros. The words are cut here from Q and the run of R's directly.
 * test/property/decimal-shortcuts.test.ts compares it with the division.
 */
export function hoursOfMicros(n: number): Dec {
  const t = 25 * n;
  const r = t % 9;
  let q = (t - r) / 9;
  let len = 1;
  while (len < 16 && q >= (POW10[len] as number)) len++;
  const e = len - 11;
  let total = 28;
  if (r === 0) {
    while (q % 10 === 0) {
      q /= 10;
      len--;
    }
    total = len;
  }
  const up = r >= 5 ? 1 : 0;
  let k = (e + 1) % 7;
  if (k <= 0) k += 7;
  const d: number[] = [];
  for (let a = 0, width = k; a < total; width = 7) {
    const b = a + width < total ? a + width : total;
    // digits a..b-1: Q's digits below len, the run of R's from len (the last, digit 27, R + up)
    let v = 0;
    if (a < len) {
      const qb = b < len ? b : len;
      const below = q % (POW10[len - qb] as number);
      v = ((q - below) / (POW10[len - qb] as number)) % (POW10[qb - a] as number);
    }
    if (b > len) {
      const m = b - (a > len ? a : len);
      v = v * (POW10[m] as number) + r * (ONES[m] as number) + (b === 28 ? up : 0);
    }
    if (b - a < width) v *= POW10[width - (b - a)] as number;
    // `| 0`: a small integer (v < 10^7), so the array holds small-integer elements like decimal.js's own (the
    // arithmetic above leaves doubles, and an array of doubles makes decimal.js's element loads polymorphic)
    d.push(v | 0);
    a = b;
  }
  const x = new Dec(0);
  const f = x as unknown as { e: number; d: number[] };
  f.e = e;
  // of its exact length, as decFromPlain makes it
  f.d = d.length === 1 ? [d[0] as number] : d.slice();
  return x;
}

/** (10^m - 1) / 9: m ones, m = 0..7. */
const ONES: readonly number[] = Array.from({ length: 8 }, (_, m) => (10 ** m - 1) / 9);

function isBusinessTime(t: number, cal: BusinessCalendar): boolean {
  if (!isWeekday(t)) return false;
  const tod = t - dayOf(t) * US_PER_DAY;
  return tod >= cal.startHour * US_PER_HOUR && tod < cal.endHour * US_PER_HOUR;
}

function nextWeekdayStart(t: number, cal: BusinessCalendar): number {
  let cur = atHour(t, cal.startHour);
  while (!isWeekday(cur)) cur = atHour(cur + US_PER_DAY, cal.startHour);
  return cur;
}

/** The reference's `next_business_time`: t itself when inside business hours, else the next opening. */
export function nextBusinessTime(t: number, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  if (isBusinessTime(t, cal)) return t;
  if (!isWeekday(t)) return nextWeekdayStart(t, cal);
  const dayStart = atHour(t, cal.startHour);
  if (t < dayStart) return dayStart;
  return nextWeekdayStart(t + US_PER_DAY, cal);
}

/**
 * The reference's `add_business_hours` (an exact fit lands on 18:00): {@link addBusinessMicros} when the hours' words
 * decide it ({@link businessMicrosOf}), else the Decimal steps ({@link addBusinessHoursDecimal}).
 */
export function addBusinessHours(t: number, hours: Dec, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  const u = businessMicrosOf(hours);
  if (u >= 0) {
    // `| 0`: the kind (0, 1 or 2) of a u above 2^31 comes out of `%` as a double, and addBusinessMicros, optimised on
    // the small-integer kinds of its other callers, deoptimised on it ('not a Smi')
    const r = addBusinessMicros(t, Math.floor(u / 3), (u % 3) | 0, cal);
    if (r >= 0) return r;
  }
  return addBusinessHoursDecimal(t, hours, cal);
}

/**
 * `addBusinessHours(t, D(n))` for a safe integer n of hours, without the Decimal when 0 < n < 250000
 * ({@link addBusinessMicros} with n·3.6e9 microseconds, a multiple of 9, and no fraction).
 */
export function addWholeBusinessHours(t: number, n: number, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  if (Number.isSafeInteger(n) && n > 0 && n < FAST_HOURS_MAX) {
    const r = addBusinessMicros(t, n * US_PER_HOUR, FRACTION_NONE, cal);
    if (r >= 0) return r;
  }
  return addBusinessHoursDecimal(t, D(n), cal);
}

/** {@link addBusinessMicros}'s kinds of fraction: none (whole hours), in (0, 1/2), in (1/2, 1). */
export const FRACTION_NONE = 0;
export const FRACTION_BELOW_HALF = 1;
export const FRACTION_ABOVE_HALF = 2;

/** Hours the fast paths take (hours·3.6e9 < 2^53 with room; 114 years of business hours). */
const FAST_HOURS_MAX = 250_000;

/**
 * For `hours` > 0: 3·m + k where m = floor(hours·3.6e9) (the microseconds) and k the kind of fraction of hours·3.6e9
 * ({@link addBusinessMicros}): FRACTION_NONE when hours·4e8 is a whole number (hours of at most 10 decimals whose
 * 10^10 multiple n is divisible by 25: then m = 9n/25, a multiple of 9), else the side of one half when the fraction
 * lies more than 1e-6 from 0 and 1 and more than 1e-3 from one half; -1 otherwise (zero, negative, non-finite, hours
 * >= 250000, or a fraction near those points). The fraction is read from the words: hours·3.6e9 = 36·(I + f) with I =
 * floor(hours·1e8) (exact, below 2^53 / 36) and f its fraction (off by < 1e-15), so m = 36·I + floor(36f) and the
 * fraction is that of 36f (off by < 4e-14).
 */
export function businessMicrosOf(hours: Dec): number {
  const w = hours.d as number[] | null;
  if (w === null || hours.s < 0 || (w[0] as number) === 0 || hours.e >= 6 || dcmp(hours, FAST_HOURS_MAX_DEC) >= 0) return -1;
  if (hours.decimalPlaces() <= 10) {
    const n = scaledFloor(hours, 10); // exact: below 2.5e15
    if (n % 25 === 0) return 3 * (9 * (n / 25)) + FRACTION_NONE;
  }
  const g = 36 * fractionTail(hours, 8);
  const gi = Math.floor(g);
  const f = g - gi;
  if (!(f > 1e-6 && f < 1 - 1e-6 && Math.abs(f - 0.5) > 1e-3)) return -1;
  return 3 * (36 * scaledFloor(hours, 8) + gi) + (f < 0.5 ? FRACTION_BELOW_HALF : FRACTION_ABOVE_HALF);
}
const FAST_HOURS_MAX_DEC = D(FAST_HOURS_MAX);

/**
 * `add_business_hours(t, hours)` in integer microseconds, for hours·3.6e9 = m + x with m an integer (0 <= m < 9e14)
 * and either x = 0 with m a multiple of 9 (`kind` FRACTION_NONE: hours = m / 3.6e9 exactly, a decimal of at most 16
 * digits), or x known to lie strictly inside (0, 1/2) (FRACTION_BELOW_HALF) or (1/2, 1) (FRACTION_ABOVE_HALF), at
 * least 1e-6 from 0 and 1 and 1e-3 from one half; -1 when t is not a safe integer instant, m is out of range, or the
 * result would pass year 9999 (then the caller takes the Decimal steps, which throw there). Why it equals the Decimal
 * steps ({@link addBusinessHoursDecimal}):
 * - every day's available hours are a whole number of microseconds A (the first day's N = dayEnd - cur, then the
 *   opening-to-closing span D = 9·3.6e9 for the default calendar), so the exact remaining hours after j days are
 *   (m + x - ΣA)/3.6e9; the Decimal steps round each quotient and difference to 28 digits, off by less than 1e-21
 *   hours (values below 10^6 hours) from the exact ones;
 * - x != 0: the remaining lies at least 1e-6 µs (2.7e-16 hours) away from any whole microsecond, so `remaining <=
 *   available` is decided as m + x <= A (m < A, integers), the remaining is never zero after a day, and the last day's
 *   microseconds round(float(remaining·3600)·1e6) (the double off by under 4e-6 µs for the at most 32400 s of a day,
 *   far below the 1e-3 µs margin around one half) are m - ΣA, plus one when x > 1/2;
 * - x = 0: the first day's hours N/3.6e9 are exact as a Decimal when 9 divides N (`hoursOfMicros`); then every value
 *   is a decimal of at most 16 digits and every step exact (m <= A decides). When 9 does not divide N, neither m - N
 *   nor m - N - jD (D a multiple of 9) is 0 or D: the remaining never ties a day's available hours (no comparison that
 *   rounding could decide either way) nor vanishes, so m <= A decides, and the last day's remaining is within 1e-21
 *   hours of m - ΣA whole microseconds, to which it rounds;
 * - the whole days are skipped as the Decimal steps skip them (addWeekdays), the count by integer division.
 * test/property/business-hours.test.ts compares the two.
 */
export function addBusinessMicros(t: number, m: number, kind: number, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  if (!(Number.isSafeInteger(t) && t <= MAX_INSTANT && m >= 0 && m < 9e14 && Number.isInteger(m))) return -1;
  const exact = kind === FRACTION_NONE;
  if (exact && m === 0) return -1; // zero hours: the Decimal steps' own case
  const up = kind === FRACTION_ABOVE_HALF ? 1 : 0;
  let cur = nextBusinessTime(t, cal);
  const dayEnd = atHour(cur, cal.endHour);
  const avail = dayEnd - cur;
  let rest = m;
  // remaining <= available: m <= A for whole hours, m + x <= A (so m < A) otherwise
  if (exact ? rest > avail : rest >= avail) {
    rest -= avail;
    cur = nextBusinessTime(dayEnd, cal);
    const day = (cal.endHour - cal.startHour) * US_PER_HOUR;
    const r = rest % day;
    let whole = (rest - r) / day;
    if (exact && r === 0) whole--; // an exact fit ends the last day at closing
    if (whole > 0) {
      cur = addWeekdays(cur, whole, cal);
      rest -= whole * day;
    }
  }
  const end = cur + rest + up;
  return end <= MAX_INSTANT ? end : -1;
}

/** The reference's `add_business_hours` step by step, with Decimals (see {@link addBusinessHours}). */
export function addBusinessHoursDecimal(t: number, hours: Dec, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  if (hours.isNegative() && !hours.isZero()) throw new Error(`Cannot add negative business hours: ${hours.toString()}`);
  if (!hours.isFinite()) throw new RangeError(`Cannot add ${hours.toString()} business hours`);
  if (hours.isZero()) return nextBusinessTime(t, cal);
  let cur = nextBusinessTime(t, cal);
  let remaining = hours;
  // First (possibly partial) day, exactly as the reference loop does.
  let dayEnd = atHour(cur, cal.endHour);
  let available = deltaHours(dayEnd - cur);
  if (dcmp(remaining, available) < 1) return cur + hoursToMicros(remaining);
  remaining = remaining.sub(available);
  cur = nextBusinessTime(dayEnd, cal);
  if (!isPos(remaining)) return cur;
  // Every following day offers exactly (end - start) hours, so skip the whole days the reference loop
  // would subtract one by one (exact: each subtraction only shrinks the value, so no rounding occurs).
  const dayHours = dint(cal.endHour - cal.startHour);
  let whole = decToNumber(remaining.div(dayHours).ceil()) - 1;
  // More whole days than years 1-9999 have end after year 9999. Checked before the skip: past 2**53 its weeks were
  // inexact and addWeekdays walked the remainder day by day (2**27 days or far more: a server's thread for hours).
  if (whole > CALENDAR_DAYS) beforeYear10000(Infinity, hours);
  if (whole > 0) {
    // The quotient is rounded to 28 digits; never skip past the last partial day. (The difference is computed once
    // per candidate `whole`: the same value the test and the update would each compute.)
    let rest = remaining.sub(dayHours.mul(D(whole)));
    if (!isPos(rest)) {
      whole--;
      if (whole > 0) rest = remaining.sub(dayHours.mul(D(whole)));
    }
    if (whole > 0) {
      remaining = rest;
      cur = addWeekdays(cur, whole, cal);
    }
  }
  for (;;) {
    beforeYear10000(cur, hours);
    dayEnd = atHour(cur, cal.endHour);
    available = deltaHours(dayEnd - cur);
    if (dcmp(remaining, available) < 1) return cur + hoursToMicros(remaining);
    remaining = remaining.sub(available);
    cur = nextBusinessTime(dayEnd, cal);
    if (!isPos(remaining)) return cur;
  }
}

/** The last instant Python's `datetime` holds (9999-12-31T23:59:59.999999). */
const MAX_INSTANT = makeInstant(9999, 12, 31, 23, 59, 59, 999_999);

/** Days in years 1-9999 (Python's `date.max.toordinal()`): no span of more whole days ends before year 10000. */
const CALENDAR_DAYS = 3_652_059;

/**
 * Throw (as Python's `datetime` raises OverflowError) when business hours would end after year 9999. Before, an absurd
 * count (a restored snapshot's config with `deadline_qty_per_day` 1e-6: a deadline a billion business days away) looped
 * forever in `addBusinessHours` on instants too large to be exact, and the server with it.
 */
function beforeYear10000(t: number, hours: Dec): void {
  if (!(t <= MAX_INSTANT)) throw new CalendarEndError(`${hours.toString()} business hours end after year 9999 (date value out of range)`);
}

/** Business hours that end after year 9999, the calendar's end (Python's OverflowError). */
export class CalendarEndError extends RangeError {
  override readonly name = 'CalendarEndError';
}

/**
 * `timedeltaSecondsToUs(decToNumber(hours.mul(3600)))`: the µs of `timedelta(seconds=float(hours * 3600))` (for 0 <=
 * hours < 27: what addBusinessHours adds on its last day), read from the product's words instead of a text of its digits.
 * Why it is equal: with S = hours·3600 < 10^5 s, float(S) is within half an ulp (2^-37 s < 1e-11 s) of S, being
 * correctly rounded, and timedeltaSecondsToUs gives the integer nearest to its argument times 1e6 up to an error below
 * 1e-9 µs (its product of the fraction by 1e6 is rounded once), so when S·1e6's fraction f lies more than 1e-3 from one
 * half the result is the integer nearest to S·1e6: floor(S·1e6) + (f > 1/2), both read from the words (floor(S·1e6) <
 * 2^53: exact; f within 1e-15). Otherwise, and for other hours, it converts as before.
 * test/property/decimal-shortcuts.test.ts compares the two.
 */
export function hoursToMicros(hours: Dec): number {
  const secs = hours.mul(D3600);
  if (!secs.isNegative() && secs.e <= 4) {
    const f = fractionTail(secs, 6);
    if (Math.abs(f - 0.5) > 1e-3) return scaledFloor(secs, 6) + (f > 0.5 ? 1 : 0);
  }
  return timedeltaSecondsToUs(decToNumber(secs));
}

/** The opening instant `n` weekdays after `t` (t is an opening instant on a weekday). */
function addWeekdays(t: number, n: number, cal: BusinessCalendar): number {
  let day = dayOf(t);
  const weeks = Math.floor(n / 5);
  day += weeks * 7;
  let rest = n - weeks * 5;
  while (rest > 0) {
    day++;
    if ((((day + 3) % 7) + 7) % 7 < 5) rest--;
  }
  return day * US_PER_DAY + cal.startHour * US_PER_HOUR;
}

/** Microseconds of a same-day segment the reference's flush counts, with its quirk: the end clip uses the END instant's day (a segment ending at midnight is clipped at 24:00). */
function intervalSameDayQuirk(start: number, end: number, cal: BusinessCalendar): number {
  if (end <= start) return 0;
  if (!isWeekday(start)) return 0;
  const lo = Math.max(start, atHour(start, cal.startHour));
  const hi = Math.min(end, atHour(end, cal.endHour));
  return hi > lo ? hi - lo : 0;
}

/** Microseconds of a same-day segment inside 09:00-18:00 of its start's day. */
function intervalSameDayCorrect(start: number, end: number, cal: BusinessCalendar): number {
  if (end <= start) return 0;
  if (!isWeekday(start)) return 0;
  const lo = Math.max(start, atHour(start, cal.startHour));
  const hi = Math.min(end, atHour(start, cal.endHour));
  return hi > lo ? hi - lo : 0;
}

/**
 * Business hours between t0 and t1 as the progress flush counts them (Decimal hours): the sum over days of each day's
 * segment's hours (`deltaHours`), in day order, as the reference sums them.
 * Faithful mode reproduces the reference's midnight-clip bug; `correct` counts only 09:00-18:00.
 */
export function businessHoursBetween(t0: number, t1: number, correct = false, cal: BusinessCalendar = DEFAULT_CALENDAR): Dec {
  let total = DZERO;
  const seg = correct ? intervalSameDayCorrect : intervalSameDayQuirk;
  for (let cur = t0; cur < t1; ) {
    const segEnd = Math.min((dayOf(cur) + 1) * US_PER_DAY, t1);
    const us = seg(cur, segEnd, cal);
    if (us > 0) total = total.add(deltaHours(us));
    cur = segEnd;
  }
  return total;
}

/**
 * The same segments' microseconds summed in integers: businessHoursBetween is positive exactly when this is (every
 * counted segment is), and is within 1e-26 of its hours (each segment's quotient and the sum rounded to 28 digits).
 */
export function businessMicrosBetween(t0: number, t1: number, correct = false, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  let total = 0;
  const seg = correct ? intervalSameDayCorrect : intervalSameDayQuirk;
  for (let cur = t0; cur < t1; ) {
    const segEnd = Math.min((dayOf(cur) + 1) * US_PER_DAY, t1);
    total += seg(cur, segEnd, cal);
    cur = segEnd;
  }
  return total;
}

/** First weekday of t's month at the opening hour. */
export function firstBusinessOfMonth(t: number, cal: BusinessCalendar = DEFAULT_CALENDAR): number {
  const [y, mo] = civilFromDays(dayOf(t));
  let first = makeInstant(y, mo, 1, cal.startHour);
  while (!isWeekday(first)) first = atHour(first + US_PER_DAY, cal.startHour);
  return first;
}

/** First day of the month after t's month (midnight). */
export function nextMonthStart(t: number): number {
  const [y, mo] = civilFromDays(dayOf(t));
  return mo === 12 ? makeInstant(y + 1, 1, 1) : makeInstant(y, mo + 1, 1);
}

/** The reference's `iter_monthly_payroll_boundaries`: payroll instants b with start < b <= end (cursor stops at end). */
export function payrollBoundaries(start: number, end: number, cal: BusinessCalendar = DEFAULT_CALENDAR): number[] {
  if (end <= start) return [];
  const [y, mo] = civilFromDays(dayOf(start));
  let cursor = makeInstant(y, mo, 1, cal.startHour);
  const out: number[] = [];
  while (cursor < end) {
    const b = firstBusinessOfMonth(cursor, cal);
    if (start < b && b <= end) out.push(b);
    cursor = nextMonthStart(cursor) + cal.startHour * US_PER_HOUR;
  }
  return out;
}

/**
 * The start dates a run may have. Instants are microseconds since 1970 in doubles, exact only within 2**53 µs of it
 * (1684-06 .. 2255-06): a run starting in 9625 computed its times up to tens of µs off the reference's exact datetimes.
 * From these starts a horizon of at most 100 years ends before 2200, and every deadline a valid preset can set by
 * 2255-06-05, all exact (the loader's deadline rule: src/sim/model/deadline.ts, presets/README.md, Ranges).
 */
export const FIRST_START_DATE = '1900-01-01';
export const LAST_START_DATE = '2099-12-31';

/**
 * A run's first instant (09:00 of `startIso`) and its horizon end, as `Simulation.create` computes them; RangeError
 * naming the problem when the date is malformed, outside FIRST_START_DATE .. LAST_START_DATE, or has no image
 * `horizonYears` later (Feb 29 into a non-leap year, as Python's `replace` refuses it).
 */
export function runBounds(startIso: string, horizonYears: number): { start: number; horizonEnd: number } {
  const day = parseIsoDate(startIso);
  if (day === null) throw new RangeError(`Invalid start date: ${startIso}. Use YYYY-MM-DD.`);
  if (startIso < FIRST_START_DATE || startIso > LAST_START_DATE) {
    throw new RangeError(`start date ${startIso} is outside ${FIRST_START_DATE} to ${LAST_START_DATE} (the dates whose runs keep exact microsecond times)`);
  }
  const start = day + 9 * US_PER_HOUR;
  return { start, horizonEnd: addYears(start, horizonYears) };
}

/** Python `datetime.replace(year=y+n)` for the horizon (Feb 29 has no image in a non-leap year: error, like Python). */
export function addYears(t: number, years: number): number {
  const day = dayOf(t);
  const [y, mo, d] = civilFromDays(day);
  const tod = t - day * US_PER_DAY;
  if (y + years < 1 || y + years > 9999) throw new RangeError(`year ${y + years} is out of range`);
  const r = validDate(y + years, mo, d);
  if (r === null) throw new RangeError('day is out of range for month');
  return r + tod;
}
