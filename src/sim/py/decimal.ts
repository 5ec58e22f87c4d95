/**
 * Decimal arithmetic configured like Python's default `decimal` context
 * (28 significant digits, ROUND_HALF_EVEN), isolated from decimal.js's global constructor.
 */
import { Decimal as DecimalJs } from 'decimal.js';
import { fixedScaledFast, POW10, pyFormatFixed } from './pyfloat.js';

/** The project's Decimal constructor: precision 28, half-even, like Python's default context. */
export const Dec = DecimalJs.clone({ precision: 28, rounding: DecimalJs.ROUND_HALF_EVEN, toExpNeg: -40, toExpPos: 40 });
/** A Decimal value from the project's constructor. */
export type Dec = InstanceType<typeof Dec>;

/**
 * Decimal from an integer or exact decimal string. An integer in int32 range is passed as `v | 0`, a small integer:
 * decimal.js stores a number below 1e7 as its one word (`x.d = [v]`), and an integer computed through doubles
 * (`Math.trunc(a * b)`, `decToNumber(...) - 1`) can be a heap number, which makes that array a double array and the
 * constructor's allocation site build every later one so (the process's Decimals then carry words of two elements
 * kinds, and decimal.js's optimised code deoptimises on the second: test/unit/packed-arrays.test.ts). Pass numbers to
 * decimal.js's methods through `D` for the same reason.
 */
export function D(v: number | string): Dec {
  return new Dec(typeof v === 'number' && (v | 0) === v && !Object.is(v, -0) ? v | 0 : v);
}

/** Digit `j` (0-based, over the digits alone) of a plain decimal text whose digits start at `start` and whose point is at `dot` (-1: none), `intLen` digits before it. */
function digitOf(str: string, start: number, dot: number, intLen: number, j: number): number {
  return str.charCodeAt(start + (dot >= 0 && j >= intLen ? j + 1 : j)) - 48;
}

/** The number of `count` digits from digit `from` (count <= 7). */
function wordOf(str: string, start: number, dot: number, intLen: number, from: number, count: number): number {
  let w = 0;
  for (let q = 0; q < count; q++) w = w * 10 + digitOf(str, start, dot, intLen, from + q);
  return w;
}

/** A Decimal's fields, writable (decimal.js's own code writes them so; see {@link decFromPlain}). */
type DecFields = { s: number; e: number; d: number[] };

/**
 * `new Dec(str)` for a plain decimal text: an optional '-', digits, and at most one '.' with digits on at least one
 * side (what `String(x)` gives for 1e-6 <= |x| < 1e21 and what `pyFormatFixed` gives for finite x). Any other text goes
 * to `new Dec(str)`. Builds decimal.js's fields directly instead of its string parse (regex test, replace, search,
 * slices): the same steps as decimal.js 10's `parseDecimal` (exponent of the first significant digit, leading and
 * trailing zeros dropped, base-1e7 words aligned so that the first holds (e+1) mod 7 digits, the last padded with
 * zeros), applied to the digits in place. A Decimal made by the constructor is then given these fields (the
 * constructor's own, in its order: s, e, d), so it has the same shape. test/property/dec-from-plain.test.ts compares
 * s, e and d with the constructor's over random and edge texts.
 */
