/**
 * `decFromPlain` (decimal.js's fields built from a plain decimal text) equals `new Dec(text)`: the same sign,
 * exponent and digit words (so every later operation and text is the same), over random plain texts (leading and
 * trailing zeros, points anywhere, long digit runs), the texts of doubles (`String(x)`, as `decFromFloat` passes
 * them) and of `pyFormatFixed`, and edge cases; texts that are not plain go to the constructor.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Dec, decFromFloat, decFromFloatOnce, decFromPlain } from '../../src/sim/py/decimal.js';
import { pyFormatFixed } from '../../src/sim/py/pyfloat.js';

function fields(d: Dec): { s: number; e: number; d: number[] | null } {
  return { s: d.s, e: d.e, d: d.d ? [...d.d] : null };
}

function same(text: string): void {
  const got = decFromPlain(text);
  const want = new Dec(text);
  expect(fields(got)).toEqual(fields(want));
  expect(Object.keys(got)).toEqual(Object.keys(want));
  expect(got.toString()).toBe(want.toString());
  expect(Object.is(got.toNumber(), want.toNumber())).toBe(true);
}

const plain = fc
  .tuple(fc.boolean(), fc.stringMatching(/^[0-9]{0,40}$/), fc.option(fc.stringMatching(/^[0-9]{0,40}$/)), fc.nat({ max: 12 }), fc.nat({ max: 12 }))
  .map(([neg, ip, fp, lz, tz]) => `${neg ? '-' : ''}${'0'.repeat(lz)}${ip}${fp === null ? '' : `.${fp}${'0'.repeat(tz)}`}`)
  .filter((t) => /[0-9]/.test(t));

describe('decFromPlain', () => {
  it('equals new Dec(text) on random plain texts', () => {
    fc.assert(fc.property(plain, same), { numRuns: 30_000 });
  });

  it('equals new Dec(String(x)) and new Dec(pyFormatFixed(x, n)) for doubles', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), fc.integer({ min: 0, max: 8 }), (x, n) => {
        same(String(x));
        if (Math.abs(x) < 1e25) same(pyFormatFixed(x, n));
        const want = new Dec(Object.is(x, -0) ? '-0' : String(x));
        expect(fields(decFromFloatOnce(x))).toEqual(fields(want));
        expect(fields(decFromFloat(x))).toEqual(fields(want));
      }),
      { numRuns: 30_000 },
    );
  });

  it('decFromFloat keeps the sign of zero whichever zero came first (Python: Decimal(str(-0.0)) is Decimal("-0.0"))', () => {
    for (const order of [[0, -0, 0, -0], [-0, 0, -0, 0]]) {
      for (const z of order) {
        const d = decFromFloat(z);
        expect(d.isZero()).toBe(true);
        expect(d.isNegative()).toBe(Object.is(z, -0));
        expect(Object.is(d.toNumber(), z)).toBe(true);
      }
    }
  });

  it('edge texts', () => {
    for (const t of ['0', '-0', '0.000', '-0.000', '.5', '5.', '-.5', '0.0000001', '1234567', '12345678', '1234567.1234567', '0.1234567',
      '9999999.9999999', '100000000000000000000', '0.00000000000000000000001', '1e5', '1E-7', 'NaN', '-Infinity', 'inf', '+1', '1.2.3', '', '-', '.', '1_0'])
      if (/^-?(\d+\.?\d*|\.\d+)$/.test(t)) same(t);
      else expect(fields(decFromPlainOr(t))).toEqual(fields(decFromPlainOr(t, true)));
  });
});

/** A non-plain text: whatever the constructor does (a Decimal, or NaN for its exception), both ways. */
function decFromPlainOr(t: string, ctor = false): Dec {
  try {
    return ctor ? new Dec(t) : decFromPlain(t);
  } catch {
    return new Dec(NaN);
  }
}
