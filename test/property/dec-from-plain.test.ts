/**
 * `decFromPlain` (decimal.js's fields built from a plain decimal text) equals `new Dec(text)`: the same sign,
 * exponent and digit words (so every later operation and text is the same), over random plain texts (leading and
 * trailing zeros, points anywhere, long digit runs), the texts of doubles (`String(x)`, as `decFromFloat` passes
 * them) and of `pyFormatFixed`, and edge cases; texts that are not plain go to the constructor.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Dec, decFromFixed, decFromFloat, decFromFloatOnce, decFromPlain, decFromScaled } from '../../src/sim/py/decimal.js';
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

describe('decFromScaled', () => {
  /** The text of sign·n·10^-digits: n's digits with the point `digits` places from the right. */
  const text = (n: number, digits: number, neg: boolean): string => {
    const t = String(n).padStart(digits + 1, '0');
    return `${neg ? '-' : ''}${digits === 0 ? t : `${t.slice(0, t.length - digits)}.${t.slice(t.length - digits)}`}`;
  };
  const sameScaled = (n: number, digits: number, neg: boolean): void => {
    const got = decFromScaled(n, digits, neg ? -1 : 1);
    const want = new Dec(text(n, digits, neg));
    expect(fields(got), `${n} ${digits}`).toEqual(fields(want));
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(got.toString()).toBe(want.toString());
  };

  it('equals the Decimal of its text for integers below 2^53 and 0-22 places', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 0, max: 22 }), fc.boolean(), sameScaled), { numRuns: 20_000 });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400_000_000 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 7 }), (m, digits, tz) => sameScaled(m * 10 ** tz, digits, false)),
      { numRuns: 20_000 },
    );
    for (const n of [0, 1, 9, 10, 1e6, 9999999, 1e7, 10000001, 99999999999999, 1e15, 2 ** 53 - 1, 1234567890123456]) for (let d = 0; d <= 22; d++) for (const neg of [false, true]) sameScaled(n, d, neg);
  });
});

describe('decFromFixed', () => {
  // decFromPlain(pyFormatFixed(x, digits)) is the straightforward computation (itself checked against new Dec above)
  const sameFixed = (x: number, digits: number): void => {
    const text = pyFormatFixed(x, digits);
    const got = decFromFixed(x, digits);
    const want = new Dec(text);
    expect(fields(got), `${x} ${digits} ${text}`).toEqual(fields(want));
    expect(fields(got)).toEqual(fields(decFromPlain(text)));
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(got.toString()).toBe(want.toString());
  };

  it('equals the Decimal of pyFormatFixed(x, digits) for doubles, values already rounded to 0-8 places and integers', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e25, max: 1e25 }), fc.integer({ min: 0, max: 8 }), (x, n) => sameFixed(x, n)),
      { numRuns: 20_000 },
    );
    fc.assert(
      fc.property(fc.integer({ min: -20_000_000, max: 20_000_000 }), fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 8 }), (m, p, n) => {
        const x = m / 10 ** p; // like pyRound(v, p) values: the skill boosts, rates and prestige deltas
        sameFixed(x, n);
        sameFixed(-x, n);
        sameFixed(m, n);
      }),
      { numRuns: 20_000 },
    );
  });

  it('edge values: zeros, values that round to zero, ties, and the ends of the integer fast path', () => {
    const xs = [0, -0, 1e-9, -1e-9, 0.00005, -0.00005, 0.00015, 0.0005, 0.0015, 0.5, 1.5, 2.5, 0.125, 0.35, 0.01, 0.4, 1, 10, 100, 1e6, 999.9999, 1000, 9999999, 10000000, 99999.99995, 0.1 + 0.2, 1 / 3, 2 / 3, Number.MIN_VALUE, 1e25, 2 ** 43, 2 ** 53];
    for (const x of xs) for (let n = 0; n <= 8; n++) {
      sameFixed(x, n);
      sameFixed(-x, n);
    }
  });
});
