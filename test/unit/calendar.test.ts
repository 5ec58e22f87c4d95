import { describe, expect, it } from 'vitest';
import {
  addBusinessHours,
  businessHoursBetween,
  firstBusinessOfMonth,
  isoformat,
  makeInstant,
  nextBusinessTime,
  payrollBoundaries,
  timedeltaSecondsToUs,
  weekday,
} from '../../src/sim/model/calendar.js';
import { D } from '../../src/sim/py/decimal.js';

const T = (s: string): number => {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{6}))?$/.exec(s);
  if (!m) throw new Error(s);
  return makeInstant(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, +m[6]!, m[7] ? +m[7] : 0);
};

describe('calendar basics', () => {
  it('weekday matches Python (2025-01-01 is a Wednesday = 2)', () => {
    expect(weekday(T('2025-01-01T00:00:00'))).toBe(2);
    expect(weekday(T('2025-01-04T12:00:00'))).toBe(5);
    expect(weekday(T('2024-02-29T12:00:00'))).toBe(3);
  });
  it('isoformat remembers recent instants without mixing them up', () => {
    // Each instant's text with the memo cold for it (five others formatted in between), then random orders of a few
    // instants, as steps format sim_time, horizon_end and next_payroll over and over.
    const pool = [T('2025-01-01T09:00:00'), T('2026-01-01T09:00:00'), T('2025-02-03T09:00:00'), T('2025-01-17T11:13:55.712087'), 0, -1, T('2025-01-01T09:00:00') + 1];
    const filler = [1e12, 2e12, 3e12, 4e12, 5e12];
    const cold = new Map<number, string>();
    for (const t of pool) {
      for (const f of filler) isoformat(f);
      cold.set(t, isoformat(t));
    }
    expect(cold.get(T('2025-01-17T11:13:55.712087'))).toBe('2025-01-17T11:13:55.712087');
    let seed = 7;
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const t = pool[seed % pool.length] as number;
      expect(isoformat(t)).toBe(cold.get(t));
    }
  });

  it('isoformat prints microseconds only when non-zero', () => {
    expect(isoformat(T('2025-01-17T11:13:55.712087'))).toBe('2025-01-17T11:13:55.712087');
    expect(isoformat(T('2025-01-09T18:00:00'))).toBe('2025-01-09T18:00:00');
    expect(isoformat(T('2025-01-09T18:00:00') + 5)).toBe('2025-01-09T18:00:00.000005');
  });
  it('next business time skips nights and weekends', () => {
    expect(isoformat(nextBusinessTime(T('2025-01-03T18:00:00')))).toBe('2025-01-06T09:00:00');
    expect(isoformat(nextBusinessTime(T('2025-01-04T10:00:00')))).toBe('2025-01-06T09:00:00');
    expect(isoformat(nextBusinessTime(T('2025-01-06T08:59:59')))).toBe('2025-01-06T09:00:00');
    expect(isoformat(nextBusinessTime(T('2025-01-06T12:00:00')))).toBe('2025-01-06T12:00:00');
  });
});

describe('add_business_hours', () => {
  it('a 7-business-day deadline from Wed Jan 1 09:00 lands on Thu Jan 9 18:00 (exact fit ends at 18:00)', () => {
    expect(isoformat(addBusinessHours(T('2025-01-01T09:00:00'), D(63)))).toBe('2025-01-09T18:00:00');
  });
  it('crosses a weekend and month end', () => {
    expect(isoformat(addBusinessHours(T('2025-01-31T17:00:00'), D(2)))).toBe('2025-02-03T10:00:00');
  });
  it('zero hours moves to the next business instant', () => {
    expect(isoformat(addBusinessHours(T('2025-02-01T12:00:00'), D(0)))).toBe('2025-02-03T09:00:00');
  });
  it('fractional hours round to the microsecond', () => {
    expect(isoformat(addBusinessHours(T('2025-01-06T09:00:00'), D('1.0000001')))).toBe('2025-01-06T10:00:00.000360');
  });
  it('rejects negative hours', () => {
    expect(() => addBusinessHours(T('2025-01-06T09:00:00'), D(-1))).toThrow(/negative/);
  });
});