export function decFromPlain(str: string): Dec {
  const n = str.length;
  let start = 0;
  let sign = 1;
  if (n > 0 && str.charCodeAt(0) === 45) {
    start = 1;
    sign = -1;
  }
  let dot = -1;
  for (let i = start; i < n; i++) {
    const c = str.charCodeAt(i);
    if (c === 46) {
      if (dot >= 0) return new Dec(str);
      dot = i;
    } else if (c < 48 || c > 57) return new Dec(str);
  }
  const total = n - start - (dot >= 0 ? 1 : 0); // digits in all
  if (total === 0) return new Dec(str);
  const intLen = (dot >= 0 ? dot : n) - start; // digits before the point
  let lead = 0;
  while (lead < total && digitOf(str, start, dot, intLen, lead) === 0) lead++;
  const x = new Dec(0);
  const f = x as unknown as DecFields;
  if (lead === total) {
    // zero: parseDecimal leaves e = 0, d = [0]; the sign is the text's
    f.s = sign;
    return x;
  }
  let end = total;
  while (digitOf(str, start, dot, intLen, end - 1) === 0) end--;
  const len = end - lead;
  const e = intLen - lead - 1;
  let k = (e + 1) % 7;
  if (e < 0) k += 7;
  let d: number[] | null = null;
  let j = lead;
  let pad: number;
  if (k < len) {
    d = [];
    if (k) d.push(wordOf(str, start, dot, intLen, j, k));
    j += k;
    while (j < end - 7) {
      d.push(wordOf(str, start, dot, intLen, j, 7));
      j += 7;
    }
    pad = 7 - (end - j);
  } else pad = k - len;
  let last = wordOf(str, start, dot, intLen, j, end - j);
  for (let q = 0; q < pad; q++) last *= 10;
  f.s = sign;
  f.e = e;
  // Word arrays of their exact length (an array grown by push keeps room for 17 words: 152 bytes where one word
  // needs 24), as many of these Decimals are kept (generated tasks, memos).
  if (d === null || d.length === 0) f.d = [last];
  else {
    d.push(last);
    f.d = d.slice();
  }
  return x;
}

/**
 * `decFromPlain(pyFormatFixed(x, digits))`, built from the integer n = round_half_even(|x| * 10^digits) alone when
 * pyFormatFixed's fast path applies and n < 10^7 (every stored column of a generated task): that text is n's digits
 * with the point `digits` places from the right and a '-' for negative x and -0, so its Decimal is sign * n *
 * 10^-digits, and decFromPlain's steps reduce to: trailing zeros dropped (n = m * 10^t), exponent e = L - 1 - digits + t
 * for the L <= 7 digits of m, and m's digits in base-1e7 words with (e + 1) mod 7 digits in the first (7 when that is
 * 0 and e < 0), the last padded with zeros: one word, or two when the first word holds fewer digits than m has. Other
 * values go through the text. test/property/dec-from-plain.test.ts compares sign, exponent and words with the text's.
 */
export function decFromFixed(x: number, digits: number): Dec {
  const n = fixedScaledFast(x, digits);
  if (n < 0 || n >= 1e7) return decFromPlain(pyFormatFixed(x, digits));
  // '-' for negative x and for -0 (pyFormatFixed's sign), also when the value rounds to zero
  return decFromScaled(n, digits, x < 0 || Object.is(x, -0) ? -1 : 1);
}

/**
 * The Decimal sign·n·10^-digits for an integer 0 <= n < 2^53 and 0 <= digits <= 22, with the fields decFromPlain gives
 * its text (n's digits with the point `digits` places from the right, '-' for sign -1, also on zero): trailing zeros
 * dropped (n = m·10^t), exponent e = L - 1 - digits + t for the L <= 16 digits of m, and m's digits in base-1e7 words
 * of which the first holds (e + 1) mod 7 of them (7 for 0), the last padded with zeros. test/property/dec-from-plain.test.ts
 * compares sign, exponent and words with the text's.
 */
