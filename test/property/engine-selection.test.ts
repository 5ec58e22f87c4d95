/**
 * Allocation-free selections in the engine equal the sorts they replace: `topByRate` (skill boosts: the best
 * EFFICIENT_TEAM_SIZE employees of a domain, ties by position) and `sortDescending` (a task-domain's contributions),
 * over rates with many ties.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sortDescending, topByRate } from '../../src/sim/model/engine.js';
import { D, dcmp, type Dec } from '../../src/sim/py/decimal.js';
import { DOMAINS, type Employee } from '../../src/sim/model/types.js';

const rate = fc.integer({ min: 0, max: 30 }).map((n) => D(n).div(8));

describe('engine selections', () => {
  it('topByRate equals the stable sort by rate descending, first k', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(rate, rate, rate, rate), { maxLength: 14 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 6 }), (rs, di, k) => {
        const emps = rs.map((r, id) => ({ id, name: `E${id}`, tier: 'junior', salaryCents: 0, rates: { research: r[0], inference: r[1], data_environment: r[2], training: r[3] } }) as Employee);
        const d = DOMAINS[di] as (typeof DOMAINS)[number];
        const want = emps.map((e, i) => ({ e, i })).sort((x, y) => dcmp(y.e.rates[d], x.e.rates[d]) || x.i - y.i).slice(0, k).map((x) => x.e.id);
        expect(topByRate(emps, d, k).map((e) => e.id)).toEqual(want);
      }),
      { numRuns: 5000 },
    );
  });

  it('sortDescending equals sort((x, y) => dcmp(y, x)) (stable: equal values keep their order)', () => {
    fc.assert(
      fc.property(fc.array(rate, { maxLength: 12 }), (xs) => {
        const tagged = xs.map((x) => D(x.toString())); // distinct instances with equal values: the order of equals is visible
        const want = [...tagged].sort((x, y) => dcmp(y, x));
        const got = [...tagged];
        sortDescending(got as Dec[]);
        expect(got.every((g, i) => g === want[i])).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it('sortDescending of the first len elements (a reused array) sorts them as a fresh array and leaves the rest', () => {
    fc.assert(
      fc.property(fc.array(rate, { maxLength: 12 }), fc.array(rate, { maxLength: 6 }), (xs, stale) => {
        const tagged = xs.map((x) => D(x.toString()));
        const rest = stale.map((x) => D(x.toString()));
        const want = [...tagged].sort((x, y) => dcmp(y, x));
        const got = [...tagged, ...rest];
        sortDescending(got as Dec[], tagged.length);
        expect(got.every((g, i) => g === (i < want.length ? want[i] : rest[i - want.length]))).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });
});
