import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXACT_PRODUCT_SITES, fma, fmaIntTimes, fmaShortcut, glibcExp, glibcLog, glibcPow, pyCos, pyExp, pyLog, pyPow, pySin } from '../../src/sim/py/pymath.js';
import { PyRandom, TWOPI } from '../../src/sim/py/rng.js';
import { decodeFloat64, ulpDistance, ulpStep, pow2 } from '../helpers/ulp.js';

type Fn = 'log' | 'exp' | 'pow' | 'sin' | 'cos';
interface MathVectors {
  n: number;
  /** values64 (sin/cos only): base64 little-endian doubles, CPython's outputs for the first inputs of the sweep. */
  functions: Record<Fn, { seed: number; sha256: string; first: number[][]; values64?: string }>;
  edge: { fn: Fn; args: number[]; value?: number | string; error?: string }[];
}

const V = JSON.parse(readFileSync(new URL('../fixtures/py/math-vectors.json', import.meta.url), 'utf8')) as MathVectors;

const PY: Record<Fn, (x: number, y: number) => number> = {
  log: (x) => pyLog(x),
  exp: (x) => pyExp(x),
  pow: (x, y) => pyPow(x, y),
  sin: (x) => pySin(x),
  cos: (x) => pyCos(x),
};


/** Mirror of gen_vectors.py math_inputs(): identical draws, exact float ops only. */
function mathInputs(fn: Fn, r: PyRandom, n: number): [number, number][] {
  const xs: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    const k = i % 5;
    if (fn === 'log') {
      let x: number;
      if (k === 0) x = 1.0 - r.random();
      else if (k === 1) {
        const u = r.random();
        x = u > 0.0 ? u / (1.0 - u) : 1.0;
      } else if (k === 2) x = 0.9 + 0.2 * r.random();
      else if (k === 3) {
        const a = 1.0 - r.random();
        x = a * pow2(r.randint(-1000, 1000));
      } else x = r.randint(1, 10 ** 6);
      xs.push([x, 0]);
    } else if (fn === 'exp') {
      let x: number;
      if (k === 0) x = (r.random() - 0.5) * 40.0;
      else if (k === 1) x = -r.random() * 750.0;
      else if (k === 2) x = r.random() * 709.0;
      else if (k === 3) x = -(1.0 - r.random()) * 30.0;
      else x = (r.random() - 0.5) * 1e-3;
      xs.push([x, 0]);
    } else if (fn === 'pow') {
      let x: number;
      let y: number;
      if (k === 0) {
        x = r.random() * 1.5;
        y = 1.0 / (r.random() * 0.99 + 0.01);
      } else if (k === 1) {
        x = r.random() * 10.0;
        y = r.random() * 2.0 - 1.0;
      } else if (k === 2) {
        x = r.random() * 1e6;
        y = (r.random() - 0.5) * 8.0;
      } else if (k === 3) {
        x = 1.0 + (r.random() - 0.5) * 1e-3;
        y = (r.random() - 0.5) * 1e5;
      } else {
        x = r.random() * 3.0;
        y = r.randint(-30, 30);
      }
      if (x === 0.0) x = 0.5;
      xs.push([x, y]);
    } else {
      let x: number;
      if (k === 0 || k === 1) x = r.random() * TWOPI;
      else if (k === 2) x = (r.random() - 0.5) * 200.0;
      else if (k === 3) x = (r.random() - 0.5) * 2e9;
      else {
        const a = r.random() - 0.5;
        x = a * pow2(r.randint(-40, 60));
      }
      xs.push([x, 0]);
    }
  }
  return xs;
}

function shaFloats(xs: readonly number[]): string {
  const b = Buffer.alloc(8 * xs.length);
  xs.forEach((x, i) => b.writeDoubleLE(x, 8 * i));
  return createHash('sha256').update(b).digest('hex');
}

/** Exact a*b + c rounded once, via BigInt rationals (reference for the software fma). */
function exactFma(a: number, b: number, c: number): number {
  const dec = (x: number): [bigint, number] => {
    const dv = new DataView(new ArrayBuffer(8));
    dv.setFloat64(0, x);
    const bits = dv.getBigUint64(0);
    const be = Number((bits >> 52n) & 0x7ffn);
    let m = bits & ((1n << 52n) - 1n);
    if (be !== 0) m |= 1n << 52n;
    return [x < 0 ? -m : m, be === 0 ? -1074 : be - 1075];
  };
  const [ma, ea] = dec(a);
  const [mb, eb] = dec(b);
  const [mc, ec] = dec(c);
  const e = Math.min(ea + eb, ec);
  const s = ((ma * mb) << BigInt(ea + eb - e)) + (mc << BigInt(ec - e));
  if (s === 0n) return a * b + c;
  // round s * 2^e to 53 bits, half-even (results here are normal)
  const neg = s < 0n;
  let m = neg ? -s : s;
  let ee = e;
  const len = m.toString(2).length;
  if (len > 53) {
    const sh = BigInt(len - 53);
    const q = m >> sh;
    const rem = m - (q << sh);
    const half = 1n << (sh - 1n);
    m = rem > half || (rem === half && (q & 1n) === 1n) ? q + 1n : q;
    ee += len - 53;
  }
  const v = Number(m) * 2 ** ee;
  return neg ? -v : v;
}

