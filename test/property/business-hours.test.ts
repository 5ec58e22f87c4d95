/**
 * The integer-microsecond fast paths of the business calendar give the Decimal steps' instants:
 * `addBusinessHours` (src/sim/model/calendar.ts: `businessMicrosOf` + `addBusinessMicros`) against
 * `addBusinessHoursDecimal`, and `solveCompletion` (src/sim/model/engine.ts, from doubles) against
 * `solveCompletionDecimal`, over random instants and hours, and over values built to sit on the edges the fast paths
 * must leave to the Decimals (whole microseconds of non-whole hours, halves of a microsecond, exact day fits).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addBusinessHours, addBusinessHoursDecimal, addWholeBusinessHours, businessMicrosOf, makeInstant, US_PER_DAY, US_PER_HOUR } from '../../src/sim/model/calendar.js';
import { solveCompletion, solveCompletionDecimal } from '../../src/sim/model/engine.js';
import { D, Dec, dint } from '../../src/sim/py/decimal.js';
import { DOMAINS, type Domain, type Task } from '../../src/sim/model/types.js';

const T0 = makeInstant(2025, 1, 1);
/** Instants over 80 years from 2025, at any microsecond, or on the hour (business-hour edges), or on a minute. */
const instants = fc.oneof(
  fc.integer({ min: 0, max: 80 * 365 * 24 * 3600 }).chain((s) => fc.integer({ min: 0, max: 999_999 }).map((us) => T0 + s * 1_000_000 + us)),
  fc.integer({ min: 0, max: 80 * 365 * 24 }).map((h) => T0 + h * US_PER_HOUR),
  fc.integer({ min: 0, max: 80 * 365 * 24 * 60 }).map((mi) => T0 + mi * 60_000_000),
);

/** Hours of every shape the engine makes and the edges around them. */
const hours: fc.Arbitrary<Dec> = fc.oneof(
  fc.integer({ min: 0, max: 300_000 }).map((n) => D(n)),
  fc.integer({ min: 1, max: 2000 }).map((n) => D(n * 9)),
  // quotients remaining / rate as solveCompletion makes them
  fc.tuple(fc.integer({ min: 1, max: 250_000_000 }), fc.integer({ min: 1, max: 800_000 })).map(([a, b]) => D(a).div(D(b)).mul(D('0.01'))),
  // up to 28 significant digits at scales from 1e-9 to 1e6 hours
  fc.tuple(fc.stringMatching(/^[1-9][0-9]{0,27}$/), fc.integer({ min: -9, max: 6 })).map(([digits, exp]) => new Dec(`${digits}e${exp - digits.length + 1}`)),
  // whole microseconds of non-whole hours (the remaining may tie a day's available hours), and their neighbours
  fc.tuple(fc.integer({ min: 1, max: 9e14 }), fc.constantFrom(0, 1, -1)).map(([us, d]) => D(us).div(D(3_600_000_000)).add(new Dec(`${d}e-25`))),
  // half microseconds (the final rounding's ties) and near them
  fc.tuple(fc.integer({ min: 0, max: 4e14 }), fc.constantFrom(0, 1, -1, 3)).map(([n, d]) => D(2 * n + 1).div(D(7_200_000_000)).add(new Dec(`${d}e-20`))),
  // hours·4e8 whole (exact quotients as solveCompletion meets them: 709 / 40), and off by one unit of the 28th digit
  fc.tuple(fc.integer({ min: 1, max: 1e14 }), fc.constantFrom(0, 0, 1, -1)).map(([k, d]) => D(k).div(D(400_000_000)).add(new Dec(`${d}e-22`))),
  fc.tuple(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: 1, max: 400 })).map(([a, b]) => D(a).div(D(b))),
  // whole days and a first-day remainder (exact fits at closing)
  fc.tuple(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 32_400_000_000 })).map(([days, us]) => dint(9).mul(days).add(D(us).div(D(3_600_000_000)))),
);

