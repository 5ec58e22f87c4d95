/**
 * Shortcuts that skip a Decimal round trip through a double (src/sim/py/decimal.ts `decViaFloat`,
 * src/sim/model/engine.ts `decFromRounded3`, src/sim/model/calendar.ts `deltaHours` on whole hours) give the very
 * fields (sign, exponent, digit words) of the expression they replace, over random and edge values.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deltaHours, hoursOfMicros, hoursToMicros, timedeltaSecondsToUs, US_PER_HOUR } from '../../src/sim/model/calendar.js';
import { decFromRounded3 } from '../../src/sim/model/engine.js';
import { D, Dec, decFromFixed, decFromFloat, decFromFloatOnce, decToNumber, decViaFloat, scaledFloor, toFloat } from '../../src/sim/py/decimal.js';
import { pyRound } from '../../src/sim/py/pyfloat.js';

function fields(d: Dec): { s: number; e: number; d: number[] | null } {
  return { s: d.s, e: d.e, d: d.d ? [...d.d] : null };
}

/** The same digit words (`fields`' `d`, compared as `toEqual` does: each with Object.is). */
function sameWords(a: Dec['d'] | undefined, b: Dec['d'] | undefined): boolean {
  if (!a || !b) return !a && !b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/**
 * `got` has the very fields, keys, text and number of `want`. The comparison is made plainly first, and the expects
 * that state a difference run only when it fails: they cost far more than the comparison (vitest updates its state on
 * each expect), and this is called some 400,000 times. The plain comparison holds exactly when the expects pass
 * (`toEqual` and `toBe` compare numbers with Object.is).
 */
function sameAs(got: Dec, want: Dec): void {
  const gk = Object.keys(got);
  const wk = Object.keys(want);
  if (
    Object.is(got.s, want.s) &&
    Object.is(got.e, want.e) &&
    sameWords(got.d, want.d) &&
    gk.length === wk.length &&
    gk.every((k, i) => k === wk[i]) &&
    got.toString() === want.toString() &&
    Object.is(got.toNumber(), want.toNumber())
  )
    return;
  expect(fields(got)).toEqual(fields(want));
  expect(Object.keys(got)).toEqual(Object.keys(want));
  expect(got.toString()).toBe(want.toString());
  expect(Object.is(got.toNumber(), want.toNumber())).toBe(true);
}

function viaFloat(d: Dec): void {
  sameAs(decViaFloat(d), decFromFloat(toFloat(d)));
}

/** Decimal texts of 1-30 significant digits at exponents from -320 to 320. */
const decTexts = fc
  .tuple(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,29}$/), fc.integer({ min: -320, max: 320 }))
  .map(([neg, digits, exp]) => `${neg ? '-' : ''}${digits}e${exp}`);

describe('decViaFloat equals decFromFloat(toFloat(d))', () => {
  it('on random decimals of any length and exponent', () => {
    fc.assert(fc.property(decTexts, (t) => viaFloat(new Dec(t))), { numRuns: 30_000 });
  });

  it('on short decimals (the stored columns): 1-16 digits, small exponents', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,15}$/), fc.integer({ min: -30, max: 30 }), (neg, digits, exp) => viaFloat(new Dec(`${neg ? '-' : ''}${digits}e${exp}`))),
      { numRuns: 30_000 },
    );
  });

  it('on generated columns, quotients and zeros', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 1_000_000 }), (x, n, q) => {
        viaFloat(decFromFixed(x, n));
        viaFloat(D(Math.trunc(x)).div(q));
      }),
      { numRuns: 20_000 },
    );
    for (const t of ['0', '-0', '1', '-1', '0.1', '9999999', '99999999999999', '999999999999999', '9999999999999999', '1e-290', '1e290', '1.7976931348623157e308', '5e-324'])
      viaFloat(new Dec(t));
  });
});

describe('decFromRounded3 equals decFromFloat', () => {
  it('on pyRound(y, 3) of random doubles', () => {
    fc.assert(
      fc.property(fc.double({ min: -10, max: 120, noNaN: true }), (y) => {
        const x = pyRound(y, 3);
        sameAs(decFromRounded3(x), decFromFloat(x));
      }),
      { numRuns: 30_000 },
    );
  });

  it('on every thousandth below 100, its neighbours, zeros and other doubles', () => {
    const next = (x: number, up: boolean): number => {
      const b = new Float64Array([x]);
      const i = new BigInt64Array(b.buffer);
      i[0] = (i[0] as bigint) + (up === x >= 0 ? 1n : -1n);
      return b[0] as number;
    };
    for (let m = 0; m <= 100_000; m++) {
      const x = m / 1000;
      sameAs(decFromRounded3(x), decFromFloat(x));
      if (m % 97 === 0 && x > 0) {
        sameAs(decFromRounded3(next(x, true)), decFromFloat(next(x, true)));
        sameAs(decFromRounded3(next(x, false)), decFromFloat(next(x, false)));
      }
    }
    for (const x of [-0, -0.001, -5, 100.0005, 1e-7, 0.0005, 99.9995, 99.99949999999999, Infinity, -Infinity]) sameAs(decFromRounded3(x), decFromFloat(x));
    expect(Number.isNaN(decFromRounded3(NaN).toNumber())).toBe(true);
  });
});