describe('software fma', () => {
  it('is exactly rounded (vs BigInt) on random, cancelling and tie-prone inputs', () => {
    const r = new PyRandom(7);
    let n = 0;
    for (let i = 0; i < 20000; i++) {
      const a = (r.random() - 0.5) * 2 ** r.randint(-30, 30);
      const b = (r.random() - 0.5) * 2 ** r.randint(-30, 30);
      const kind = i % 4;
      let c: number;
      if (kind === 0) c = (r.random() - 0.5) * 2 ** r.randint(-60, 60);
      else if (kind === 1) c = -(a * b); // catastrophic cancellation: result is the product's rounding error
      else if (kind === 2) c = -(a * b) * (1 + 2 ** -52 * r.randint(-4, 4));
      else c = r.randint(-(2 ** 30), 2 ** 30) * 2 ** -20;
      expect(fma(a, b, c)).toBe(exactFma(a, b, c));
      n++;
    }
    expect(n).toBe(20000);
    expect(fma(0.1, 10, -1)).toBe(5.551115123125783e-17);
    expect(fma(1 + 2 ** -30, 1 + 2 ** -30, -1)).toBe(2 ** -29 + 2 ** -60); // plain a*b+c loses 2^-60
    expect(fma(2 ** 600, 2 ** 600, -Infinity)).toBe(-Infinity);
    expect(fma(1.5e308, 2, -1.7e308)).toBe(exactFma(1.5e308, 2, -1.7e308)); // a*b overflows, result does not
    expect(fma(1.5e308, 2, -1.7e308)).toBeCloseTo(1.3e308, -300);
    expect(fma(2 ** -600, 2 ** -500, 2 ** -1000)).toBe(2 ** -1000);
  });
});

/**
 * Exact-match floor for pySin/pyCos (V8's Math.sin/cos) against glibc on the 5000 stored sweep values
 * per function: measured 96.88% (sin, 4844/5000) and 96.98% (cos, 4849/5000); all others are 1 ulp off.
 */
const SINCOS_EXACT_FLOOR = 0.965;

describe('fma shortcut (c + RN(a*b) where that is provably the fma)', () => {
  it('is the exact rounding whenever it is taken: random, polynomial-like, tie-prone and power-of-two sums', () => {
    const r = new PyRandom(11);
    const taken: number[] = [0, 0, 0, 0, 0];
    const naiveWrong: number[] = [0, 0, 0, 0, 0];
    const cases = 60000;
    for (let i = 0; i < cases; i++) {
      let a: number;
      let b: number;
      let c: number;
      const kind = i % 5;
      if (kind === 0) {
        // polynomial step: small r times a coefficient plus a coefficient
        a = (r.random() - 0.5) * 2 ** -6;
        b = (r.random() - 0.5) * 2;
        c = (r.random() - 0.5) * 2;
      } else if (kind === 1) {
        // tie-prone: p in [1, 2) (ulp 2^-52) plus c in [2, 4) (ulp 2^-51); the sum's ulp is 2^-51 or 2^-50, so c + p
        // is often exactly a midpoint and the product's rounding error decides
        a = 1 + r.random() * 0.4142;
        b = 1 + r.random() * 0.4142;
        c = (2 + r.random() * 2) * (r.random() < 0.5 ? -1 : 1);
      } else if (kind === 2) {
        // sums at or next to a power of two (the spacing below it is half the spacing above)
        a = 1 + r.random() * 0.4142;
        b = 1 + r.random() * 0.4142;
        const p = a * b;
        c = 2 ** r.randint(1, 3) - p + r.randint(-3, 3) * 2 ** -52;
      } else if (kind === 3) {
        a = (r.random() - 0.5) * 2 ** r.randint(-30, 30);
        b = (r.random() - 0.5) * 2 ** r.randint(-30, 30);
        c = (r.random() - 0.5) * 2 ** r.randint(-60, 60);
      } else {
        // cancellation: c next to -p
        a = (r.random() - 0.5) * 2 ** r.randint(-10, 10);
        b = (r.random() - 0.5) * 2 ** r.randint(-10, 10);
        c = -(a * b) * (1 + 2 ** -52 * r.randint(-8, 8));
      }
      const want = exactFma(a, b, c);
      if (!Object.is(a * b + c, want)) naiveWrong[kind] = (naiveWrong[kind] ?? 0) + 1;
      const got = fmaShortcut(a * b, c);
      if (!Number.isNaN(got)) {
        taken[kind] = (taken[kind] ?? 0) + 1;
        if (!Object.is(got, want)) expect.fail(`fmaShortcut(${a} * ${b}, ${c}) = ${got}, exact ${want}`);
      }
      if (!Object.is(fma(a, b, c), want)) expect.fail(`fma(${a}, ${b}, ${c}) = ${fma(a, b, c)}, exact ${want}`);
    }
    console.log('fmaShortcut taken per kind', taken, 'plain a * b + c wrong', naiveWrong, 'of', cases / 5);
    // taken for nearly all polynomial-like inputs (|a * b| small against |c|) and for the random ones where c is not
    // negligible; on the tie-prone ones the plain a * b + c is wrong often enough that a shortcut taken too eagerly
    // would be seen
    expect(taken[0]).toBeGreaterThan(0.95 * (cases / 5));
    expect(taken[3]).toBeGreaterThan(0.4 * (cases / 5));
    expect(taken[1]).toBeLessThan(0.95 * (cases / 5));
    expect(naiveWrong[1]).toBeGreaterThan(cases / 5 / 20);
    expect(naiveWrong[2]).toBeGreaterThan(cases / 5 / 20);
  });
});