export function decFromScaled(n: number, digits: number, sign: 1 | -1 = 1): Dec {
  const r = new Dec(0);
  const f = r as unknown as DecFields;
  f.s = sign;
  if (n === 0) return r; // zero: e = 0, d = [0], as new Dec(0) has them
  let m = n;
  let e = -digits - 1;
  while (m % 10 === 0) {
    m /= 10;
    e++;
  }
  let len = 1;
  while (len < 16 && m >= (POW10[len] as number)) len++;
  e += len;
  let k = (e + 1) % 7;
  if (k <= 0) k += 7;
  f.e = e;
  // Each word `| 0`: a small integer (< 10^7) computed through doubles, which an array would otherwise hold as a double
  // (and the array literal's allocation site then makes every later one a double array): decimal.js's own words are
  // small integers, and words of two elements kinds make its element loads polymorphic (and deoptimise on the second).
  if (k >= len) {
    f.d = [(m * (POW10[k - len] as number)) | 0];
    return r;
  }
  // the top k digits, then groups of 7 (the last padded): at most 16 digits, so at most three words
  let rest = len - k;
  let p = POW10[rest] as number;
  let below = m % p;
  const d: number[] = [((m - below) / p) | 0];
  while (rest > 7) {
    rest -= 7;
    p = POW10[rest] as number;
    const lo = below % p;
    d.push(((below - lo) / p) | 0);
    below = lo;
  }
  d.push((below * (POW10[7 - rest] as number)) | 0);
  f.d = d.slice(); // of its exact length (as decFromPlain makes it)
  return r;
}

/** Decimal zero. */
export const DZERO: Dec = new Dec(0);

const fromFloatCache = new Map<number, Dec>();

/** `decFromFloat(x)` without the memo: for values that rarely repeat (they would only crowd the memo's constants out). */
export function decFromFloatOnce(x: number): Dec {
  return Object.is(x, -0) ? new Dec('-0') : decFromPlain(String(x));
}

/** `Decimal('0.0')` and `Decimal('-0.0')`: a Map takes 0 and -0 for one key, so zeros are not memoised there. */
const ZERO = decFromFloatOnce(0);
const NEG_ZERO = decFromFloatOnce(-0);

/** Python `Decimal(str(x))` for a float x (shortest round-trip digits, identical in JS and Python). Memoised. */
export function decFromFloat(x: number): Dec {
  if (x === 0) return Object.is(x, -0) ? NEG_ZERO : ZERO;
  let d = fromFloatCache.get(x);
  if (d === undefined) {
    d = decFromFloatOnce(x);
    if (fromFloatCache.size >= 16384) fromFloatCache.clear();
    fromFloatCache.set(x, d);
  }
  return d;
}

/**
 * `decFromFloat(toFloat(d))`, Python `Decimal(str(float(d)))`: `d` itself when it is nonzero, finite, of at most 14
 * significant digits (one or two base-1e7 words) and of an exponent within ±290 (every stored column: prestige deltas,
 * skill boosts, rates). Why it is the same value: float(d) is the double r nearest to d; str(r) is the shortest text
 * that converts back to r, so it has at most as many digits as d (d converts to r); two different decimals of at most
 * 15 significant digits in the normal double range never convert to the same double (DBL_DIG = 15: a double
 * rounded to 15 digits gives back any such decimal), so str(r) denotes d's value. decimal.js keeps every value in one
 * form (words aligned by the exponent, trailing zero words dropped), so the fields are those decFromFloat builds.
 * test/property/decimal-shortcuts.test.ts compares the two.
 */
export function decViaFloat(d: Dec): Dec {
  const w = d.d as number[] | null;
  if (w !== null && w.length <= 2 && (w[0] as number) !== 0 && d.e > -290 && d.e < 290) return d;
  return decFromFloat(toFloat(d));
}

const floatCache = new WeakMap<Dec, number>();

/**
 * `d.toNumber()` without building the decimal string, for a finite Decimal whose significand N (its digits as an
 * integer) is below 2^53 and whose value is N·10^k with |k| <= 22; `undefined` for any other Decimal.
 *
 * Why it is identical: decimal.js's toNumber is `+String(d)`, and ECMAScript's string-to-number conversion rounds the
 * exact decimal value correctly (ties to even; exact for strings of at most 20 significant digits, and N < 2^53 has
 * at most 16). Here N and 10^|k| are both exact doubles, so the one IEEE multiplication or division N·10^k or
 * N/10^-k is the correctly rounded value of the same exact number (Clinger's fast path). The sign is applied last
 * (negation is exact; -0 stays -0, as `+'-0'` does).
 *
 * Layout (decimal.js 10): `d.d` are base-1e7 words, the first without leading zeros (zero is [0]), the others 7
 * digits each; `d.e` is the base-10 exponent of the first digit; `d.s` the sign (±1). So with L digits in all,
 * value = s·N·10^(e-L+1). N is built word by word: while the exact N is below 2^53 every step is exact; when it is
 * not, the computed N is >= 2^53 too (rounding is monotone and 2^53 is a double), so the test below rejects it.
 */