/** What `f` returns, or the message it throws. */
function outcome<T>(f: () => T): T | string {
  try {
    return f();
  } catch (e) {
    return `throws ${(e as Error).message}`;
  }
}

function sameInstant(t: number, h: Dec): void {
  expect(outcome(() => addBusinessHours(t, h)), `${t} + ${h.toString()} h`).toBe(outcome(() => addBusinessHoursDecimal(t, h)));
}

describe('addBusinessHours (integer microseconds where certain) equals the Decimal steps', () => {
  it('on random instants and hours', () => {
    fc.assert(fc.property(instants, hours, (t, h) => sameInstant(t, h)), { numRuns: 60_000 });
  });

  it('on edges: exact day fits from every hour of a week, zero, tiny and huge hours, year 9999', () => {
    const monday = makeInstant(2025, 1, 6);
    for (let h = 0; h < 7 * 24; h++) {
      for (const off of [0, 1, 1_800_000_000, US_PER_HOUR - 1]) {
        const t = monday + h * US_PER_HOUR + off;
        for (const x of ['0', '1e-30', '0.0000000001', '0.5', '1', '8', '9', '9.000000000000000000000000001', '18', '27', '45', '63', '100', '249999', '250000', '999999', '1e7']) sameInstant(t, D(x));
        for (const us of [1, 2, 3_600_000_000 - 1, 32_400_000_000 - 1, 32_400_000_000, 32_400_000_001]) sameInstant(t, D(us).div(D(3_600_000_000)));
      }
    }
    for (const t of [makeInstant(9999, 12, 30, 10), makeInstant(9999, 12, 31, 17), makeInstant(9990, 1, 1)]) for (const x of ['1', '9', '100', '5000', '30000.5', '0.25']) sameInstant(t, D(x));
  });

  it('takes the fast path for most values the engine makes', () => {
    let fast = 0;
    for (let i = 1; i <= 1000; i++) if (businessMicrosOf(D(i * 997).div(D(i % 17 === 0 ? 40 : 17.3 + i / 8))) >= 0) fast++;
    for (let i = 1; i <= 100; i++) if (businessMicrosOf(D(i * 9)) >= 0) fast++;
    for (let i = 1; i <= 100; i++) if (businessMicrosOf(D(600 + i).div(D(40))) >= 0) fast++;
    expect(fast).toBeGreaterThan(1150);
  });
});

let nextId = 0;
function task(reqs: { domain: Domain; required: Dec; completed: Dec }[]): Task {
  return {
    id: nextId++, title: 'T', clientId: null, status: 'active', requiredPrestige: 1, rewardCents: 0,
    rewardPrestigeDelta: D('0.1'), skillBoostPct: D('0.1'), acceptedAt: T0, deadline: null, completedAt: null,
    success: null, milestonePct: 0, requiredTrust: 0, advertisedRewardCents: null, marketSlot: 0, owned: true,
    reqs, assignments: [],
  };
}

/** 4-dp rates, their sums over up to four employees, and shares of them (rate / k). */
const rateDec: fc.Arbitrary<Dec> = fc.oneof(
  fc.integer({ min: 0, max: 200_000 }).map((n) => D(n).div(D(10_000))),
  fc.array(fc.integer({ min: 1, max: 200_000 }), { minLength: 1, maxLength: 4 }).map((ns) => ns.reduce((s, n) => s.add(D(n).div(D(10_000))), D(0))),
  fc.tuple(fc.integer({ min: 1, max: 200_000 }), fc.integer({ min: 2, max: 7 })).map(([n, k]) => D(n).div(D(10_000)).div(D(k))),
  fc.stringMatching(/^[1-9][0-9]{0,27}$/).map((digits) => new Dec(`${digits}e${-digits.length}`)),
  // whole and few-decimal rates (exact quotients: whole microseconds)
  fc.integer({ min: 1, max: 200 }).map((n) => D(n)),
  fc.integer({ min: 1, max: 800 }).map((n) => D(n).div(D(8))),
);
const req = fc.record({
  required: fc.integer({ min: 0, max: 30_000 }),
  done: fc.oneof(fc.integer({ min: 0, max: 300_000_000 }).map((n) => D(n).div(D(10_000))), fc.constant(D(0))),
});