describe('exact-product sites of exp/log (plain k * C + c instead of fma)', () => {
  for (const [name, site] of Object.entries(EXACT_PRODUCT_SITES)) {
    it(`${name}: k * C is exact for every |k| <= ${site.maxK} and not for the next k; fmaIntTimes equals fma within and past the bound`, () => {
      // fma(k, C, -RN(k*C)) is the exact rounding error of the product (representable): 0 iff the product is exact
      for (let k = -site.maxK; k <= site.maxK; k++) {
        const p = k * site.c;
        if (fma(k, site.c, -p) !== 0) expect.fail(`${name}: ${k} * C is not exact`);
      }
      for (const k of [site.maxK + 1, -site.maxK - 1]) expect(fma(k, site.c, -(k * site.c))).not.toBe(0);
      let seed = 12345;
      const next = (): number => {
        seed = (Math.imul(seed, 1103515245) + 12345) | 0;
        return (seed >>> 0) / 4294967296;
      };
      for (let i = 0; i < 20_000; i++) {
        // within the bound, and a tenth of them up to 64 past it (where the fma must be taken)
        const k = i % 10 === 0 ? Math.sign(next() - 0.5) * (site.maxK + 1 + Math.floor(next() * 64)) : Math.round((next() * 2 - 1) * site.maxK);
        const base = (next() * 2 - 1) * 2 ** Math.round(next() * 40 - 30);
        // every 7th: near cancellation with the product
        const c = i % 7 === 0 ? -(k * site.c) * (1 + base * 1e-12) : base;
        const got = fmaIntTimes(k, site.c, site.maxK, c);
        const want = fma(k, site.c, c);
        if (!Object.is(got, want)) expect.fail(`${name}: k=${k} c=${c}: ${got} vs fma ${want}`);
      }
      expect(Object.is(fmaIntTimes(0, site.c, site.maxK, -0), fma(0, site.c, -0))).toBe(true);
    });
  }
});

describe('ulp helpers', () => {
  it('step and measure in units in the last place', () => {
    expect(ulpStep(1, 1)).toBe(1 + 2 ** -52);
    expect(ulpStep(1, -1)).toBe(1 - 2 ** -53);
    expect(ulpStep(-1, -1)).toBe(-1 - 2 ** -52);
    expect(ulpStep(0, -1)).toBe(-5e-324);
    expect(ulpStep(-5e-324, 1)).toBe(0);
    expect(ulpDistance(-5e-324, 5e-324)).toBe(2);
    expect(ulpDistance(1, 1 + 2 ** -52)).toBe(1);
    expect(ulpDistance(-0, 0)).toBe(0);
    expect(ulpDistance(NaN, 1)).toBe(Infinity);
  });
});

