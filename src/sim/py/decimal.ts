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

/** A Decimal carrying its memoised float (an own property: a WeakMap lookup costs more than the conversion saves). */
interface FloatMemo {
  readonly ycgymFloat?: number;
}

/** Python `float(d)`: correctly rounded conversion to a double (memoised on the instance: Decimals are immutable). */
export function toFloat(d: Dec): number {
  const m = d as unknown as FloatMemo;
  let f = m.ycgymFloat;
  if (f === undefined) {
    f = d.toNumber();
    // Non-enumerable, so deep equality and key listings still see only decimal.js's own fields.
    if (Object.isExtensible(d)) Object.defineProperty(d, 'ycgymFloat', { value: f });
  }
  return f;
}

/** Larger of two Decimals; on equality returns the first (Python `max` semantics). */
export function dmax(a: Dec, b: Dec): Dec {
  return b.gt(a) ? b : a;
}

/** Smaller of two Decimals; on equality returns the first (Python `min` semantics). */
export function dmin(a: Dec, b: Dec): Dec {
  return b.lt(a) ? b : a;
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
