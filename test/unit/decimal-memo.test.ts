import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { D, dcmp, toFloat } from '../../src/sim/py/decimal.js';
import { pyFormatFixed } from '../../src/sim/py/pyfloat.js';
import { quantized, taskTemplate } from '../../src/sim/model/world-cache.js';
import { generateTasks, type GenTask } from '../../src/sim/model/world.js';
import { DOMAINS_ALPHA } from '../../src/sim/model/types.js';
import { ulpStep } from '../helpers/ulp.js';

describe('toFloat memo', () => {
  it('equals toNumber() on first and later calls, and stays invisible (keys, equality, JSON)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => pyFormatFixed(x, 6)), fc.bigInt().map(String)), (text) => {
        const d = D(text);
        const keys = Object.keys(d);
        const want = D(text).toNumber();
        expect(Object.is(toFloat(d), want)).toBe(true);
        expect(Object.is(toFloat(d), want)).toBe(true);
        expect(Object.keys(d)).toEqual(keys);
        expect(d).toEqual(D(text));
        expect(JSON.stringify(d)).toBe(JSON.stringify(D(text)));
      }),
    );
  });

  it('works on a frozen Decimal', () => {
    const d = Object.freeze(D('0.1'));
    expect(toFloat(d)).toBe(0.1);
    expect(toFloat(d)).toBe(0.1);
  });
});

describe('taskTemplate columns (memoised quantization)', () => {
  const plain = (g: GenTask) => ({
    delta: D(pyFormatFixed(g.reward_prestige_delta, 3)).toString(),
    boost: D(pyFormatFixed(g.skill_boost_pct, 4)),
    reqs: DOMAINS_ALPHA.filter((d) => g.requirements.some(([dd]) => dd === d)).map((d) => [d, D((g.requirements.find(([dd]) => dd === d) as [string, number])[1])] as const),
  });
  const check = (g: GenTask): void => {
    const t = taskTemplate(g);
    const p = plain(g);
    expect(t.rewardPrestigeDelta.toString()).toBe(p.delta);
    expect(t.skillBoostPct.toString()).toBe(p.boost.toString());
    expect(t.skillBoostPct.isNegative()).toBe(p.boost.isNegative());
    expect(t.reqs.map((r) => [r.domain, r.required.toString(), r.required.isNegative()])).toEqual(p.reqs.map(([d, q]) => [d, q.toString(), q.isNegative()]));
  };

  it('equal the unmemoised D(pyFormatFixed(...)) for generated markets (twice: memo hits)', () => {
    const w = loadPreset('default').world;
    for (let round = 0; round < 2; round++) for (const seed of [1, 2, 3]) for (const g of generateTasks(seed, w.num_market_tasks, w, null, null)) check(g);
    expect(true).toBe(true);
  });

  it('keep -0 and 0 apart', () => {
    const g = (boost: number, qty: number): GenTask => ({
      title: 'T', client_index: 0, required_prestige: 1, reward_funds_cents: 1, reward_prestige_delta: 0.1, skill_boost_pct: boost,
      required_trust: 0, requirements: [['research', qty]],
    });
    for (const [b, q] of [[0, 0], [-0, -0], [0, 0], [-0, -0], [-0.00001, 5], [0.00001, 5]] as const) check(g(b, q));
  });
});

describe('quantized (array memo for small integers and 4-dp values, Map for the rest)', () => {
  // the straightforward column: the text Python stores, parsed
  const plain = (x: number, digits: 4 | 0) => (digits === 4 ? D(pyFormatFixed(x, 4)) : D(x));
  const same = (x: number, digits: 4 | 0): void => {
    const got = quantized(x, digits);
    const want = plain(x, digits);
    expect(got.toString(), `${x} (${digits})`).toBe(want.toString());
    expect(got.isNegative(), `${x} (${digits}) sign`).toBe(want.isNegative());
    expect(got).toEqual(want);
  };
  it('equals D(pyFormatFixed(x, 4)) / D(x) for 4-dp values, their neighbours (same index), integers, zeros and others, in any order', () => {
    const value = fc.oneof(
      fc.integer({ min: -10, max: 70_000 }).map((k) => k / 10000), // the generator's rounded draws, around and past the array
      fc.tuple(fc.integer({ min: 1, max: 70_000 }), fc.integer({ min: -3, max: 3 })).map(([k, u]) => ulpStep(k / 10000, u)),
      fc.tuple(fc.integer({ min: 1, max: 70_000 }), fc.constantFrom(0.00004, 0.00005, -0.00004, -0.00005)).map(([k, d]) => k / 10000 + d),
      fc.integer({ min: -5, max: 70_000 }),
      fc.constantFrom(0, -0, 0.5, 65535, 65536, 6.5535, 6.5536, 6.55355, 1e-5, 5e-5),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(value, fc.constantFrom<4 | 0>(4, 0)), { minLength: 1, maxLength: 40 }), (xs) => {
        for (const [x, digits] of xs) same(digits === 0 ? Math.trunc(x) : x, digits);
        for (const [x, digits] of xs) same(digits === 0 ? Math.trunc(x) : x, digits);
      }),
      { numRuns: 400 },
    );
    // a neighbour of a memoised value (same index) is not served the memoised Decimal
    for (const k of [1234, 4000, 65535]) {
      const x = k / 10000;
      same(x, 4);
      for (const u of [-2, -1, 1, 2]) same(ulpStep(x, u), 4);
      same(x + 0.00004, 4);
      same(x, 4);
    }
    // halfway values: round(x * 10^4) may be the index above while the text rounds down (binary value below the half)
    for (let k = 1; k < 3000; k++) {
      same((k + 1) / 10000, 4);
      same((k + 0.5) / 10000, 4);
      same(k / 10000 + 0.00005, 4);
    }
  });
});

describe('dcmp (cmp without the copy)', () => {
  const special = ['0', '-0', 'NaN', 'Infinity', '-Infinity', '1', '-1', '1e-30', '-1e-30', '9999999999999999999999999999', '0.1', '0.10000000', '1e20', '-1e20'];
  const decText = fc.oneof(
    fc.constantFrom(...special),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => pyFormatFixed(x, 6)),
    fc.tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: -40, max: 40 })).map(([m, e]) => `${m}e${e}`),
    fc.integer({ min: -1000, max: 1000 }).map((n) => (n / 8).toString()),
  );
  it('equals decimal.js cmp (and so gt/lt/lte/gte/eq) for random, special and computed Decimals', () => {
    fc.assert(
      fc.property(decText, decText, fc.constantFrom('plain', 'sum', 'quot'), (ta, tb, how) => {
        let a = D(ta);
        let b = D(tb);
        if (how === 'sum') a = a.add(b);
        if (how === 'quot' && !b.isZero()) a = a.div(b);
        for (const [x, y] of [[a, b], [b, a], [a, a]] as const) {
          expect(Object.is(dcmp(x, y), x.cmp(y)), `${x.toString()} vs ${y.toString()}`).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
