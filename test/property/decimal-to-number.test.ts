/**
 * `fastToNumber` / `toFloat` / `decToNumber` (Clinger's fast path on decimal.js's digit words) and `digitsToNumber`
 * (the digits and exponent as text, for the Decimals the fast path does not take) equal decimal.js's
 * `toNumber()` bit for bit (Object.is: -0 included) over short and long significands, every exponent the fast path
 * takes and beyond, signs, zeros, and Decimals produced by arithmetic (28-digit quotients, sums, products).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { D, Dec, decToNumber, digitsToNumber, fastToNumber, toFloat } from '../../src/sim/py/decimal.js';

const digits = (max: number) => fc.stringMatching(new RegExp(`^[0-9]{1,${max}}$`));
/** Decimal text: sign, 1-30 digits, a decimal point somewhere or an exponent (-40..40). */
const decText = fc
  .tuple(fc.boolean(), digits(30), fc.integer({ min: -40, max: 40 }), fc.boolean())
  .map(([neg, ds, e, sci]) => `${neg ? '-' : ''}${sci ? `${ds}e${e}` : ds.length > 1 && e > 0 ? `${ds.slice(0, Math.min(e, ds.length - 1))}.${ds.slice(Math.min(e, ds.length - 1))}` : ds}`);

function same(d: Dec): void {
  const want = d.toNumber();
  const fast = fastToNumber(d);
  if (fast !== undefined) expect(Object.is(fast, want)).toBe(true);
  expect(Object.is(toFloat(d), want)).toBe(true);
  expect(Object.is(decToNumber(d), want)).toBe(true);
  expect(Object.is(digitsToNumber(d), want)).toBe(true);
}

describe('fastToNumber', () => {
  it('equals toNumber() on decimal texts', () => {
    fc.assert(fc.property(decText, (t) => same(D(t))), { numRuns: 20000 });
  });

  it('equals toNumber() on the Decimal of a double and on 3/4-dp storage values', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: 0, max: 6 }), (x, dp) => {
        same(D(Object.is(x, -0) ? '-0' : String(x)));
        if (Math.abs(x) < 1e15) same(D(x.toFixed(dp)));
      }),
      { numRuns: 20000 },
    );
  });

  it('equals toNumber() on arithmetic results', () => {
    fc.assert(
      fc.property(decText, decText, (a, b) => {
        const x = D(a);
        const y = D(b);
        same(x.add(y));
        same(x.sub(y));
        same(x.mul(y));
        if (!y.isZero()) same(x.div(y));
      }),
      { numRuns: 5000 },
    );
  });

  it('edges: zeros, 2^53 boundary, exponent ±22/23, NaN and infinities', () => {
    for (const t of ['0', '-0', '0.000', '-0.000', '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993',
      '1e22', '1e23', '9007199254740991e22', '9007199254740991e-22', '1e-22', '1e-23', '123456789012345e-22', '0.1', '0.3',
      '2.675', '1e-400', '1e400', '99999999999999999999', '4503599627370497.5']) same(D(t));
    for (const d of [new Dec(NaN), new Dec(Infinity), new Dec(-Infinity)]) {
      expect(fastToNumber(d)).toBeUndefined();
      expect(Object.is(toFloat(d), d.toNumber())).toBe(true);
    }
    // the fast path does take the common shapes
    for (const t of ['0', '-0', '12.345', '200', '0.0001', '-3.5']) expect(fastToNumber(D(t))).toBeDefined();
  });
});
