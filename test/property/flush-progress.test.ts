/**
 * The progress flush's double fast path (src/sim/model/engine.ts `flushedFast`, with calendar.ts
 * `businessMicrosBetween`) gives the fields (sign, exponent, digit words) of the Decimal steps it replaces:
 * `quantize(max(0, min(completed + rate·businessHoursBetween(t0, t1), required)), 4)`, over random and edge values.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { businessHoursBetween, businessMicrosBetween, makeInstant, US_PER_HOUR } from '../../src/sim/model/calendar.js';
import { flushedFast, quantize } from '../../src/sim/model/engine.js';
import { D, Dec, DZERO, dcmp, isPos } from '../../src/sim/py/decimal.js';

function fields(d: Dec): { s: number; e: number; d: number[] | null } {
  return { s: d.s, e: d.e, d: d.d ? [...d.d] : null };
}

function slow(completed: Dec, required: Dec, rate: Dec, hours: Dec): Dec {
  let after = completed.add(rate.mul(hours));
  if (dcmp(after, required) > 0) after = required;
  if (after.isNegative() && !after.isZero()) after = DZERO;
  return quantize(after, 4);
}

const T0 = makeInstant(2025, 1, 1);
const instant = fc.oneof(
  fc.integer({ min: 0, max: 3 * 365 * 86_400 }).chain((s) => fc.integer({ min: 0, max: 999_999 }).map((us) => T0 + s * 1_000_000 + us)),
  fc.integer({ min: 0, max: 3 * 365 * 24 }).map((h) => T0 + h * US_PER_HOUR),
);
const span = fc.oneof(fc.integer({ min: 0, max: 40 * 86_400_000_000 }), fc.integer({ min: 0, max: 3 * US_PER_HOUR }), fc.integer({ min: 0, max: 1000 }));
const fourDp = (max: number): fc.Arbitrary<Dec> => fc.integer({ min: 0, max: max * 10_000 }).map((n) => D(n).div(D(10_000)));
const rate: fc.Arbitrary<Dec> = fc.oneof(
  fourDp(20),
  fc.array(fourDp(20), { minLength: 1, maxLength: 4 }).map((xs) => xs.reduce((s, x) => s.add(x), D(0))),
  fc.tuple(fourDp(20), fc.integer({ min: 2, max: 7 })).map(([x, k]) => x.div(D(k))),
  fc.stringMatching(/^[1-9][0-9]{0,27}$/).map((digits) => new Dec(`${digits}e${-digits.length + 1}`)),
  fc.constant(DZERO),
);
const required = fc.oneof(fc.integer({ min: 0, max: 30_000 }).map((n) => D(n)), fourDp(30_000), fc.constant(new Dec('123.45678')));

function check(completed: Dec, req: Dec, r: Dec, t0: number, t1: number, correct: boolean): boolean {
  const hours = businessHoursBetween(t0, t1, correct);
  const us = businessMicrosBetween(t0, t1, correct);
  expect(us > 0).toBe(isPos(hours));
  if (!(us > 0)) return false;
  const fast = flushedFast(completed, req, r, us / US_PER_HOUR);
  if (fast === null) return false;
  const want = slow(completed, req, r, hours);
  expect(fields(fast), `${completed} + ${r} * ${hours} (req ${req})`).toEqual(fields(want));
  expect(fast.toString()).toBe(want.toString());
  return true;
}

describe('flushedFast equals the Decimal flush of one requirement', () => {
  it('on random progress, rates and flush intervals (both hour rules)', () => {
    let taken = 0;
    fc.assert(
      fc.property(fourDp(30_000), required, rate, instant, span, fc.boolean(), (c, q, r, t0, d, correct) => {
        if (check(c, q, r, t0, t0 + d, correct)) taken++;
      }),
      { numRuns: 60_000 },
    );
    expect(taken).toBeGreaterThan(15_000);
  });

  it('on values that land on and next to 4-place midpoints and the required quantity', () => {
    const t0 = makeInstant(2025, 1, 6, 9);
    let taken = 0;
    for (let i = 1; i <= 2000; i++) {
      const t1 = t0 + i * 1_800_000_000; // half hours
      const hours = businessHoursBetween(t0, t1);
      // rate·hours + completed = k + 0.00005 exactly (a midpoint), and the required quantity hit exactly
      const c = D(i * 7).div(D(10_000));
      const r1 = D(2 * i + 1).div(D(20_000)).sub(c).div(hours);
      for (const r of [r1, D(i).div(hours), D('0.00005').div(hours), D(40), D('40.00005')]) {
        if (r.isNegative()) continue;
        for (const q of [D(i), D(i + 1), D(1000), c.add(r.mul(hours)).toDecimalPlaces(4, Dec.ROUND_DOWN)]) if (check(c, q, r, t0, t1, false)) taken++;
      }
    }
    expect(taken).toBeGreaterThan(5000);
  });

  it('declines negative inputs and required quantities of more than 4 places', () => {
    expect(flushedFast(D('-0.5'), D(10), D(1), 1)).toBeNull();
    expect(flushedFast(D(1), D(10), D(-1), 1)).toBeNull();
    expect(flushedFast(D(1), D('10.00001'), D(1), 1)).toBeNull();
  });
});