describe('solveCompletion (from doubles where certain) equals the Decimal steps', () => {
  it('on random tasks, rates and instants', () => {
    fc.assert(
      fc.property(instants, fc.array(req, { minLength: 0, maxLength: 4 }), fc.array(fc.option(rateDec, { nil: undefined }), { minLength: 4, maxLength: 4 }), (now, rs, rts) => {
        const t = task(rs.map((r, i) => ({ domain: DOMAINS[i] as Domain, required: D(r.required), completed: r.done })));
        const rates = new Map<Domain, Dec>();
        rts.forEach((r, i) => {
          if (r !== undefined) rates.set(DOMAINS[i] as Domain, r);
        });
        expect(outcome(() => solveCompletion(t, now, rates))).toBe(outcome(() => solveCompletionDecimal(t, now, rates)));
      }),
      { numRuns: 60_000 },
    );
  });

  it('on quotients of whole microseconds that tie a day end (exact when 9 divides them, rounded when not)', () => {
    const monday = makeInstant(2025, 1, 6, 9);
    const day = 9 * US_PER_HOUR;
    let roundedAcross = 0; // ties the Decimal steps' rounding decides against exact arithmetic (the day's closing)
    for (let s = 1; s <= 400; s++) {
      const now = monday + s * 7_777_777 + (s % 9);
      const n = monday + day - now; // the first day's available microseconds
      for (const m of [n, n + day, n + 2 * day, n + 5 * day]) {
        for (const [required, rate] of [[m, 3_600_000_000], [m / 8, 450_000_000]]) {
          const t = task([{ domain: 'research', required: D(required as number), completed: D(0) }]);
          const rates = new Map<Domain, Dec>([['research', D(rate as number)]]);
          const want = solveCompletionDecimal(t, now, rates);
          expect(solveCompletion(t, now, rates)).toBe(want);
          if ((want as number) % US_PER_DAY !== 18 * US_PER_HOUR) roundedAcross++;
          sameInstant(now, D(m).div(D(3_600_000_000)));
        }
      }
    }
    expect(roundedAcross).toBeGreaterThan(0);
  });

  it('on remaining / rate landing on whole and half microseconds and exact day fits', () => {
    const monday = makeInstant(2025, 1, 6, 9);
    for (const now of [monday, monday + 1, monday + 3 * US_PER_HOUR + 17, monday + 4 * US_PER_DAY + 8 * US_PER_HOUR]) {
      for (const [required, rate] of [['709', '40'], ['709', '40.0001'], ['1', '3'], ['2', '0.0009'], ['90', '10'], ['81', '9'], ['1', '3600000000'], ['1', '7200000000'], ['3', '7200000000'], ['7', '0.0000000019444444444444444444'], ['100', '3'], ['25000', '0.0001']]) {
        const t = task([{ domain: 'research', required: D(required as string), completed: D(0) }]);
        const rates = new Map<Domain, Dec>([['research', D(rate as string)]]);
        expect(outcome(() => solveCompletion(t, now, rates))).toBe(outcome(() => solveCompletionDecimal(t, now, rates)));
      }
    }
  });
});

describe('addWholeBusinessHours equals addBusinessHours of the Decimal product', () => {
  it('on random instants and whole hours, zero and negative included', () => {
    fc.assert(
      fc.property(instants, fc.integer({ min: -3, max: 400_000 }), fc.integer({ min: 1, max: 24 }), (t, days, span) => {
        expect(outcome(() => addWholeBusinessHours(t, days * span))).toBe(outcome(() => addBusinessHoursDecimal(t, D(days).mul(D(span)))));
      }),
      { numRuns: 30_000 },
    );
  });
});
