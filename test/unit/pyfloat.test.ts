import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pyDecimalQuantize, pyFormatF, pyFormatFixed, pyRepr, pyRound, pyRoundInt } from '../../src/sim/py/pyfloat.js';
import { PyRandom } from '../../src/sim/py/rng.js';
import { pow2 } from '../helpers/ulp.js';

interface SpecialRow {
  x: number;
  repr: string;
  fmt: string[];
  round: Record<string, string>;
  roundInt: string;
}
interface FirstRow {
  x: number;
  repr: string;
  fmt: string[];
  round: number[];
}
interface FormatVectors {
  n: number;
  inputSha256: string;
  sha256: Record<string, string>;
  first: FirstRow[];
  special: SpecialRow[];
  nonfinite: { repr: string[]; fmt: string[] };
}

const V = JSON.parse(readFileSync(new URL('../fixtures/py/float-format-vectors.json', import.meta.url), 'utf8')) as FormatVectors;

const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));

/** Mirror of gen_vectors.py fmt_inputs(): identical draws, exact float ops only. */
function fmtInputs(r: PyRandom, n: number): number[] {
  const xs: number[] = [];
  const dv = new DataView(new ArrayBuffer(8));
  while (xs.length < n) {
    const k = r.randrange(6);
    let x: number;
    if (k === 0) {
      const e = r.randint(-6, 15);
      x = e >= 0 ? r.random() * (POW10[e] as number) : r.random() / (POW10[-e] as number);
      if (r.getrandbits(1)) x = -x;
    } else if (k === 1) {
      const d = r.randint(0, 6);
      const m = r.randint(-(10 ** 7), 10 ** 7);
      x = (m * 10 + 5) / (POW10[d + 1] as number);
    } else if (k === 2) {
      dv.setBigUint64(0, r.getrandbitsBig(64), true);
      x = dv.getFloat64(0, true);
      if (!Number.isFinite(x)) continue;
    } else if (k === 3) {
      x = r.randint(-(2 ** 51), 2 ** 51);
    } else if (k === 4) {
      const a = r.randint(-(2 ** 40), 2 ** 40);
      x = a / pow2(r.randint(0, 60));
    } else {
      const a = r.randint(0, 10 ** 8) / 100.0;
      x = a + r.random() * 1e-9;
    }
    xs.push(x);
  }
  return xs;
}

function shaLines(lines: Iterable<string>): string {
  const h = createHash('sha256');
  for (const s of lines) h.update(`${s}\n`, 'utf8');
  return h.digest('hex');
}

function shaFloats(xs: readonly number[]): string {
  const b = Buffer.alloc(8 * xs.length);
  xs.forEach((x, i) => b.writeDoubleLE(x, 8 * i));
  return createHash('sha256').update(b).digest('hex');
}

function errName(f: () => number | string): string {
  try {
    const v = f();
    return typeof v === 'number' ? BigInt(v).toString() : v;
  } catch (e) {
    return (e as Error).message.split(':')[0] as string;
  }
}

