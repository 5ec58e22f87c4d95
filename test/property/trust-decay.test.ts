/**
 * The trust-decay fast path (`decayParts` / `decayedMillis` / `millisDec` in src/sim/model/engine.ts) equals the
 * Decimal expression it replaces, `quantize(dmax(floor, trust - Decimal(repr(f))), 3)`, whenever it decides (it returns
 * null otherwise and the engine computes the expression): same value, same sign of zero, same text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decayedMillis, decayParts, millisDec, quantize } from '../../src/sim/model/engine.js';
import { D, decFromFloat, dmax, type Dec } from '../../src/sim/py/decimal.js';

function reference(trust: Dec, f: number, floor: Dec): Dec {
  return quantize(dmax(floor, trust.sub(decFromFloat(f))), 3);
}

let decided = 0;
function check(trustMillis: number, f: number, floor: Dec): void {
  const trust = D(trustMillis).div(1000);
  const p = decayParts(f, floor);
  if (p === null) return;
  const m = decayedMillis(trust, p);
  if (m === null) return;
  decided++;
  const got = millisDec(m);
  const want = reference(trust, f, floor);
  expect(got.toString()).toBe(want.toString());
  expect(Object.is(got.toNumber(), want.toNumber())).toBe(true);
  expect(got.eq(want)).toBe(true);
}

const floors = fc.oneof(fc.constant(D(0)), fc.constant(decFromFloat(0.5)), fc.constant(decFromFloat(1.0)), fc.integer({ min: 0, max: 99_999 }).map((m) => D(m).div(1000)));
const trusts = fc.oneof(fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: 0, max: 5_000 }));

describe('trust decay fast path', () => {
  it('equals the Decimal expression for random decays', () => {
    decided = 0;
    fc.assert(fc.property(trusts, fc.double({ min: 1e-7, max: 120, noNaN: true }), floors, (t, f, fl) => check(t, f, fl)), { numRuns: 30_000 });
    expect(decided).toBeGreaterThan(10_000);
  });

  it('equals the Decimal expression for decays of whole-microsecond spans (the engine: 0.009 per day)', () => {
    fc.assert(
      fc.property(trusts, fc.integer({ min: 1, max: 400 * 86_400_000_000 }), fc.constantFrom(0.009, 0.03, 0.0045, 0.3 * 0.03), floors, (t, us, rate, fl) =>
        check(t, rate * (us / 1_000_000 / 86400.0), fl),
      ),
      { numRuns: 30_000 },
    );
  });

  it('equals the Decimal expression at and around rounding midpoints and exact thousandths', () => {
    fc.assert(
      fc.property(trusts, fc.integer({ min: 0, max: 99_999 }), fc.integer({ min: -40, max: 40 }), fc.constantFrom(0, 0.5, 1e-9, 1e-7, 1e-12, 1e-15), floors, (t, k, ulps, frac, fl) => {
        let f = (k + 0.5 + frac) / 1000;
        for (let i = 0; i < Math.abs(ulps); i++) f = ulps > 0 ? nextUp(f) : nextDown(f);
        check(t, f, fl);
        check(t, k / 1000, fl);
        check(t, (k + 1e-7) / 1000, fl);
      }),
      { numRuns: 20_000 },
    );
  });

  it('declines outside its range', () => {
    expect(decayParts(1e-7, D(0))).toBeNull();
    expect(decayParts(100, D(0))).toBeNull();
    expect(decayParts(0.5, D('-1'))).toBeNull();
    expect(decayParts(0.5, D('0.0005'))).toBeNull();
    const p = decayParts(0.0125, D(0));
    expect(p).not.toBeNull();
    expect(decayedMillis(D('100.000'), p!)).toBeNull();
    expect(decayedMillis(D('1.2345'), p!)).toBeNull();
    expect(decayedMillis(D('0.012'), p!)).toBeNull(); // at or below the floor: dmax's choice is left to Decimals
  });
});

const F64 = new Float64Array(1);
const I64 = new BigInt64Array(F64.buffer);
function nextUp(x: number): number {
  F64[0] = x;
  I64[0] = (I64[0] as bigint) + 1n;
  return F64[0] as number;
}
function nextDown(x: number): number {
  F64[0] = x;
  I64[0] = (I64[0] as bigint) - 1n;
  return F64[0] as number;
}
