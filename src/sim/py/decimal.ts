/**
 * Decimal arithmetic configured like Python's default `decimal` context
 * (28 significant digits, ROUND_HALF_EVEN), isolated from decimal.js's global constructor.
 */
import { Decimal as DecimalJs } from 'decimal.js';

/** The project's Decimal constructor: precision 28, half-even, like Python's default context. */
export const Dec = DecimalJs.clone({ precision: 28, rounding: DecimalJs.ROUND_HALF_EVEN, toExpNeg: -40, toExpPos: 40 });
/** A Decimal value from the project's constructor. */
export type Dec = InstanceType<typeof Dec>;

/** Decimal from an integer or exact decimal string. */
export function D(v: number | string): Dec {
  return new Dec(v);
}

/** Decimal zero. */
export const DZERO: Dec = new Dec(0);

const fromFloatCache = new Map<number, Dec>();

/** Python `Decimal(str(x))` for a float x (shortest round-trip digits, identical in JS and Python). Memoised. */
export function decFromFloat(x: number): Dec {
  let d = fromFloatCache.get(x);
  if (d === undefined) {
    d = new Dec(Object.is(x, -0) ? '-0' : String(x));
    if (fromFloatCache.size >= 16384) fromFloatCache.clear();
    fromFloatCache.set(x, d);
  }
  return d;
}

const floatCache = new WeakMap<Dec, number>();

/**
 * Python `float(d)`: correctly rounded conversion to a double (memoised: Decimals are immutable). The memo is a
 * WeakMap: an own property on the instance was measured 5-8% more instructions per warm-world episode (valgrind
 * callgrind), decimal.js's code then seeing Decimals of more shapes.
 */
export function toFloat(d: Dec): number {
  let f = floatCache.get(d);
  if (f === undefined) {
    f = d.toNumber();
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
  return n >= 0 && n < 64 && Number.isInteger(n) ? (SMALL_INTS[n] as Dec) : new Dec(n);
}