describe('deltaHours equals Decimal(str(seconds)) / 3600', () => {
  const want = (us: number): Dec => decFromFloatOnce(us / 1_000_000).div(3600);
  it('on whole hours and on random deltas', () => {
    for (let h = 0; h <= 200; h++) sameAs(deltaHours(h * US_PER_HOUR), want(h * US_PER_HOUR));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * 86_400_000_000 }), fc.integer({ min: 0, max: 100 }), (us, h) => {
        sameAs(deltaHours(us), want(us));
        sameAs(deltaHours(h * US_PER_HOUR), want(h * US_PER_HOUR));
      }),
      { numRuns: 20_000 },
    );
  });
  it('on deltas of every residue, small and up to the bound, and past it', () => {
    for (let n = 1; n <= 5000; n++) sameAs(deltaHours(n), want(n));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 359_999_999_999_999 }), (n) => {
        sameAs(hoursOfMicros(n), want(n));
        sameAs(deltaHours(n), want(n));
      }),
      { numRuns: 30_000 },
    );
    for (const n of [359_999_999_999_999, 3.6e14, 3.6e14 + 1, 1e15, 9 * 4e8, 36e8, 36e8 + 1, 36e8 - 1, 0.5, -5, 0])
      if (Number.isInteger(n) && n >= 0) sameAs(deltaHours(n), want(n));
  });
});

/** Decimals of 100 digits: products of the test values by powers of ten are exact. */
const Exact = Dec.clone({ precision: 100 });

describe('quantize decides from the words as quantizeByText does from the text', () => {
  const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: n }).map((a) => a.join(''));
  const near = fc
    .tuple(fc.boolean(), fc.integer({ min: 0, max: 30000 }), digits(4), fc.constantFrom('5', '49999999999999999', '50000000000000001', '4999999', '5000001', '499999999999', '500000000001'), digits(10))
    .map(([neg, i, f, mid, rest]) => `${neg ? '-' : ''}${i}.${f}${mid}${rest}`);
  const any = fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 30000 }), digits(27)).map(([neg, i, f]) => `${neg ? '-' : ''}${i}.${f}`);
  const wide = fc.tuple(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,27}$/), fc.integer({ min: -30, max: 30 })).map(([neg, d, e]) => `${neg ? '-' : ''}${d}e${e}`);
  it('for random decimals, near rounding midpoints, of any magnitude', async () => {
    const { quantize, quantizeByText, quantizeExact } = await import('../../src/sim/model/engine.js');
    fc.assert(
      fc.property(fc.oneof(near, any, wide), fc.constantFrom(3, 4), (v, scale) => {
        const x = new Dec(v);
        const got = quantize(x, scale);
        const byText = x.decimalPlaces() <= scale ? x : quantizeByText(x, scale);
        sameAs(got, byText);
        if (Math.abs(x.toNumber()) < 1e15) {
          const exact = quantizeExact(x, scale).toString();
          if (got.toString() !== exact) expect(got.toString()).toBe(exact);
        }
      }),
      { numRuns: 30_000 },
    );
  });
  it('fractionTail is the fraction of |x|·10^scale within 1e-15', async () => {
    const { fractionTail } = await import('../../src/sim/py/decimal.js');
    fc.assert(
      fc.property(fc.oneof(near, any, wide), fc.integer({ min: 0, max: 8 }), (v, scale) => {
        // exact: the context's 28 digits would round the product (and its fraction) away
        const x = new Exact(v).abs().times(new Exact(10).pow(scale));
        const want = x.minus(x.floor()).toNumber();
        const off = Math.abs(fractionTail(new Dec(v), scale) - want);
        if (!(off < 1e-15)) expect(off).toBeLessThan(1e-15);
      }),
      { numRuns: 30_000 },
    );
  });
});

describe('hoursToMicros equals timedeltaSecondsToUs(decToNumber(hours * 3600))', () => {
  const want = (h: Dec): number => timedeltaSecondsToUs(decToNumber(h.mul(3600)));
  const hours = fc.oneof(
    // 28-digit quotients, as the engine's remaining/rate hours
    fc.tuple(fc.integer({ min: 1, max: 2_000_000 }), fc.integer({ min: 1, max: 200_000 })).map(([a, b]) => D(a).div(b)),
    fc.tuple(fc.integer({ min: 0, max: 26 }), fc.stringMatching(/^[0-9]{1,27}$/)).map(([i, f]) => new Dec(`${i}.${f}`)),
    // whole and half microseconds, and a hair around them
    fc.tuple(fc.integer({ min: 0, max: 93_600_000_000 }), fc.constantFrom('0', '5', '4999999999', '5000000001', '0000000001', '9999999999')).map(([us, t]) => new Dec(`${us}.${t}`).div(3_600_000_000)),
  );
  it('for random hours below a day and a few, near whole and half microseconds', () => {
    fc.assert(
      fc.property(hours, (h) => {
        const [got, wanted] = [hoursToMicros(h), want(h)];
        if (!Object.is(got, wanted)) expect(got).toBe(wanted);
      }),
      { numRuns: 40_000 },
    );
    for (const t of ['0', '9', '24', '26.99999999', '0.0000000001', '100', '1e5', '12345.678']) expect(hoursToMicros(new Dec(t))).toBe(want(new Dec(t)));
  });
  it('scaledFloor is floor(|d|·10^scale)', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.stringMatching(/^[1-9][0-9]{0,27}$/), fc.integer({ min: -30, max: 8 }), fc.integer({ min: 0, max: 6 }), (neg, digits, exp, scale) => {
        const d = new Dec(`${neg ? '-' : ''}${digits}e${exp}`);
        const x = new Exact(d).abs().times(new Exact(10).pow(scale)).floor();
        if (x.gte(2 ** 53)) return;
        const [got, wanted] = [scaledFloor(d, scale), x.toNumber()];
        if (!Object.is(got, wanted)) expect(got).toBe(wanted);
      }),
      { numRuns: 30_000 },
    );
  });
});