describe('glibc libm ports vs CPython 3.11 math / ** (x86_64 glibc 2.36, FMA variants)', () => {
  for (const fn of ['log', 'exp', 'pow'] as const) {
    const spec = V.functions[fn];
    it(`${fn}: ${V.n} inputs bit-exact (sha256) + first 200 verbatim`, () => {
      const ins = mathInputs(fn, new PyRandom(spec.seed), V.n);
      spec.first.forEach((row, i) => {
        const [x, y] = ins[i] as [number, number];
        expect(x).toBe(row[0]);
        if (fn === 'pow') expect(y).toBe(row[1]);
        const want = row[row.length - 1] as number;
        expect(PY[fn](x, y), `${fn}(${x}${fn === 'pow' ? `, ${y}` : ''})`).toBe(want);
      });
      const outs = ins.map(([x, y]) => PY[fn](x, y));
      expect(shaFloats(outs)).toBe(spec.sha256);
    });
  }

  // sin/cos are V8's Math.sin/cos (the IBM-derived glibc port was removed for licensing): not bit-exact,
  // but within 1 ulp of glibc everywhere, and equal to it for ~97% of arguments.
  for (const fn of ['sin', 'cos'] as const) {
    const spec = V.functions[fn];
    it(`${fn}: within 1 ulp of CPython on every stored value, exact on >= ${SINCOS_EXACT_FLOOR * 100}%`, () => {
      const want = decodeFloat64(spec.values64 as string);
      expect(want.length).toBe(5000);
      const ins = mathInputs(fn, new PyRandom(spec.seed), want.length);
      // the decoded block and the JSON-number rows agree (and the inputs are rebuilt exactly)
      spec.first.forEach((row, i) => {
        expect((ins[i] as [number, number])[0]).toBe(row[0]);
        expect(want[i]).toBe(row[1]);
      });
      let exact = 0;
      ins.forEach(([x], i) => {
        const got = PY[fn](x, 0);
        const w = want[i] as number;
        if (Object.is(got, w)) exact++;
        else if (ulpDistance(got, w) > 1) expect(got, `${fn}(${x}) more than 1 ulp from CPython`).toBe(w);
      });
      expect(exact / want.length).toBeGreaterThanOrEqual(SINCOS_EXACT_FLOOR);
    });
  }

  it('edge cases (values, infinities, errors)', () => {
    for (const e of V.edge) {
      const [x, y] = [e.args[0] as number, e.args[1] ?? 0];
      let got: number | string;
      try {
        got = PY[e.fn](x, y);
      } catch (err) {
        const msg = (err as Error).message;
        got = `error:${msg.includes('complex') ? 'TypeError' : msg.split(':')[0]}`;
      }
      const want = e.error !== undefined ? `error:${e.error}` : e.value;
      const label = `${e.fn}(${e.args.join(', ')})`;
      if ((e.fn === 'sin' || e.fn === 'cos') && typeof got === 'number' && Number.isFinite(got) && typeof want === 'number') {
        expect(ulpDistance(got, want), label).toBeLessThanOrEqual(1);
        expect(Math.sign(got), label).toBe(Math.sign(want));
        continue;
      }
      const gotNorm = typeof got === 'number' && !Number.isFinite(got) ? (got !== got ? 'nan' : got > 0 ? 'inf' : '-inf') : got;
      expect(gotNorm, label).toStrictEqual(want);
    }
  });

  it('raw glibc functions keep IEEE special values', () => {
    expect(glibcLog(0)).toBe(-Infinity);
    expect(glibcLog(-1)).toBeNaN();
    expect(glibcLog(Infinity)).toBe(Infinity);
    expect(glibcLog(1)).toBe(0);
    expect(glibcExp(-Infinity)).toBe(0);
    expect(glibcExp(1000)).toBe(Infinity);
    expect(glibcExp(-1000)).toBe(0);
    expect(glibcPow(2, 0.5)).toBe(Math.SQRT2);
    expect(glibcPow(-2, 3)).toBe(-8);
    expect(glibcPow(-2, 0.5)).toBeNaN();
    expect(glibcPow(0, -1)).toBe(Infinity);
  });

  it('pySin / pyCos keep Python\'s special values and errors', () => {
    for (const f of [pySin, pyCos]) {
      expect(() => f(Infinity)).toThrow('ValueError: math domain error');
      expect(() => f(-Infinity)).toThrow('ValueError: math domain error');
      expect(f(NaN)).toBeNaN();
    }
    expect(Object.is(pySin(-0), -0)).toBe(true);
    expect(Object.is(pySin(0), 0)).toBe(true);
    expect(pyCos(-0)).toBe(1);
  });
});