describe('business_hours_between (progress flush)', () => {
  it('reproduces the reference quirk: a weekday segment ending at midnight counts up to 24:00', () => {
    expect(businessHoursBetween(T('2025-01-06T09:00:00'), T('2025-01-07T00:00:00')).toString()).toBe('15');
    expect(businessHoursBetween(T('2025-01-06T20:00:00'), T('2025-01-07T09:00:00')).toString()).toBe('4');
  });
  it('counts a same-day window inside business hours normally', () => {
    expect(businessHoursBetween(T('2025-01-06T10:00:00'), T('2025-01-06T12:30:00')).toString()).toBe('2.5');
  });
  it('counts nothing on weekends', () => {
    expect(businessHoursBetween(T('2025-01-04T00:00:00'), T('2025-01-06T00:00:00')).toString()).toBe('0');
  });
  it('the corrected mode counts only 09:00-18:00', () => {
    expect(businessHoursBetween(T('2025-01-06T09:00:00'), T('2025-01-07T00:00:00'), true).toString()).toBe('9');
    expect(businessHoursBetween(T('2025-01-06T09:00:00'), T('2025-01-13T09:00:00'), true).toString()).toBe('45');
  });
  it('a full quirky week counts 15 h per weekday', () => {
    expect(businessHoursBetween(T('2025-01-06T00:00:00'), T('2025-01-13T00:00:00')).toString()).toBe('75');
  });
});

describe('payroll dates', () => {
  it('first business day of the month at 09:00', () => {
    expect(isoformat(firstBusinessOfMonth(T('2025-02-15T00:00:00')))).toBe('2025-02-03T09:00:00');
    expect(isoformat(firstBusinessOfMonth(T('2025-03-15T00:00:00')))).toBe('2025-03-03T09:00:00');
    expect(isoformat(firstBusinessOfMonth(T('2025-06-15T00:00:00')))).toBe('2025-06-02T09:00:00');
    expect(isoformat(firstBusinessOfMonth(T('2025-10-15T00:00:00')))).toBe('2025-10-01T09:00:00');
  });
  it('a one-year episode from 2025-01-01 09:00 has 11 payrolls, Feb 3 to Dec 1 (none at the Jan 1 horizon)', () => {
    const b = payrollBoundaries(T('2025-01-01T09:00:00'), T('2026-01-01T09:00:00')).map(isoformat);
    expect(b).toHaveLength(11);
    expect(b[0]).toBe('2025-02-03T09:00:00');
    expect(b[10]).toBe('2025-12-01T09:00:00');
  });
  it('includes a boundary equal to the end, excludes one equal to the start', () => {
    expect(payrollBoundaries(T('2025-02-03T09:00:00'), T('2025-03-03T09:00:00')).map(isoformat)).toEqual(['2025-03-03T09:00:00']);
  });
});

describe('timedelta(seconds=float) rounding', () => {
  it('rounds half to even at the microsecond', () => {
    expect(timedeltaSecondsToUs(1.5)).toBe(1_500_000);
    expect(timedeltaSecondsToUs(0.0000005)).toBe(0);
    expect(timedeltaSecondsToUs(0.0000015)).toBe(2);
    expect(timedeltaSecondsToUs(3600.0000004)).toBe(3_600_000_000);
    expect(timedeltaSecondsToUs(2.5e-6)).toBe(2);
    expect(timedeltaSecondsToUs(7.5e-6)).toBe(8);
  });
});

describe('add_business_hours day skipping equals the reference loop', () => {
  /** The reference algorithm, one day at a time. */
  function referenceLoop(t: number, hours: ReturnType<typeof D>): number {
    if (hours.isZero()) return nextBusinessTime(t);
    let cur = nextBusinessTime(t);
    let remaining = hours;
    for (;;) {
      const dayEnd = Math.floor(cur / 86_400_000_000) * 86_400_000_000 + 18 * 3_600_000_000;
      const available = D(String((dayEnd - cur) / 1e6)).div(3600);
      if (remaining.lte(available)) return cur + timedeltaSecondsToUs(remaining.mul(3600).toNumber());
      remaining = remaining.sub(available);
      cur = nextBusinessTime(dayEnd);
      if (!remaining.gt(0)) return cur;
    }
  }
  it('for random instants and hour amounts (including exact multiples of 9 and 28-digit values)', async () => {
    const fc = (await import('fast-check')).default;
    fc.assert(
      fc.property(
        fc.integer({ min: T('2025-01-01T00:00:00'), max: T('2026-06-01T00:00:00') }),
        fc.oneof(
          fc.integer({ min: 0, max: 400 }).map((n) => D(n)),
          fc.integer({ min: 1, max: 60 }).map((n) => D(n * 9)),
          fc.double({ min: 0, max: 500, noNaN: true }).map((x) => D(String(x))),
          fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 1, max: 997 })).map(([a, b]) => D(a).div(b)),
        ),
        (t, h) => {
          expect(addBusinessHours(t, h)).toBe(referenceLoop(t, h));
        },
      ),
      { numRuns: 3000 },
    );
  });
});