export function fastToNumber(d: Dec): number | undefined {
  const w = d.d as number[] | null;
  if (!w) return undefined; // NaN, ±Infinity
  const n = w.length;
  if (n > 3) return undefined;
  const w0 = w[0] as number;
  const len0 = w0 < 10 ? 1 : w0 < 100 ? 2 : w0 < 1000 ? 3 : w0 < 10000 ? 4 : w0 < 100000 ? 5 : w0 < 1000000 ? 6 : 7;
  let m = w0;
  for (let i = 1; i < n; i++) m = m * 1e7 + (w[i] as number);
  if (m >= 9007199254740992) return undefined;
  const k = d.e - (len0 + 7 * (n - 1)) + 1;
  let r: number;
  if (k >= 0) {
    if (k > 22) return undefined;
    r = m * (POW10[k] as number);
  } else {
    if (k < -22) return undefined;
    r = m / (POW10[-k] as number);
  }
  return d.s < 0 ? -r : r;
}

/**
 * The fraction of |d|·10^scale (0 <= scale <= 22) as a double, summed from d's words (off by less than 1e-15; words
 * below 10^-22 of a unit are left out, each under 1e-15 of it): word i of decimal.js's fields holds the digits of
 * 10^(7(floor(e/7) - i)), so word i counts for w·10^p with p = 7(floor(e/7) - i) + scale, its part below the point
 * when -7 < p < 0, nothing when p >= 0. NaN for NaN and ±Infinity.
 */
export function fractionTail(d: Dec, scale: number): number {
  const w = d.d as number[] | null;
  if (!w) return NaN;
  const q = Math.floor(d.e / 7);
  let tail = 0;
  for (let i = 0; i < w.length; i++) {
    const p = 7 * (q - i) + scale;
    if (p >= 0) continue;
    if (p < -22) break;
    let v = w[i] as number;
    if (p > -7) v %= POW10[-p] as number;
    tail += v / (POW10[-p] as number);
  }
  return tail;
}

/**
 * floor(|d|·10^scale) for a finite d with |d|·10^scale < 2^53 (0 <= scale <= 22), from its words as in
 * {@link fractionTail}: the words at or above the point (p >= 0) times 10^p and the part above the point of a word
 * that straddles it; every partial sum is an integer below 2^53, so exact.
 */
export function scaledFloor(d: Dec, scale: number): number {
  const w = d.d as number[];
  const q = Math.floor(d.e / 7);
  let n = 0;
  for (let i = 0; i < w.length; i++) {
    const p = 7 * (q - i) + scale;
    if (p <= -7) break;
    const v = w[i] as number;
    n += p >= 0 ? v * (POW10[p] as number) : Math.floor(v / (POW10[-p] as number));
  }
  return n;
}

/** Zero padding of a base-1e7 word's digits to seven, by the count of its digits. */
const PAD7: readonly string[] = ['0000000', '000000', '00000', '0000', '000', '00', '0', ''];

/**
 * `d.toNumber()` of a finite Decimal, from its digits and exponent (`DIGITSeK`) instead of decimal.js's text. Why it is
 * identical: decimal.js's toNumber is `+String(d)`, and both texts denote the same decimal value (the words' digits,
 * the first word without leading zeros and the others zero-padded to seven, times 10^k with k as in
 * {@link fastToNumber}); JavaScript converts a text to the Number of the decimal value it denotes, leading and
 * trailing zeros and the exponent's form aside (V8 rounds it correctly for any count of digits), so both give the same
 * double. decimal.js builds its text by placing the point or an exponent among the digits, several times slower.
 * test/property/decimal-to-number.test.ts compares it with toNumber.
 */
