/**
 * Python (CPython 3.11) float semantics: `repr(float)`, `'%.Nf' % x`, `round(x, n)`, `round(x)`.
 *
 * All rounding is done on the EXACT binary value of the double, half-to-even, like CPython's
 * `_Py_dg_dtoa` (mode 3). A fast floating-point path handles the common case and provably
 * defers to an exact BigInt expansion whenever the scaled value is anywhere near a .5 tie.
 */

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
/** Index of the high 32-bit word of a double inside U32 (1 on little-endian hosts). */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;

/** Exact powers of ten 10^0 .. 10^22 (all exactly representable as doubles; 5^22 < 2^53). */
export const POW10: readonly number[] = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** Fast path is only used while |x * 10^digits| stays below this bound (ulp <= 2^-9). */
const FAST_LIMIT = 2 ** 43;
/** Relative safety margin around .5 ties: 4x the maximal relative rounding error of one multiply. */
const TIE_MARGIN = 2 ** -51;

/** Decompose a finite double into BigInt mantissa and power-of-two exponent: |x| = m * 2^e (subnormals: e = -1074). */
export function decompose(x: number): { m: bigint; e: number } {
  F64[0] = x;
  const hi = U32[HI] as number;
  const lo = U32[LO] as number;
  const bexp = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (bexp === 0) return { m, e: -1074 };
  m |= 1n << 52n;
  return { m, e: bexp - 1075 };
}

/** True for negative numbers and for -0.0 (Python prints a '-' for both). */
function isNegative(x: number): boolean {
  return x < 0 || (x === 0 && 1 / x < 0);
}

/** round_half_even(|x| * 10^digits) computed exactly with BigInt (x finite, digits >= 0). */
function scaledRoundExact(x: number, digits: number): bigint {
  const { m, e } = decompose(x);
  const num = m * 10n ** BigInt(digits);
  if (e >= 0) return num << BigInt(e);
  const sh = BigInt(-e);
  const q = num >> sh;
  const rem = num - (q << sh);
  const half = 1n << (sh - 1n);
  if (rem > half || (rem === half && (q & 1n) === 1n)) return q + 1n;
  return q;
}

/**
 * round_half_even(|x| * 10^digits) as a plain number when the fast path is provably exact,
 * or -1 when the caller must use the exact BigInt path.
 */
function scaledRoundFast(ax: number, digits: number): number {
  if (digits > 22) return -1;
  const y = ax * (POW10[digits] as number);
  if (!(y < FAST_LIMIT)) return -1;
  const n = Math.floor(y);
  const f = y - n; // exact: y < 2^43 so y - floor(y) is representable
  const d = f - 0.5;
  // |y - ax*10^d| <= ulp(y)/2 <= y * 2^-53; TIE_MARGIN is 4x that. Near-tie -> exact path.
  if (Math.abs(d) <= y * TIE_MARGIN + 5e-324) return -1;
  return d < 0 ? n : n + 1;
}

/**
 * The integer n = round_half_even(|x| * 10^digits) when {@link pyFormatFixed} takes its fast path for x (then
 * `'%.{digits}f' % x` is n's digits with the point placed `digits` from the right, after a '-' for negative x and -0),
 * or -1 (NaN, infinities, large values, digits > 22, near-ties: the text must come from pyFormatFixed itself).
 */
export function fixedScaledFast(x: number, digits: number): number {
  return scaledRoundFast(Math.abs(x), digits);
}

/** Insert a decimal point `digits` places from the right of the non-negative integer string `s`. */
function placePoint(s: string, digits: number): string {
  if (digits === 0) return s;
  const padded = s.length <= digits ? '0'.repeat(digits + 1 - s.length) + s : s;
  return `${padded.slice(0, padded.length - digits)}.${padded.slice(padded.length - digits)}`;
}

/** Exactly Python's `'%.{digits}f' % x` (round-half-even on the exact binary value; '-0.000', 'nan', 'inf'). */
export function pyFormatFixed(x: number, digits: number): string {
  if (!Number.isInteger(digits) || digits < 0) throw new RangeError(`pyFormatFixed: bad digits ${digits}`);
  if (x !== x) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  const neg = isNegative(x);
  const ax = Math.abs(x);
  const fast = scaledRoundFast(ax, digits);
  // (decFromFixed in ./decimal.ts builds the Decimal of this text from `fast` alone, by this layout)
  const body = fast >= 0 ? placePoint(String(fast), digits) : placePoint(scaledRoundExact(ax, digits).toString(), digits);
  return neg ? `-${body}` : body;
}

/** Alias of {@link pyFormatFixed}: Python's `'%.{digits}f' % x`. */
export const pyFormatF: (x: number, digits: number) => string = pyFormatFixed;

/**
 * `'%.{scale}f' % x`: the decimal text SQLAlchemy's SQLite `Numeric(asdecimal=True)` produces when it
 * reads back a REAL column with `Decimal('%.{scale}f' % value)` (alias of {@link pyFormatFixed}).
 */
export function pyDecimalQuantize(x: number, scale: number): string {
  return pyFormatFixed(x, scale);
}