describe('pyRepr (hand-checked)', () => {
  it('matches Python repr layout rules', () => {
    expect(pyRepr(899)).toBe('899.0');
    expect(pyRepr(1e-5)).toBe('1e-05');
    expect(pyRepr(1e-4)).toBe('0.0001');
    expect(pyRepr(1e16)).toBe('1e+16');
    expect(pyRepr(9999999999999998.0)).toBe('9999999999999998.0');
    expect(pyRepr(1.5e-7)).toBe('1.5e-07');
    expect(pyRepr(5e-324)).toBe('5e-324');
    expect(pyRepr(-0.0)).toBe('-0.0');
    expect(pyRepr(0)).toBe('0.0');
    expect(pyRepr(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(pyRepr(1e22)).toBe('1e+22');
    expect(pyRepr(123456789012345678)).toBe('1.2345678901234568e+17');
    expect(pyRepr(Infinity)).toBe('inf');
    expect(pyRepr(-Infinity)).toBe('-inf');
    expect(pyRepr(NaN)).toBe('nan');
  });
});

describe('pyFormatFixed / pyRound (hand-checked)', () => {
  it('rounds half-even on the exact binary value', () => {
    expect(pyFormatFixed(0.125, 2)).toBe('0.12'); // exact tie -> even
    expect(pyFormatFixed(0.375, 2)).toBe('0.38');
    expect(pyFormatFixed(2.675, 2)).toBe('2.67'); // 2.67499999... in binary
    expect(pyFormatFixed(1.0005, 3)).toBe('1.000'); // 1.000499999...
    expect(pyFormatFixed(0.2545, 3)).toBe('0.255'); // 0.25450000000000000621...
    expect(pyFormatFixed(0.0625, 3)).toBe('0.062'); // exact tie -> even
    expect(pyFormatFixed(0.25, 1)).toBe('0.2');
    expect(pyFormatFixed(0.5, 0)).toBe('0');
    expect(pyFormatFixed(1.5, 0)).toBe('2');
    expect(pyFormatFixed(2.5, 0)).toBe('2');
    expect(pyFormatFixed(-0.5, 0)).toBe('-0');
    expect(pyFormatFixed(-0.0, 3)).toBe('-0.000');
    expect(pyFormatFixed(-0.04, 1)).toBe('-0.0');
    expect(pyFormatFixed(1e22, 1)).toBe('10000000000000000000000.0');
    expect(pyFormatFixed(Infinity, 2)).toBe('inf');
    expect(pyFormatFixed(NaN, 2)).toBe('nan');
    expect(pyFormatF(3.14159, 3)).toBe('3.142');
    expect(pyDecimalQuantize(12.345, 2)).toBe('12.35'); // 12.3450000000000006394884621841
    expect(pyDecimalQuantize(1.005, 2)).toBe('1.00');
  });
  it('round(x, n) and round(x)', () => {
    expect(pyRound(2.675, 2)).toBe(2.67);
    expect(pyRound(0.125, 2)).toBe(0.12);
    expect(pyRound(1234.5, -2)).toBe(1200);
    expect(pyRound(250, -2)).toBe(200);
    expect(pyRound(350, -2)).toBe(400);
    expect(Object.is(pyRound(-0.04, 1), -0)).toBe(true);
    expect(Object.is(pyRound(-0.0, 2), -0)).toBe(true);
    expect(pyRound(5e-324, 400)).toBe(5e-324);
    expect(pyRoundInt(2.5)).toBe(2);
    expect(pyRoundInt(3.5)).toBe(4);
    expect(Object.is(pyRoundInt(-0.5), 0)).toBe(true);
    expect(pyRoundInt(-2.5)).toBe(-2);
    expect(pyRoundInt(-2.6)).toBe(-3);
    expect(() => pyRoundInt(Infinity)).toThrow(/OverflowError/);
    expect(() => pyRoundInt(NaN)).toThrow(/ValueError/);
    expect(() => pyRound(1.7976931348623157e308, -308)).toThrow(/OverflowError/);
  });
});

describe('Python vectors: special values', () => {
  it('repr, %.Nf (N=0..8), round(x, N) (N=-3..8), round(x)', () => {
    let checks = 0;
    for (const row of V.special) {
      expect(pyRepr(row.x), `repr ${row.repr}`).toBe(row.repr);
      row.fmt.forEach((s, d) => expect(pyFormatFixed(row.x, d), `%.${d}f ${row.repr}`).toBe(s));
      for (const [d, s] of Object.entries(row.round)) {
        expect(errName(() => pyRepr(pyRound(row.x, Number(d)))), `round(${row.repr}, ${d})`).toBe(s);
      }
      expect(errName(() => pyRoundInt(row.x)), `round(${row.repr})`).toBe(row.roundInt);
      checks += 2 + row.fmt.length + Object.keys(row.round).length;
    }
    expect(checks).toBeGreaterThan(800);
    expect([pyRepr(Infinity), pyRepr(-Infinity), pyRepr(NaN)]).toEqual(V.nonfinite.repr);
    expect([pyFormatFixed(Infinity, 2), pyFormatFixed(-Infinity, 2), pyFormatFixed(NaN, 2)]).toEqual(V.nonfinite.fmt);
  });
});

describe(`Python vectors: ${V.n} generated floats x digits 0..6`, () => {
  const xs = fmtInputs(new PyRandom(8675309), V.n);

  it('reconstructs the identical inputs', () => {
    expect(shaFloats(xs)).toBe(V.inputSha256);
    V.first.forEach((row, i) => expect(xs[i]).toBe(row.x));
  });

  it('first 300 explicitly', () => {
    for (const row of V.first) {
      expect(pyRepr(row.x)).toBe(row.repr);
      row.fmt.forEach((s, d) => expect(pyFormatFixed(row.x, d)).toBe(s));
      row.round.forEach((v, d) => expect(Object.is(pyRound(row.x, d), v), `round(${row.repr}, ${d})`).toBe(true));
    }
  });

  it('repr (sha256 over all values)', () => {
    expect(shaLines(xs.map(pyRepr))).toBe(V.sha256.repr);
  });

  for (let d = 0; d <= 6; d++) {
    it(`'%.${d}f' % x and round(x, ${d}) (sha256 over all values)`, () => {
      expect(shaLines(xs.map((x) => pyFormatFixed(x, d)))).toBe(V.sha256[`fmt${d}`]);
      expect(shaLines(xs.map((x) => pyRepr(pyRound(x, d))))).toBe(V.sha256[`round${d}`]);
    });
  }

  it('round(x) (sha256 over |x| < 2^53)', () => {
    expect(shaLines(xs.filter((x) => Math.abs(x) < 2 ** 53).map((x) => String(pyRoundInt(x))))).toBe(V.sha256.roundInt);
  });
});