export function digitsToNumber(d: Dec): number {
  const w = d.d as number[] | null;
  if (!w) return d.toNumber(); // NaN, ±Infinity
  let s = String(w[0]);
  const len0 = s.length;
  for (let i = 1; i < w.length; i++) {
    const t = String(w[i]);
    s += (PAD7[t.length] as string) + t;
  }
  const k = d.e - (len0 + 7 * (w.length - 1)) + 1;
  const r = Number(k === 0 ? s : `${s}e${k}`);
  return d.s < 0 ? -r : r;
}

/** `d.toNumber()` (not memoised): {@link fastToNumber} when it applies, else {@link digitsToNumber}. */
export function decToNumber(d: Dec): number {
  const q = fastToNumber(d);
  return q !== undefined ? q : digitsToNumber(d);
}

/**
 * Python `float(d)`: correctly rounded conversion to a double. Short Decimals (every stored column, most values the
 * engine reads) take {@link fastToNumber}; the others are memoised (Decimals are immutable). The memo is a WeakMap: an
 * own property on the instance was measured 5-8% more instructions per warm-world episode (valgrind callgrind),
 * decimal.js's code then seeing Decimals of more shapes.
 */
export function toFloat(d: Dec): number {
  const q = fastToNumber(d);
  if (q !== undefined) return q;
  let f = floatCache.get(d);
  if (f === undefined) {
    f = digitsToNumber(d);
    floatCache.set(d, f);
  }
  return f;
}

/**
 * `a.cmp(b)`: 1, -1, 0, or NaN when either is NaN. decimal.js's cmp first copies `b` (`new Decimal(b)`, a digit
 * array slice); this runs the same steps on `b` itself. The copy changes nothing for a Decimal whose exponent lies
 * within minE..maxE, which holds for every finite Decimal decimal.js returns (it overflows/underflows the rest).
 */
export function dcmp(a: Dec, b: Dec): number {
  const xd = a.d as number[] | null;
  const yd = b.d as number[] | null;
  const xs = a.s;
  const ys = b.s;
  // NaN or ±Infinity
  if (!xd || !yd) return !xs || !ys ? NaN : xs !== ys ? xs : xd === yd ? 0 : !xd !== xs < 0 ? 1 : -1;
  // either zero
  if (!xd[0] || !yd[0]) return xd[0] ? xs : yd[0] ? -ys : 0;
  if (xs !== ys) return xs;
  if (a.e !== b.e) return a.e > b.e !== xs < 0 ? 1 : -1;
  const xdL = xd.length;
  const ydL = yd.length;
  for (let i = 0, j = xdL < ydL ? xdL : ydL; i < j; ++i) {
    const u = xd[i] as number;
    const v = yd[i] as number;
    if (u !== v) return u > v !== xs < 0 ? 1 : -1;
  }
  return xdL === ydL ? 0 : xdL > ydL !== xs < 0 ? 1 : -1;
}

/** Larger of two Decimals; on equality returns the first (Python `max` semantics). */
export function dmax(a: Dec, b: Dec): Dec {
  return dcmp(b, a) > 0 ? b : a;
}

/** Smaller of two Decimals; on equality returns the first (Python `min` semantics). */
export function dmin(a: Dec, b: Dec): Dec {
  return dcmp(b, a) < 0 ? b : a;
}

/** d > 0 without allocating a Decimal for the literal. */
export function isPos(d: Dec): boolean {
  return !d.isZero() && d.isPositive();
}

const SMALL_INTS: Dec[] = Array.from({ length: 64 }, (_, i) => new Dec(i));
/** Decimal of a small non-negative integer (shared instances for 0..63). */
export function dint(n: number): Dec {
  return n >= 0 && n < 64 && Number.isInteger(n) ? (SMALL_INTS[n] as Dec) : D(n);
}