/** CPython's NDIGITS_MAX / NDIGITS_MIN for float.__round__. */
const NDIGITS_MAX = 323;
const NDIGITS_MIN = -308;

/** Exactly Python's `round(x, ndigits)` for a float x and int ndigits (half-even on the exact value; keeps -0.0). */
export function pyRound(x: number, ndigits: number): number {
  if (!Number.isInteger(ndigits)) throw new RangeError(`pyRound: ndigits must be an integer, got ${ndigits}`);
  if (!Number.isFinite(x) || x === 0) return x;
  if (ndigits > NDIGITS_MAX) return x;
  if (ndigits < NDIGITS_MIN) return 0.0 * x;
  const neg = x < 0;
  const ax = Math.abs(x);
  let r: number;
  if (ndigits >= 0) {
    const fast = scaledRoundFast(ax, ndigits);
    if (fast >= 0) {
      // fast < 2^53 and 10^n exact: IEEE division is the correctly rounded value of fast/10^n,
      // i.e. exactly what strtod(dtoa(x, 3, n)) yields.
      r = fast / (POW10[ndigits] as number);
    } else {
      const q = scaledRoundExact(ax, ndigits);
      r = Number(`${q.toString()}e-${ndigits}`);
    }
  } else {
    // Round to a multiple of 10^k (k = -ndigits), half-even on the exact value.
    const k = -ndigits;
    const { m, e } = decompose(ax);
    const p = 10n ** BigInt(k);
    // ax = m * 2^e; compute round_half_even(ax / 10^k) exactly as a rational num/den.
    let num = m;
    let den = p;
    if (e >= 0) num <<= BigInt(e);
    else den <<= BigInt(-e);
    const q = num / den;
    const rem2 = (num - q * den) * 2n;
    const qq = rem2 > den || (rem2 === den && (q & 1n) === 1n) ? q + 1n : q;
    r = Number(`${qq.toString()}e${k}`);
  }
  if (r === Infinity) throw new Error('OverflowError: rounded value too large to represent');
  return neg ? -r : r;
}

/** Exactly Python's `round(x)` with no ndigits: nearest integer, ties to even; throws like Python on inf/nan. */
export function pyRoundInt(x: number): number {
  if (x !== x) throw new Error('ValueError: cannot convert float NaN to integer');
  if (!Number.isFinite(x)) throw new Error('OverflowError: cannot convert float infinity to integer');
  const t = Math.trunc(x);
  const diff = x - t; // exact
  let r = t;
  if (diff > 0.5 || (diff === 0.5 && t % 2 !== 0)) r = t + 1;
  else if (diff < -0.5 || (diff === -0.5 && t % 2 !== 0)) r = t - 1;
  return r === 0 ? 0 : r; // Python ints have no -0
}

/** Exactly Python's `repr(x)` / `str(x)` for a float (shortest round-trip digits, Python layout). */
export function pyRepr(x: number): string {
  if (x !== x) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return 1 / x < 0 ? '-0.0' : '0.0';
  const neg = x < 0;
  const ax = neg ? -x : x;
  if (ax >= 1e-4 && ax < 1e16) {
    // Python prints these in fixed notation (its decimal exponent is then in [-4, 16)), and so does
    // JS (fixed for 1e-7 <= |x| < 1e21); only the mandatory '.0' differs.
    const t = String(x);
    return t.indexOf('.') >= 0 ? t : `${t}.0`;
  }
  // JS Number::toString yields the same shortest, closest digit string as Python's dtoa mode 0.
  const s = String(ax);
  let mant = s;
  let exp10 = 0;
  const ei = s.indexOf('e');
  if (ei >= 0) {
    mant = s.slice(0, ei);
    exp10 = Number(s.slice(ei + 1));
  }
  const dot = mant.indexOf('.');
  let digits = dot >= 0 ? mant.slice(0, dot) + mant.slice(dot + 1) : mant;
  let decpt = (dot >= 0 ? dot : mant.length) + exp10;
  // strip leading zeros (e.g. "0.001" -> digits "0001")
  let lead = 0;
  while (lead < digits.length - 1 && digits[lead] === '0') lead++;
  digits = digits.slice(lead);
  decpt -= lead;
  // strip trailing zeros (e.g. "100" -> "1", decpt 3)
  let end = digits.length;
  while (end > 1 && digits[end - 1] === '0') end--;
  digits = digits.slice(0, end);
  let out: string;
  if (decpt <= -4 || decpt > 16) {
    const e = decpt - 1;
    const m = digits.length > 1 ? `${digits[0] as string}.${digits.slice(1)}` : digits;
    const ae = Math.abs(e);
    out = `${m}e${e < 0 ? '-' : '+'}${ae < 10 ? '0' : ''}${ae}`;
  } else if (decpt <= 0) {
    out = `0.${'0'.repeat(-decpt)}${digits}`;
  } else if (decpt >= digits.length) {
    out = `${digits}${'0'.repeat(decpt - digits.length)}.0`;
  } else {
    out = `${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  return neg ? `-${out}` : out;
}
