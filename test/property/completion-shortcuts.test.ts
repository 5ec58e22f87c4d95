/**
 * The integer shortcuts of a task completion (src/sim/model/engine.ts `raisedPrestige`, `boostedRate`) give the
 * fields (sign, exponent, digit words) of the Decimal expressions they replace, over random and edge values: the
 * prestige `quantize(dmin(pmax, prestige + inc), 3)` and the skill rate `quantize(dmin(rate + rate·pct, cap), 4)`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { boostedRate, quantize, raisedPrestige, sumFirst } from '../../src/sim/model/engine.js';
import { D, Dec, decFromFixed, decFromFloat, dmin } from '../../src/sim/py/decimal.js';

function fields(d: Dec): { s: number; e: number; d: number[] | null } {
  return { s: d.s, e: d.e, d: d.d ? [...d.d] : null };
}
function same(got: Dec, want: Dec, what: string): void {
  expect(fields(got), what).toEqual(fields(want));
  expect(got.toString()).toBe(want.toString());
}

const scaled = (max: number, scale: number): fc.Arbitrary<Dec> => fc.integer({ min: 0, max: max * 10 ** scale }).map((n) => D(n).div(D(10 ** scale)));
/** Caps and bounds as configs give them (decFromFloat of a float), some with more than 3 or 4 decimals. */
const bound = fc.oneof(fc.constantFrom(10, 20, 5, 1, 0, 0.5, 7.25, 3.14159, 12.34567, 1e-5, 25.00001), fc.double({ min: 0, max: 50, noNaN: true })).map((x) => decFromFloat(x));

describe('raisedPrestige equals quantize(dmin(pmax, prestige + inc), 3)', () => {
  it('on stored prestige, generated deltas and config bounds', () => {
    fc.assert(
      fc.property(fc.oneof(scaled(12, 3), scaled(12, 6), fc.constant(D(0))), fc.oneof(fc.double({ min: 0, max: 0.35, noNaN: true }).map((x) => decFromFixed(x, 3)), scaled(1, 5)), bound, (p, inc, pmax) => {
        same(raisedPrestige(p, inc, pmax), quantize(dmin(pmax, p.add(inc)), 3), `${p} + ${inc} max ${pmax}`);
      }),
      { numRuns: 50_000 },
    );
    for (const [p, inc, pmax] of [['9.9', '0.1', '10'], ['9.95', '0.1', '10'], ['0', '0', '10'], ['99.999', '0.001', '200'], ['100', '0', '200'], ['1', '0.35', '1.35']]) {
      same(raisedPrestige(D(p as string), D(inc as string), D(pmax as string)), quantize(dmin(D(pmax as string), D(p as string).add(D(inc as string))), 3), `${p} ${inc} ${pmax}`);
    }
  });
});

describe('boostedRate equals quantize(dmin(rate + rate·pct, cap), 4)', () => {
  it('on stored rates, generated boosts and config caps', () => {
    fc.assert(
      fc.property(fc.oneof(scaled(30, 4), scaled(30, 7)), fc.oneof(fc.double({ min: 0.01, max: 0.4, noNaN: true }).map((x) => decFromFixed(x, 4)), scaled(1, 6)), bound, (rate, pct, cap) => {
        same(boostedRate(rate, pct, cap), quantize(dmin(rate.add(rate.mul(pct)), cap), 4), `${rate} * (1 + ${pct}) cap ${cap}`);
      }),
      { numRuns: 50_000 },
    );
  });

  it('on ties of the 4-place rounding and the cap', () => {
    for (let r = 1; r <= 400; r++) {
      for (const p of [5000, 2500, 1250, 625, 3333, 1, 9999]) {
        const rate = D(r).div(D(10_000));
        const pct = D(p).div(D(10_000));
        for (const cap of [D(20), rate.add(rate.mul(pct)).toDecimalPlaces(4, Dec.ROUND_DOWN), rate, D('0.0001')]) {
          same(boostedRate(rate, pct, cap), quantize(dmin(rate.add(rate.mul(pct)), cap), 4), `${rate} ${pct} ${cap}`);
        }
      }
    }
  });
});

describe('sumFirst equals the Decimal sum of the first n terms from zero', () => {
  it('on rates of 4 decimals, rate/k shares and zeros', () => {
    const term = fc.oneof(scaled(30, 4), scaled(30, 4).map((x) => x.div(D(3))), fc.constantFrom(D(0), new Dec('-0'), D('0.0001')), scaled(1, 7));
    fc.assert(
      fc.property(fc.array(term, { minLength: 0, maxLength: 9 }), fc.integer({ min: 0, max: 6 }), (xs, n) => {
        let want = D(0);
        for (let i = 0; i < xs.length && i < n; i++) want = want.add(xs[i] as Dec);
        same(sumFirst(xs, n), want, xs.join(' + '));
      }),
      { numRuns: 50_000 },
    );
  });

  it('of the first len elements of a longer (reused) array, as of an array of those alone', () => {
    const term = fc.oneof(scaled(30, 4), scaled(30, 4).map((x) => x.div(D(3))), fc.constantFrom(D(0), new Dec('-0'), D('0.0001')));
    fc.assert(
      fc.property(fc.array(term, { maxLength: 9 }), fc.array(term, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 6 }), (xs, stale, n) => {
        same(sumFirst([...xs, ...stale], n, xs.length), sumFirst(xs, n), xs.join(' + '));
      }),
      { numRuns: 20_000 },
    );
  });
});
