/**
 * The libm functions CPython's `math` module and float `**` call, computed as CPython on glibc does.
 *
 * exp / log / pow: BIT-EXACT. V8's Math.log/exp/pow are fdlibm ports that differ from glibc in the last
 * bit for several percent of arguments, which would make `random.gammavariate`, `expovariate`, ...
 * diverge from CPython, so they are ported here.
 *   Provenance: ported from ARM optimized-routines (https://github.com/ARM-software/optimized-routines,
 *   math/exp.c, math/log.c, math/pow.c with the tables and coefficients of math/exp_data.c,
 *   math/log_data.c, math/pow_log_data.c; Copyright (c) Arm Limited), the same code glibc 2.28+ uses
 *   for exp/log/pow. Used under the MIT licence (upstream is dual-licensed
 *   "MIT OR Apache-2.0 WITH LLVM-exception"); attribution and licence text in THIRD_PARTY_NOTICES.md.
 *   Tables and coefficients are identical to upstream's (checked against optimized-routines v19.11
 *   and current master) and to the ones in glibc 2.36's libm.so.6.
 *   Rounding: the results match glibc's x86_64 `__*_fma` ifunc builds, which glibc selects on every
 *   CPU with FMA+AVX2 (the aarch64 build contracts the same way). Every fused multiply-add the compiler
 *   forms from the upstream C expressions (as observed in the disassembly of Debian glibc 2.36
 *   libm.so.6) is done with an exactly rounded software {@link fma}. Not covered: CPUs without FMA
 *   (glibc's SSE2 variants) and macOS/Windows libms.
 *
 * sin / cos: NOT bit-exact. {@link pySin}/{@link pyCos} return V8's Math.sin/Math.cos (fdlibm) with
 * Python's error behaviour (ValueError for +-inf, NaN passes through). glibc's own sin/cos come from the
 * IBM Accurate Mathematical Library (LGPL-2.1), which this Apache-2.0 project does not carry. Measured
 * against CPython 3.11 / glibc 2.36 (x86_64, FMA): never more than 1 ulp apart; the last bit differs for
 * 3.0% of sin and 2.95% of cos arguments on the 60,000-argument sweeps of test/fixtures/py (|x| up to
 * 2^59), and for 3.3% of Box-Muller arguments random() * 2pi (10^6 draws each).
 *   Used only by `PyRandom.gauss` (Box-Muller, src/sim/py/rng.ts): a 1-ulp sin/cos difference makes a
 *   gauss() value differ by at most 2 ulps (measured: 2.9% of standard deviates not bit-identical).
 *   The simulation's only gauss draw is the world generator's per-task skill boost,
 *   round(clamp(gauss(0.12, 0.06), 0.01, 0.40), 4) (src/sim/model/world.ts), so a difference changes a world
 *   only if the two unrounded values straddle a 4-decimal rounding boundary. Measured over 2*10^5 such
 *   draws: 1.2% not bit-identical, mean |difference| 2.2e-19 after clamping, so the chance that one
 *   draw rounds differently is about 2.2e-19 / 1e-4 = 2e-15 (about 5e-13 for a 200-task market);
 *   none did, and the 6,000 stored skill-boost vectors match CPython exactly.
 */
import { decompose as decomposeAbs } from './pyfloat.js';

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
/** Index of the high 32-bit word of a double inside U32 (1 on little-endian hosts). */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;

function asDouble(hi: number, lo: number): number {
  U32[HI] = hi;
  U32[LO] = lo;
  return F64[0] as number;
}

/** Parse a C99 hexadecimal float literal exactly (used for the upstream constants). */
function hexf(s: string): number {
  const m = /^(-?)0x([0-9a-f])\.([0-9a-f]*)p([-+]?\d+)$/i.exec(s);
  if (!m) throw new Error(`bad hex float ${s}`);
  const frac = m[3] as string;
  const mant = parseInt((m[2] as string) + frac, 16); // <= 53 bits: exact
  const e = Number(m[4]) - 4 * frac.length;
  // two-step scaling keeps every intermediate a normal, exact power-of-two product
  const v = mant * 2 ** Math.trunc(e / 2) * 2 ** (e - Math.trunc(e / 2));
  return m[1] === '-' ? -v : v;
}

// ---------------------------------------------------------------------------------------------
// Exactly rounded fused multiply-add in software.
// ---------------------------------------------------------------------------------------------

const SPLITTER = 134217729; // 2^27 + 1 (Veltkamp)
const FMA_BIG = 2 ** 995;
const FMA_TINY = 2 ** -960;

/**
 * fma(a, b, c) = a*b + c with a single rounding (round-half-even), like the x86 vfmadd instruction.
 * Algorithm: Dekker's exact product, TwoSum, then Boldo-Melquiond's round-to-odd trick; operands whose
 * partial products could overflow/underflow go through an exact BigInt evaluation instead.
 */
export function fma(a: number, b: number, c: number): number {
  const p = a * b;
  const ap = Math.abs(p);
  if (!(ap < FMA_BIG && (ap > FMA_TINY || p === 0) && Math.abs(a) < FMA_BIG && Math.abs(b) < FMA_BIG && Math.abs(c) < FMA_BIG)) {
    return fmaSlow(a, b, c);
  }
  if (p === 0) return p + c;
  const s = fmaShortcut(p, c);
  if (s === s) return s;
  // exact product p + pe = a*b
  let t = SPLITTER * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLITTER * b;
  const bh = t - (t - b);
  const bl = b - bh;
  const pe = ah * bh - p + ah * bl + al * bh + al * bl;
  // TwoSum(c, p) -> th + tl
  const th = c + p;
  const bv = th - c;
  const tl = c - (th - bv) + (p - bv);
  // v = round_to_odd(tl + pe)
  let v = tl + pe;
  const vb = v - tl;
  const ve = tl - (v - vb) + (pe - vb);
  if (ve !== 0) {
    F64[0] = v;
    const lo = U32[LO] as number;
    if ((lo & 1) === 0) {
      // v is even and inexact: the odd neighbour towards the exact value is the round-to-odd result
      if (ve > 0 === v > 0) {
        // away from zero
        if (lo === 0xffffffff) {
          U32[LO] = 0;
          U32[HI] = (U32[HI] as number) + 1;
        } else U32[LO] = lo + 1;
      } else if (lo === 0) {
        U32[LO] = 0xffffffff;
        U32[HI] = (U32[HI] as number) - 1;
      } else U32[LO] = lo - 1;
      v = F64[0] as number;
    }
  }
  return th + v;
}

const P2_M53 = 2 ** -53;
const ONE_PLUS_2_M50 = 1 + 2 ** -50;

/**
 * The common case of {@link fma} without the exact product: `c + p` (p = RN(a*b)) when that is provably fma(a, b, c),
 * else NaN. For p normal (|p| > 2^-960) and |c|, |p| < 2^995, as fma calls it. The exact value is s + t + e, where
 * s + t = c + p exactly (TwoSum) and e = a*b - p, |e| <= ulp(p)/2 <= |p| * 2^-53. Let D = |t| + |p| * 2^-53 >= |t + e|
 * and q >= D (q is D computed and scaled up by 1 + 2^-50, more than its rounding errors). Rounding is monotonic, so
 * s - q and s + q both rounding to s means every value within D of s rounds to s, the exact one among them: the fma is
 * s. It fails (NaN: the caller takes the exact product) near a tie, for s = 0, and when e is not small against the
 * spacing of the doubles at s (cancellation; p near s in size ~1% of calls in exp/log's polynomials). test/unit/pymath.test.ts
 * checks it against the exact rounding on tie-prone inputs.
 */
export function fmaShortcut(p: number, c: number): number {
  const s = c + p;
  const bv = s - c;
  const t = c - (s - bv) + (p - bv);
  const q = (Math.abs(t) + Math.abs(p) * P2_M53) * ONE_PLUS_2_M50;
  return s + q === s && s - q === s ? s : NaN;
}

/**
 * `fma(k, C, c)` for an integer k: the plain `k * C + c` when |k| <= maxK, a bound up to which k * C is exact (then
 * both round the same exact value once: same result, same sign of zero), else {@link fma}. The sites and their bounds:
 * {@link EXACT_PRODUCT_SITES}.
 */
export function fmaIntTimes(k: number, C: number, maxK: number, c: number): number {
  return k <= maxK && k >= -maxK ? k * C + c : fma(k, C, c);
}

/** Exact BigInt fma for operands outside the safe range of the fast algorithm (and non-finite ones). */
function fmaSlow(a: number, b: number, c: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a * b + c;
  if (!Number.isFinite(c)) return c; // finite a*b (even if it overflows as a double) + inf/nan
  if (a === 0 || b === 0) return a * b + c;
  if (c === 0) return a * b; // exact product rounded once (sign of zero per IEEE)
  const da = decompose(a);
  const db = decompose(b);
  const dc = decompose(c);
  const pm = da.m * db.m;
  const pe = da.e + db.e;
  const e = Math.min(pe, dc.e);
  const sum = (pm << BigInt(pe - e)) + (dc.m << BigInt(dc.e - e));
  if (sum === 0n) return 0; // exact cancellation: +0 in round-to-nearest
  return bigTimesPow2(sum, e);
}

/** x = m * 2^e with a signed BigInt mantissa. */
function decompose(x: number): { m: bigint; e: number } {
  const d = decomposeAbs(x);
  return { m: x < 0 ? -d.m : d.m, e: d.e };
}

/** Correctly rounded (half-even) double nearest to n * 2^e. */
function bigTimesPow2(n: bigint, e: number): number {
  const neg = n < 0n;
  let m = neg ? -n : n;
  const bits = m.toString(2).length;
  // target exponent of the result's last mantissa bit
  let lsb = e + bits - 53;
  if (lsb < -1074) lsb = -1074; // subnormal range
  const sh = lsb - e;
  if (sh > 0) {
    const s = BigInt(sh);
    const q = m >> s;
    const rem = m - (q << s);
    const half = 1n << (s - 1n);
    m = rem > half || (rem === half && (q & 1n) === 1n) ? q + 1n : q;
    e = lsb;
  }
  // m now fits in 54 bits: Number(m) is exact; scale by 2^e in two exact steps
  const h = Math.trunc(e / 2);
  const v = Number(m) * 2 ** h * 2 ** (e - h);
  return neg ? -v : v;
}

// ---------------------------------------------------------------------------------------------
// exp  (optimized-routines math/exp.c; glibc's __exp_fma build of it)
// ---------------------------------------------------------------------------------------------

const EXP_INVLN2N = hexf('0x1.71547652b82fep+7');
const EXP_NEGLN2HIN = hexf('-0x1.62e42fefa0000p-8');
const EXP_NEGLN2LON = hexf('-0x1.cf79abc9e3b3ap-47');
const EXP_SHIFT = hexf('0x1.8p52');
const EXP_C2 = hexf('0x1.ffffffffffdbdp-2');
const EXP_C3 = hexf('0x1.555555555543cp-3');
const EXP_C4 = hexf('0x1.55555cf172b91p-5');
const EXP_C5 = hexf('0x1.1111167a4d017p-7');
/** |kd| up to which kd * EXP_NEGLN2HIN is exact (see {@link EXACT_PRODUCT_SITES}). */
const EXP_HI_EXACT_KD = 189096;
const P2_1009 = 2 ** 1009;
const P2_M1022 = 2 ** -1022;

function expSpecial(tmp: number, sbHi: number, sbLo: number, kiLo: number): number {
  if ((kiLo & 0x80000000) === 0) {
    // k > 0: the exponent of scale might have overflowed
    const scale = asDouble((sbHi - (1009 << 20)) >>> 0, sbLo);
    return P2_1009 * fma(scale, tmp, scale);
  }
  // k < 0: care in the subnormal range
  const scale = asDouble((sbHi + (1022 << 20)) >>> 0, sbLo);
  const st = scale * tmp;
  let y = scale + st;
  if (y < 1.0) {
    let lo = scale - y + st;
    const hi = 1.0 + y;
    lo = 1.0 - hi + y + lo;
    y = lo + hi - 1.0;
    if (y === 0) y = 0;
  }
  return P2_M1022 * y;
}

/** glibc `exp(x)` bit for bit (FMA build). */
export function glibcExp(x: number): number {
  F64[0] = x;
  let abstop = ((U32[HI] as number) >>> 20) & 0x7ff;
  if (abstop - 0x3c9 < 0 || abstop - 0x3c9 >= 0x3f) {
    if (abstop - 0x3c9 < 0) return 1.0 + x; // tiny x (also 0)
    if (abstop >= 0x409) {
      if (x === -Infinity) return 0.0;
      if (abstop >= 0x7ff) return 1.0 + x;
      return x < 0 ? 0.0 : Infinity;
    }
    abstop = 0; // large |x|: handled by expSpecial
  }
  const kd0 = fma(x, EXP_INVLN2N, EXP_SHIFT);
  F64[0] = kd0;
  const kiLo = U32[LO] as number;
  const kd = kd0 - EXP_SHIFT;
  const r = fma(kd, EXP_NEGLN2LON, fmaIntTimes(kd, EXP_NEGLN2HIN, EXP_HI_EXACT_KD, x));
  const i = kiLo & 127;
  const sbHi = ((EXP_SB_HI[i] as number) + (kiLo << 13)) >>> 0;
  const sbLo = EXP_SB_LO[i] as number;
  const r2 = r * r;
  const tmp = fma(r2 * r2, fma(r, EXP_C5, EXP_C4), fma(fma(r, EXP_C3, EXP_C2), r2, (EXP_TAIL[i] as number) + r));
  if (abstop === 0) return expSpecial(tmp, sbHi, sbLo, kiLo);
  const scale = asDouble(sbHi, sbLo);
  return fma(scale, tmp, scale);
}

// ---------------------------------------------------------------------------------------------
// log  (optimized-routines math/log.c; glibc's __log_fma build of it)
// ---------------------------------------------------------------------------------------------

const LOG_LN2HI = hexf('0x1.62e42fefa3800p-1');
const LOG_LN2LO = hexf('0x1.ef35793c76730p-45');
const LOG_A0 = hexf('-0x1.0000000000001p-1');
const LOG_A1 = hexf('0x1.555555551305bp-2');
const LOG_A2 = hexf('-0x1.fffffffeb4590p-3');
const LOG_A3 = hexf('0x1.999b324f10111p-3');
const LOG_A4 = hexf('-0x1.55575e506c89fp-3');
const LOG_B0 = hexf('-0x1.0000000000000p-1');
const LOG_B1 = hexf('0x1.5555555555577p-2');
const LOG_B2 = hexf('-0x1.ffffffffffdcbp-3');
const LOG_B3 = hexf('0x1.999999995dd0cp-3');
const LOG_B4 = hexf('-0x1.55555556745a7p-3');
const LOG_B5 = hexf('0x1.24924a344de30p-3');
const LOG_B6 = hexf('-0x1.fffffa4423d65p-4');
const LOG_B7 = hexf('0x1.c7184282ad6cap-4');
const LOG_B8 = hexf('-0x1.999eb43b068ffp-4');
const LOG_B9 = hexf('0x1.78182f7afd085p-4');
const LOG_B10 = hexf('-0x1.5521375d145cdp-4');
/** |k| up to which k * LOG_LN2HI and k * LOG_LN2LO are exact (see {@link EXACT_PRODUCT_SITES}). */
const LOG_HI_EXACT_K = 2954;
const LOG_LO_EXACT_K = 16;
const P2_27 = 2 ** 27;
const P2_52 = 2 ** 52;

/** glibc `log(x)` bit for bit (FMA build); log(0) = -inf, log(<0) = NaN (no exceptions). */
export function glibcLog(x: number): number {
  if (x >= 0.9375 && x < 1.064697265625) {
    // |x - 1| small: dedicated polynomial
    if (x === 1.0) return 0;
    const r = x - 1.0;
    const r2 = r * r;
    const r3 = r * r2;
    const p = fma(
      fma(fma(r3, LOG_B10, fma(r2, LOG_B9, fma(r, LOG_B8, LOG_B7))), r3, fma(r2, LOG_B6, fma(r, LOG_B5, LOG_B4))),
      r3,
      fma(r2, LOG_B3, fma(r, LOG_B2, LOG_B1)),
    );
    const rhi = fma(r, P2_27, r) - r * P2_27; // r*2^27 is exact
    const rlo = r - rhi;
    const rhi2 = rhi * rhi; // exact (rhi has <= 27 significant bits)
    const hi = fma(rhi2, LOG_B0, r);
    let lo = fma(rhi2, LOG_B0, r - hi);
    lo = fma(LOG_B0 * rlo, rhi + r, lo);
    return hi + fma(p, r3, lo);
  }
  F64[0] = x;
  let hx = U32[HI] as number;
  let lx = U32[LO] as number;
  const top = hx >>> 16;
  if (top - 0x10 < 0 || top - 0x10 >= 0x7fe0) {
    if (x === 0) return -Infinity;
    if (x === Infinity) return x;
    if (!(x > 0)) return NaN;
    // subnormal: normalize
    F64[0] = x * P2_52;
    hx = ((U32[HI] as number) - (52 << 20)) >>> 0;
    lx = U32[LO] as number;
  }
  const tmpHi = (hx - 0x3fe60000) | 0;
  const i = (tmpHi >> 13) & 127;
  const k = tmpHi >> 20;
  const z = asDouble((hx - (tmpHi & 0xfff00000)) >>> 0, lx);
  const r = fma(z, LOG_INVC[i] as number, -1.0);
  const w = fmaIntTimes(k, LOG_LN2HI, LOG_HI_EXACT_K, LOG_LOGC[i] as number);
  const hi = w + r;
  const lo = fmaIntTimes(k, LOG_LN2LO, LOG_LO_EXACT_K, w - hi + r);
  const r2 = r * r;
  return fma(r * r2, fma(fma(r, LOG_A4, LOG_A3), r2, fma(r, LOG_A2, LOG_A1)), fma(r2, LOG_A0, lo)) + hi;
}

/**
 * Fused multiply-adds of glibcExp/glibcLog whose product is exact, done as a plain `k * C + c` ({@link fmaIntTimes}):
 * fma(k, C, c) rounds k*C + c once, and when k*C is a double the plain sum rounds the same exact value once too (same
 * result, same sign of zero). Each is an integer k times a constant whose significand has few significant bits (its odd part: 42 bits for
 * LOG_LN2HI, 49 for LOG_LN2LO, 36 for EXP_NEGLN2HIN), so the product is exact while |k| times that odd part is below
 * 2^53: up to `maxK`. log's exponent k lies within [-1075, 1024] (subnormals normalised first), always below
 * LOG_HI_EXACT_K; |x| < 1024 gives exp's |kd| up to 189097, and |k| above 16 occurs for log arguments outside about
 * [2^-16, 2^17]: beyond its bound each site takes the fma. test/unit/pymath.test.ts checks every product within each
 * bound exact and the next one past it inexact, and fmaIntTimes against fma within and beyond the bounds. (The sites of glibcPow's inline log and exp are left
 * as they are: pow is not on the world generator's path.)
 */
export const EXACT_PRODUCT_SITES: Readonly<Record<'logLn2hi' | 'logLn2lo' | 'expNegLn2hi', { readonly c: number; readonly maxK: number }>> = {
  logLn2hi: { c: LOG_LN2HI, maxK: LOG_HI_EXACT_K },
  logLn2lo: { c: LOG_LN2LO, maxK: LOG_LO_EXACT_K },
  expNegLn2hi: { c: EXP_NEGLN2HIN, maxK: EXP_HI_EXACT_KD },
};

// ---------------------------------------------------------------------------------------------
// pow  (optimized-routines math/pow.c; glibc's __pow_fma build of it)
// ---------------------------------------------------------------------------------------------

const POW_LN2HI = hexf('0x1.62e42fefa3800p-1');
const POW_LN2LO = hexf('0x1.ef35793c76730p-45');
const POW_A0 = hexf('-0x1.0000000000000p-1');
const POW_A1 = hexf('-0x1.5555555555560p-1');
const POW_A2 = hexf('0x1.0000000000006p-1');
const POW_A3 = hexf('0x1.999999959554ep-1');
const POW_A4 = hexf('-0x1.555555529a47ap-1');
const POW_A5 = hexf('-0x1.2495b9b4845e9p+0');
const POW_A6 = hexf('0x1.0002b8b263fc3p+0');
const SIGN_BIAS = 0x800 << 7;

let logTail = 0;
/** log(x) as hi + tail (returned hi, tail in `logTail`), x given by its bit pattern. */
function powLogInline(hx: number, lx: number): number {
  const tmpHi = (hx - 0x3fe69555) | 0;
  const i = (tmpHi >> 13) & 127;
  const k = tmpHi >> 20;
  const z = asDouble((hx - (tmpHi & 0xfff00000)) >>> 0, lx);
  const j = 3 * i;
  const invc = POW_TAB[j] as number;
  const t1 = fma(k, POW_LN2HI, POW_TAB[j + 1] as number);
  const lo1 = fma(k, POW_LN2LO, POW_TAB[j + 2] as number);
  const r = fma(z, invc, -1.0);
  const ar = r * POW_A0;
  const p1 = fma(r, POW_A2, POW_A1);
  const p3 = fma(r, POW_A4, POW_A3);
  const t2 = r + t1;
  const ar2 = r * ar;
  const lo2 = t1 - t2 + r;
  const ar3 = r * ar2;
  const lo3 = fma(ar, r, -ar2);
  const p5 = fma(r, POW_A6, POW_A5);
  const hi = t2 + ar2;
  const lo4 = t2 - hi + ar2;
  const q = fma(ar2, fma(p5, ar2, p3), p1);
  const lo = fma(ar3, q, lo1 + lo2 + lo3 + lo4);
  const y = hi + lo;
  logTail = hi - y + lo;
  return y;
}

function powExpInline(x: number, xtail: number, signBias: number): number {
  F64[0] = x;
  let abstop = ((U32[HI] as number) >>> 20) & 0x7ff;
  if (abstop - 0x3c9 < 0 || abstop - 0x3c9 >= 0x3f) {
    if (abstop - 0x3c9 < 0) {
      const one = 1.0 + x;
      return signBias !== 0 ? -one : one;
    }
    if (abstop >= 0x409) {
      if (x < 0) return signBias !== 0 ? -0.0 : 0.0;
      return signBias !== 0 ? -Infinity : Infinity;
    }
    abstop = 0;
  }
  const kd0 = fma(x, EXP_INVLN2N, EXP_SHIFT);
  F64[0] = kd0;
  const kiLo = U32[LO] as number;
  const kd = kd0 - EXP_SHIFT;
  const r = xtail + fma(kd, EXP_NEGLN2LON, fma(kd, EXP_NEGLN2HIN, x));
  const i = kiLo & 127;
  const sbHi = ((EXP_SB_HI[i] as number) + ((kiLo + signBias) << 13)) >>> 0;
  const sbLo = EXP_SB_LO[i] as number;
  const r2 = r * r;
  const tmp = fma(r2 * r2, fma(r, EXP_C5, EXP_C4), fma(fma(r, EXP_C3, EXP_C2), r2, (EXP_TAIL[i] as number) + r));
  if (abstop === 0) return powExpSpecial(tmp, sbHi, sbLo, kiLo);
  const scale = asDouble(sbHi, sbLo);
  return fma(scale, tmp, scale);
}

function powExpSpecial(tmp: number, sbHi: number, sbLo: number, kiLo: number): number {
  if ((kiLo & 0x80000000) === 0) {
    const scale = asDouble((sbHi - (1009 << 20)) >>> 0, sbLo);
    return P2_1009 * fma(scale, tmp, scale);
  }
  const hiAdj = (sbHi + (1022 << 20)) >>> 0;
  const scale = asDouble(hiAdj, sbLo);
  const st = scale * tmp;
  let y = scale + st;
  if (Math.abs(y) < 1.0) {
    const one = y < 0.0 ? -1.0 : 1.0;
    let lo = scale - y + st;
    const hi = one + y;
    lo = one - hi + y + lo;
    y = lo + hi - one;
    if (y === 0) y = (hiAdj & 0x80000000) !== 0 ? -0.0 : 0.0;
  }
  return P2_M1022 * y;
}

/** 0: not an integer, 1: odd integer, 2: even integer (y finite, non-zero). */
function checkint(y: number): number {
  if (!Number.isInteger(y)) return 0;
  if (Math.abs(y) >= 2 ** 53) return 2;
  return y % 2 === 0 ? 2 : 1;
}

/** glibc `pow(x, y)` bit for bit (FMA build); IEEE special values as glibc, no exceptions/errno. */
export function glibcPow(x: number, y: number): number {
  F64[0] = x;
  let hx = U32[HI] as number;
  let lx = U32[LO] as number;
  F64[0] = y;
  const hy = U32[HI] as number;
  let topx = hx >>> 20;
  const topy = hy >>> 20;
  let signBias = 0;
  if (topx - 1 < 0 || topx - 1 >= 0x7fe || (topy & 0x7ff) - 0x3be < 0 || (topy & 0x7ff) - 0x3be >= 0x80) {
    if (y === 0 || !Number.isFinite(y)) {
      if (y === 0) return 1.0;
      if (x === 1.0) return 1.0;
      if (x !== x || y !== y) return x + y;
      const ax = Math.abs(x);
      if (ax === 1.0) return 1.0;
      if (ax < 1.0 === y > 0) return 0.0;
      return y * y;
    }
    if (x === 0 || !Number.isFinite(x)) {
      let x2 = x * x;
      let sign = false;
      if ((x < 0 || (x === 0 && 1 / x < 0)) && checkint(y) === 1) {
        x2 = -x2;
        sign = true;
      }
      if (x === 0 && y < 0) return sign ? -Infinity : Infinity;
      return y < 0 ? 1 / x2 : x2;
    }
    if (x < 0) {
      const yint = checkint(y);
      if (yint === 0) return NaN;
      if (yint === 1) signBias = SIGN_BIAS;
      hx &= 0x7fffffff;
      topx &= 0x7ff;
    }
    const ety = topy & 0x7ff;
    if (ety - 0x3be < 0 || ety - 0x3be >= 0x80) {
      const ax = Math.abs(x);
      if (ax === 1.0) return 1.0;
      if (ety < 0x3be) return ax > 1.0 ? 1.0 + y : 1.0 - y;
      return ax > 1.0 === topy < 0x800 ? Infinity : 0.0;
    }
    if (topx === 0) {
      F64[0] = x * P2_52;
      hx = (((U32[HI] as number) & 0x7fffffff) - (52 << 20)) >>> 0;
      lx = U32[LO] as number;
    }
  }
  const lhi = powLogInline(hx, lx);
  const ltail = logTail;
  const ehi = y * lhi;
  const elo = fma(y, ltail, fma(lhi, y, -ehi));
  return powExpInline(ehi, elo, signBias);
}

// ---------------------------------------------------------------------------------------------
// CPython wrappers (Modules/mathmodule.c, Objects/floatobject.c float_pow)
// ---------------------------------------------------------------------------------------------

/** Python `math.log(x)` (one argument, float x): ValueError('math domain error') for x <= 0. */
export function pyLog(x: number): number {
  if (x !== x) return x;
  if (x <= 0) throw new Error('ValueError: math domain error');
  return glibcLog(x);
}

/** Python `math.exp(x)`: OverflowError('math range error') when the result overflows. */
export function pyExp(x: number): number {
  const r = glibcExp(x);
  if (r === Infinity && Number.isFinite(x)) throw new Error('OverflowError: math range error');
  return r;
}

/** Python `math.sqrt(x)` (IEEE sqrt is correctly rounded everywhere): ValueError for x < 0. */
export function pySqrt(x: number): number {
  if (x < 0) throw new Error('ValueError: math domain error');
  return Math.sqrt(x);
}

/**
 * Python `math.sin(x)`: ValueError('math domain error') for +-inf, NaN passes through.
 * NOT bit-exact: the value is V8's `Math.sin` (fdlibm), which differs from glibc's in the last bit
 * for a few percent of arguments (see the file header).
 */
export function pySin(x: number): number {
  if (x === Infinity || x === -Infinity) throw new Error('ValueError: math domain error');
  return Math.sin(x);
}

/**
 * Python `math.cos(x)`: ValueError('math domain error') for +-inf, NaN passes through.
 * NOT bit-exact: the value is V8's `Math.cos` (fdlibm), see {@link pySin}.
 */
export function pyCos(x: number): number {
  if (x === Infinity || x === -Infinity) throw new Error('ValueError: math domain error');
  return Math.cos(x);
}

/** Python `x ** y` for floats (CPython 3.11 float_pow special cases, then glibc pow); negative ** fractional throws. */
export function pyPow(x: number, y: number): number {
  if (y === 0) return 1.0;
  if (x !== x) return x;
  if (y !== y) return x === 1.0 ? 1.0 : y;
  if (y === Infinity || y === -Infinity) {
    const ax = Math.abs(x);
    if (ax === 1.0) return 1.0;
    if (y > 0 === ax > 1.0) return Math.abs(y);
    return 0.0;
  }
  const yOdd = Number.isInteger(y) && Math.abs(y) < 2 ** 53 && y % 2 !== 0;
  if (x === Infinity || x === -Infinity) {
    if (y > 0) return yOdd ? x : Math.abs(x);
    return yOdd ? (x < 0 ? -0.0 : 0.0) : 0.0;
  }
  if (x === 0) {
    if (y < 0) throw new Error('ZeroDivisionError: 0.0 cannot be raised to a negative power');
    return yOdd ? x : 0.0;
  }
  let negate = false;
  let base = x;
  if (base < 0) {
    if (y !== Math.floor(y)) throw new Error('pyPow: negative base with fractional exponent gives a complex result');
    base = -base;
    negate = yOdd;
  }
  if (base === 1.0) return negate ? -1.0 : 1.0;
  const r = glibcPow(base, y);
  if (r === Infinity) throw new Error("OverflowError: (34, 'Numerical result out of range')");
  return negate ? -r : r;
}

// ---------------------------------------------------------------------------------------------
// Tables: byte-identical copies of optimized-routines' __exp_data.tab, __log_data.tab and
// __pow_log_data.tab (math/exp_data.c, log_data.c, pow_log_data.c, N = 128; checked against
// optimized-routines v19.11 and master, and found byte for byte in glibc 2.36's libm.so.6).
// ---------------------------------------------------------------------------------------------

function hexWords(s: string): Uint32Array {
  const n = s.length / 8;
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = parseInt(s.slice(8 * i, 8 * i + 8), 16);
  return out;
}

function hexDoubles(s: string): Float64Array {
  const w = hexWords(s);
  const out = new Float64Array(w.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = asDouble(w[2 * i] as number, w[2 * i + 1] as number);
  return out;
}

const EXP_TAB_HEX =
  '00000000000000003ff00000000000003c9b3b4f1a88bf6e3feff63da9fb3335bc7160139cd8dc5d3fefec9a3e778061'
  + 'bc905e7a108766d13fefe315e86e7f853c8cd2523567f6133fefd9b0d3158574bc8bce8023f98efa3fefd06b29ddf6de'
  + '3c60f74e61e6c8613fefc74518759bc83c90a3e45b33d3993fefbe3ecac6f3833c979aa65d837b6d3fefb5586cf9890f'
  + '3c8eb51a92fdeffc3fefac922b7247f73c3ebe3d702f9cd13fefa3ec32d3d1a2bc6a033489906e0b3fef9b66affed31b'
  + 'bc9556522a2fbd0e3fef9301d0125b51bc5080ef8c4eea553fef8abdc06c31ccbc91c923b9d5f4163fef829aaea92de0'
  + '3c80d3e3e95c55af3fef7a98c8a58e51bc801b15eaa593483fef72b83c7d517bbc8f1ff055de323d3fef6af9388c8dea'
  + '3c8b898c3f1353bf3fef635beb6fcb75bc96d99c7611eb263fef5be084045cd43c9aecf73e3a2f603fef54873168b9aa'
  + 'bc8fe782cb86389d3fef4d5022fcd91d3c8a6f4144a6c38d3fef463b88628cd63c807a05b0e4047d3fef3f49917ddc96'
  + '3c968efde3a8a8943fef387a6e7562383c875e18f274487d3fef31ce4fb2a63f3c80472b981fe7f23fef2b4565e27cdd'
  + 'bc96b87b3f71085e3fef24dfe1f563813c82f7e16d09ab313fef1e9df51fdee1bc3d219b1a6fbffa3fef187fd0dad990'
  + '3c8b3782720c0ab43fef1285a6e4030b3c6e149289cecb8f3fef0cafa93e2f563c834d754db0abb63fef06fe0a31b715'
  + '3c864201e2ac744c3fef0170fc4cd8313c8fdd395dd3f84a3feefc08b26416ffbc86a3803b8e5b043feef6c55f929ff1'
  + 'bc924aedcc4b50683feef1a7373aa9cbbc9907f81b512d8e3feeecae6d05d866bc71d1e83e9436d23feee7db34e59ff7'
  + 'bc991919b3ce1b153feee32dc313a8e53c859f48a72a4c6d3feedea64c123422bc9312607a28698a3feeda4504ac801c'
  + 'bc58a78f4817895b3feed60a21f72e2abc7c2c9b67499a1b3feed1f5d950a8973c4363ed60c2ac113feece086061892d'
  + '3c9666093b0664ef3feeca41ed1d00573c6ecce1daa103793feec6a2b5c13cd03c93ff8e3f0f12303feec32af0d7d3de'
  + '3c7690cebb7aafb03feebfdad5362a273c931dbdeb54e0773feebcb299fddd0dbc8f94340071a38e3feeb9b2769d2ca7'
  + 'bc87deccdc93a3493feeb6daa2cf6642bc78dec6bd0f385f3feeb42b569d4f82bc861246ec7b5cf63feeb1a4ca5d920f'
  + '3c93350518fdd78e3feeaf4736b527da3c7b98b72f8a9b053feead12d497c7fd3c9063e1e21c54093feeab07dd485429'
  + '3c34c7855019c6ea3feea9268a5946b73c9432e62b64c0353feea76f15ad2148bc8ce44a6199769f3feea5e1b976dc09'
  + 'bc8c33c53bef4da83feea47eb03a5585bc845378892be9ae3feea34634ccc320bc93cedd785658583feea23882552225'
  + '3c5710aa807e19643feea155d44ca973bc93b3efbf5e22283feea09e667f3bcdbc6a12ad8734b9823feea012750bdabf'
  + 'bc6367efb86da9ee3fee9fb23c651a2fbc80dc3d54e088513fee9f7df9519484bc781f647e5a3ecf3fee9f75e8ec5f74'
  + 'bc86ee4ac08b7db03fee9f9a48a58174bc8619321e55e68a3fee9feb564267c93c909ccb5e09d4d33feea0694fde5d3f'
  + 'bc7b32dcb94da51d3feea11473eb01873c94ecfd5467c06b3feea1ed0130c1323c65ebe1abd66c553feea2f336cf4e62'
  + 'bc88a1c52fb3cf423feea427543e1a12bc9369b6f13b37343feea589994cce13bc805e843a19ff1e3feea71a4623c7ad'
  + 'bc94d450d872576e3feea8d99b4492ed3c90ad675b0e8a003feeaac7d98a66993c8db72fc1f0eab43feeace5422aa0db'
  + 'bc65b6609cc5e7ff3feeaf3216b5448c3c7bf68359f35f443feeb1ae99157736bc93091fa71e3d833feeb45b0b91ffc6'
  + 'bc5da9b88b6c1e293feeb737b0cdc5e5bc6c23f97c90b9593feeba44cbc8520fbc92434322f4f9aa3feebd829fde4e50'
  + 'bc85ca6cd7668e4b3feec0f170ca07ba3c71affc2b91ce273feec49182a3f0903c6dd235e10a73bb3feec86319e32323'
  + 'bc87c504226222633feecc667b5de5653c8b1c86e3e231d53feed09bec4a2d33bc91bbd1d3bcbb153feed503b23e255d'
  + '3c90cc319cee31d23feed99e1330b3583c8469846e735ab33feede6b5579fdbfbc82dfcd978e9db43feee36bbfd3f37a'
  + '3c8c1a7792cb33873feee89f995ad3adbc907b8f4ad1d9fa3feeee07298db666bc55c3d956dcaeba3feef3a2b84f15fb'
  + 'bc90a40e3da6f6403feef9728de5593abc68d6f438ad93343feeff76f2fb5e47bc91eee26b588a353fef05b030a1064a'
  + '3c74ffd70a5fddcd3fef0c1e904bc1d2bc91bdfbfa9298ac3fef12c25bd71e093c736eae30af0cb33fef199bdd85529c'
  + '3c8ee3325c9ffd943fef20ab5fffd07a3c84e08fd10959ac3fef27f12e57d14b3c63cdaf384e1a673fef2f6d9406e7b5'
  + '3c676b2c6c9219683fef3720dcef9069bc808a1883ccb5d23fef3f0b555dc3fabc8fad5d3ffffa6f3fef472d4a07897c'
  + 'bc900dae3875a9493fef4f87080d89f23c74a385a63d07a73fef5818dcfba487bc82919e2040220f3fef60e316c98398'
  + '3c8e5a50d5c192ac3fef69e603db32853c843a59ac016b4b3fef7321f301b460bc82d52107b43e1f3fef7c97337b9b5f'
  + 'bc892ab93b470dc93fef864614f5a1293c74b604603a88d33fef902ee78b3ff63c83c5ec519d72713fef9a51fbc74c83'
  + 'bc8ff7128fd391f03fefa4afa2a490dabc8dae98e223747d3fefaf482d8e67f13c8ec3bc41aa20083fefba1bee615a27'
  + '3c842b94c3a9eb323fefc52b376bba973c8a64a931d185ee3fefd0765b6e4540bc8e37bae43be3ed3fefdbfdad9cbe14'
  + '3c77893b4d91cd9d3fefe7c1819e90d83c5305c14160cc893feff3c22b8f71f1';
const LOG_TAB_HEX =
  '3ff734f0c3e0de9fbfd7cc7f79e690003ff713786a2ce91fbfd76feec20d00003ff6f26008fab5a0bfd713e31351e000'
  + '3ff6d1a61f138c7dbfd6b85b382878003ff6b1490bc5b4d1bfd65d55908078003ff69147332f0cbabfd602d076180000'
  + '3ff6719f18224223bfd5a8ca869090003ff6524f99a51ed9bfd54f43560350003ff63356aa8f24c4bfd4f637c36b4000'
  + '3ff614b36b9ddc14bfd49da7fda850003ff5f66452c65c4cbfd445923989a8003ff5d867b5912c4fbfd3edf439b0b800'
  + '3ff5babccb5b90debfd396ce448f70003ff59d61f2d91a78bfd3401e17bda0003ff5805612465687bfd2e9e2ef468000'
  + '3ff56397cee76bd3bfd2941b3830e0003ff54725e2a77f93bfd23ec58cda88003ff52aff42064583bfd1e9e129279000'
  + '3ff50f22dbb2bddfbfd1956d2b48f8003ff4f38f4734ded7bfd141679ab9f8003ff4d843cfde2840bfd0edd094ef9800'
  + '3ff4bd3ec078a3c8bfd09aa518db10003ff4a27fc3e0258abfd047e65263b8003ff4880524d48434bfcfeb224586f000'
  + '3ff46dce1b192d0bbfcf474a7517b0003ff453d9d3391854bfcea4443d1030003ff43a2744b4845abfce020d44e9b000'
  + '3ff420b54115f8fbbfcd60a22977f0003ff40782da3ef4b1bfccc001049590003ff3ee8f5d57fe8fbfcc202956891000'
  + '3ff3d5d9a00b4ce9bfcb81178d8110003ff3bd60c010c12bbfcae2c9ccd3d0003ff3a5242b75dab8bfca45402e129000'
  + '3ff38d22cd9fd002bfc9a877681df0003ff3755bc5847a1cbfc90c6d694830003ff35dce49ad36e2bfc87120a645c000'
  + '3ff34679984dd440bfc7d68fb41430003ff32f5cceffcb24bfc73cb83c6270003ff3187775a10d49bfc6a39a9b376000'
  + '3ff301c8373e3990bfc60b3154b7a0003ff2eb4ebb95f841bfc5737d762430003ff2d50a0219a9d1bfc4dc7b8fc23000'
  + '3ff2bef9a8b7fd2abfc4462c51d200003ff2a91c7a0c1babbfc3b08abc8300003ff293726014b530bfc31b996b490000'
  + '3ff27dfa5757a1f5bfc2875490a440003ff268b39b1d3bbfbfc1f3b9f879a0003ff2539d838ff5bdbfc160c8252ca000'
  + '3ff23eb7aac9083bbfc0ce7f57f720003ff22a012ba940b6bfc03cdc49fea0003ff2157996cc4132bfbf57bdbc4b8000'
  + '3ff201201dd2fc9bbfbe3708964040003ff1ecf4494d480bbfbd17983ef940003ff1d8f5528f6569bfbbf9674ed8a000'
  + '3ff1c52311577e7cbfbadc79202f60003ff1b17c74cb26e9bfb9c0c3e72880003ff19e010c2c1ab6bfb8a646b372c000'
  + '3ff18ab07bb670bdbfb78d01b3ac00003ff1778a25efbcb6bfb674f1453800003ff1648d354c31dabfb55e0e6d878000'
  + '3ff151b990275fddbfb4485cdea1e0003ff13f0ea432d24cbfb333d94d6aa0003ff12c8b7210f9dabfb22079f8c56000'
  + '3ff11a3028ecb531bfb10e46986220003ff107fbda8434afbfaffa6c6ad200003ff0f5ee0f4e6bb3bfadda8d4a774000'
  + '3ff0e4065d2a9fcebfabbcece48500003ff0d244632ca521bfa9a1894012c0003ff0c0a77ce2981abfa788583302c000'
  + '3ff0af2f83c636d1bfa5715e67d680003ff09ddb98a01339bfa35c8a496580003ff08cabaf52e7dfbfa149e364154000'
  + '3ff07b9f2f4e28fbbf9e72c082eb80003ff06ab58c358f19bf9a55f1525280003ff059eea5ecf92cbf963d62cf818000'
  + '3ff04949cdd12c90bf9228fb8caa00003ff038c6c6f0ada9bf8c317b20f900003ff02865137932a9bf8419355daa0000'
  + '3ff0182427ea7348bf781203c2ec00003ff008040614b195bf600409792400003fefe01ff726fa1a3f6feff384900000'
  + '3fefa11cc261ea743f87dc41353d00003fef6310b081992e3f93cea3c4c280003fef25f63ceeadcd3f9b9fc114890000'
  + '3feee9c8039113e73fa1b0d8ce1100003feeae8078cbb1ab3fa58a5bd001c0003fee741aa29d0c9b3fa95c8340d88000'
  + '3fee3a91830a99b53fad276aef5780003fee01e009609a563fb07598e598c0003fedca01e577bb983fb253f5e30d2000'
  + '3fed92f20b7c91033fb42edd8b3800003fed5cac66fb5cce3fb606598757c0003fed272caa5ede9d3fb7da76356a0000'
  + '3fecf26e3e6b2ccd3fb9ab434e1c60003fecbe6da2a779023fbb78c7bb0d60003fec8b266d37086d3fbd431332e72000'
  + '3fec5894bd5d58043fbf0a3171de60003fec26b533bb9f8c3fc067152b9140003febf583eeece73f3fc147858292b000'
  + '3febc4fd75db96c13fc2266ecdca30003feb951e0c864a283fc303d7a6c550003feb65e2c5ef3e2c3fc3dfc33c331000'
  + '3feb374867c9888b3fc4ba366b7a80003feb094b211d304a3fc5933928d1f0003feadbe885f2ef7e3fc66acd2418f000'
  + '3feaaf1d31603da23fc740f8ec6690003fea82e63fd358a73fc815c0f51af0003fea5740ef09738b3fc8e92954f68000'
  + '3fea2c2a90ab4b273fc9bb3602f840003fea01a01393f2d13fca8bed1c2c00003fe9d79f24db3c1b3fcb5b515c01d000'
  + '3fe9ae2505c7b1903fcc2967ccbcc0003fe9852ef297ce2f3fccf635d54860003fe95cbaeea44b753fcdc1bd3446c000'
  + '3fe934c69de748383fce8c01b8cfe0003fe90d4f2f6752e63fcf5509c01790003fe8e6528effd79d3fd00e6c121fb800'
  + '3fe8bfce9fcc007c3fd071b80e93d0003fe899c0dabec30e3fd0d46b9e8670003fe87427aa2317fb3fd13687334bd000'
  + '3fe84f00acb39a083fd1980d672348003fe82a49e8653e553fd1f8ffe0cc80003fe8060195f402603fd2595fd7636800'
  + '3fe7e22563e0a3293fd2b9300914a8003fe7beb377dcb5ad3fd31872104360003fe79baa679725c23fd377266dec1800'
  + '3fe77907f21706573fd3d54ffbaf30003fe756cadbd6130c3fd432eee32fe000';
const POW_TAB_HEX =
  '3ff6a00000000000bfd62c82f2b9c8003cfab424283756803ff6800000000000bfd5d1bdbf580800bd1ca508d8e0f720'
  + '3ff6600000000000bfd5767717455800bd2362a4d5b6506d3ff6400000000000bfd51aad872df800bce684e49eb067d5'
  + '3ff6200000000000bfd4be5f95777800bd041b6993293ee03ff6000000000000bfd4618bc21c60003d13d82f484c84cc'
  + '3ff5e00000000000bfd404308686a8003cdc42f3ed820b3a3ff5c00000000000bfd3a64c556948003d20b1c686519460'
  + '3ff5a00000000000bfd347dd9a9880003d25594dd4c580923ff5800000000000bfd2e8e2bae120003d267b1e99b72bd8'
  + '3ff5600000000000bfd2895a13de88003d15ca14b6cfb03f3ff5600000000000bfd2895a13de88003d15ca14b6cfb03f'
  + '3ff5400000000000bfd22941fbcf7800bd165a242853da763ff5200000000000bfd1c898c1699800bd1fafbc68e75404'
  + '3ff5000000000000bfd1675cababa8003d1f1fc63382a8f03ff4e00000000000bfd1058bf9ae4800bd26a8c4fd055a66'
  + '3ff4c00000000000bfd0a324e2739000bd0c6bee7ef4030e3ff4a00000000000bfd0402594b4d000bcf036b89ef42d7f'
  + '3ff4a00000000000bfd0402594b4d000bcf036b89ef42d7f3ff4800000000000bfcfb9186d5e40003d0d572aab993c87'
  + '3ff4600000000000bfcef0adcbdc60003d2b26b79c86af243ff4400000000000bfce27076e2af000bd172f4f543fff10'
  + '3ff4200000000000bfcd5c216b4fc0003d21ba91bbca681b3ff4000000000000bfcc8ff7c79aa0003d27794f689f8434'
  + '3ff4000000000000bfcc8ff7c79aa0003d27794f689f84343ff3e00000000000bfcbc286742d90003d194eb0318bb78f'
  + '3ff3c00000000000bfcaf3c94e80c0003cba4e633fcd90663ff3a00000000000bfca23bc1fe2b000bd258c64dc46c1ea'
  + '3ff3a00000000000bfca23bc1fe2b000bd258c64dc46c1ea3ff3800000000000bfc9525a9cf45000bd2ad1d904c1d4e3'
  + '3ff3600000000000bfc87fa06520d0003d2bbdbf7fdbfa093ff3400000000000bfc7ab890210e0003d2bdb9072534a58'
  + '3ff3400000000000bfc7ab890210e0003d2bdb9072534a583ff3200000000000bfc6d60fe719d000bd10e46aa3b2e266'
  + '3ff3000000000000bfc5ff3070a79000bd1e9e439f1050393ff3000000000000bfc5ff3070a79000bd1e9e439f105039'
  + '3ff2e00000000000bfc526e5e3a1b000bd20de8b90075b8f3ff2c00000000000bfc44d2b6ccb80003d170cc16135783c'
  + '3ff2c00000000000bfc44d2b6ccb80003d170cc16135783c3ff2a00000000000bfc371fc201e90003cf178864d27543a'
  + '3ff2800000000000bfc29552f81ff000bd248d301771c4083ff2600000000000bfc1b72ad52f6000bd2e80a41811a396'
  + '3ff2600000000000bfc1b72ad52f6000bd2e80a41811a3963ff2400000000000bfc0d77e7cd090003d0a699688e85bf4'
  + '3ff2400000000000bfc0d77e7cd090003d0a699688e85bf43ff2200000000000bfbfec9131dbe000bd2575545ca333f2'
  + '3ff2000000000000bfbe27076e2b00003d2a342c2af0003c3ff2000000000000bfbe27076e2b00003d2a342c2af0003c'
  + '3ff1e00000000000bfbc5e548f5bc000bd1d0c57585fbe063ff1c00000000000bfba926d3a4ae0003d253935e85baac8'
  + '3ff1c00000000000bfba926d3a4ae0003d253935e85baac83ff1a00000000000bfb8c345d631a0003d137c294d2f5668'
  + '3ff1a00000000000bfb8c345d631a0003d137c294d2f56683ff1800000000000bfb6f0d28ae56000bd269737c93373da'
  + '3ff1600000000000bfb51b073f0620003d1f025b61c65e573ff1600000000000bfb51b073f0620003d1f025b61c65e57'
  + '3ff1400000000000bfb341d7961be0003d2c5edaccf913df3ff1400000000000bfb341d7961be0003d2c5edaccf913df'
  + '3ff1200000000000bfb16536eea380003d147c5e768fa3093ff1000000000000bfaf0a30c01180003d2d599e83368e91'
  + '3ff1000000000000bfaf0a30c01180003d2d599e83368e913ff0e00000000000bfab42dd711980003d1c827ae5d6704c'
  + '3ff0e00000000000bfab42dd711980003d1c827ae5d6704c3ff0c00000000000bfa77458f632c000bd2cfc4634f2a1ee'
  + '3ff0c00000000000bfa77458f632c000bd2cfc4634f2a1ee3ff0a00000000000bfa39e87b9fec0003cf502b7f526feaa'
  + '3ff0a00000000000bfa39e87b9fec0003cf502b7f526feaa3ff0800000000000bf9f829b0e780000bd2980267c7e09e4'
  + '3ff0800000000000bf9f829b0e780000bd2980267c7e09e43ff0600000000000bf97b91b07d58000bd288d5493faa639'
  + '3ff0400000000000bf8fc0a8b0fc0000bcdf1e7cf6d3a69c3ff0400000000000bf8fc0a8b0fc0000bcdf1e7cf6d3a69c'
  + '3ff0200000000000bf7fe02a6b100000bd19e23f0dda40e43ff0200000000000bf7fe02a6b100000bd19e23f0dda40e4'
  + '3ff0000000000000000000000000000000000000000000003ff000000000000000000000000000000000000000000000'
  + '3fefc000000000003f80101575890000bd10c76b999d2be83fef8000000000003f90205658938000bd23dc5b06e2f7d2'
  + '3fef4000000000003f98492528c90000bd2aa0ba325a0c343fef0000000000003fa0415d89e740003d0111c05cf1d753'
  + '3feec000000000003fa466aed42e0000bd2c167375bdfd283fee8000000000003fa894aa149fc000bd197995d05a267d'
  + '3fee4000000000003faccb73cdddc000bd1a68f247d828073fee2000000000003faeea31c006c000bd0e113e4fc93b7b'
  + '3fede000000000003fb1973bd1466000bd25325d560d9e9b3feda000000000003fb3bdf5a7d1e0003d2cc85ea5db4ed7'
  + '3fed6000000000003fb5e95a4d97a000bd2c69063c5d1d1e3fed4000000000003fb700d30aeac0003cec1e8da99ded32'
  + '3fed0000000000003fb9335e5d5940003d23115c3abd47da3fecc000000000003fbb6ac88dad6000bd1390802bf768e5'
  + '3feca000000000003fbc885801bc40003d2646d1c65aacd33fec6000000000003fbec739830a2000bd2dc068afe645e0'
  + '3fec4000000000003fbfe89139dbe000bd2534d64fa10afd3fec0000000000003fc1178e8227e0003d21ef78ce2d07f2'
  + '3febe000000000003fc1aa2b7e23f0003d2ca78e443899343feba000000000003fc2d1610c8680003d039d6ccb81b4a1'
  + '3feb8000000000003fc365fcb01590003cc62fa8234b72893feb4000000000003fc4913d8333b0003d25837954fdb678'
  + '3feb2000000000003fc527e5e4a1b0003d2633e8e5697dc73feae000000000003fc6574ebe8c10003d19cf8b2c3c2e78'
  + '3feac000000000003fc6f0128b757000bd25118de59c21e13feaa000000000003fc7898d85445000bd1c661070914305'
  + '3fea6000000000003fc8beafeb390000bd073d54aae92cd13fea4000000000003fc95a5adcf700003d07f22858a0ff6f'
  + '3fea0000000000003fca93ed3c8ae000bd287243505621693fe9e000000000003fcb31d8575bd000bd0c358d4eace1aa'
  + '3fe9c000000000003fcbd087383be000bd2d4bc4595412b63fe9a000000000003fcc6ffbc6f01000bcf1ec72c5962bd2'
  + '3fe96000000000003fcdb13db0d49000bd2aff2af715b0353fe94000000000003fce530effe710003cc212276041f430'
  + '3fe92000000000003fcef5ade4dd0000bcca211565bb8e113fe90000000000003fcf991c6cb3b0003d1bcbecca0cdf30'
  + '3fe8c000000000003fd07138604d58003cf89cdb16ed4e913fe8a000000000003fd0c42d676160003d27188b163ceae9'
  + '3fe88000000000003fd1178e8227e800bd2c210e63a5f01c3fe86000000000003fd16b5ccbacf8003d2b9acdf7a51681'
  + '3fe84000000000003fd1bf99635a68003d2ca6ed5147bdb73fe82000000000003fd214456d0eb8003d0a87deba46baea'
  + '3fe7e000000000003fd2bef07cdc90003d2a9cfa4a5004f43fe7c000000000003fd314f1e1d36000bd28e27ad3213cb8'
  + '3fe7a000000000003fd36b6776be10003d116ecdb0f177c83fe78000000000003fd3c252773330003d183b54b606bd5c'
  + '3fe76000000000003fd419b423d5e8003d08e436ec90e09d3fe74000000000003fd4718dc271c800bd2f27ce0967d675'
  + '3fe72000000000003fd4c9e09e173000bd2e20891b0ad8a43fe70000000000003fd522ae0738a0003d2ebe708164c759'
  + '3fe6e000000000003fd57bf753c8d0003d1fadedee5d40ef3fe6c000000000003fd5d5bddf596000bd0a0b2a08a465dc';

const EXP_WORDS = hexWords(EXP_TAB_HEX);
const EXP_TAIL = new Float64Array(128);
const EXP_SB_HI = new Uint32Array(128);
const EXP_SB_LO = new Uint32Array(128);
for (let i = 0; i < 128; i++) {
  EXP_TAIL[i] = asDouble(EXP_WORDS[4 * i] as number, EXP_WORDS[4 * i + 1] as number);
  EXP_SB_HI[i] = EXP_WORDS[4 * i + 2] as number;
  EXP_SB_LO[i] = EXP_WORDS[4 * i + 3] as number;
}
const LOG_PAIRS = hexDoubles(LOG_TAB_HEX);
const LOG_INVC = new Float64Array(128);
const LOG_LOGC = new Float64Array(128);
for (let i = 0; i < 128; i++) {
  LOG_INVC[i] = LOG_PAIRS[2 * i] as number;
  LOG_LOGC[i] = LOG_PAIRS[2 * i + 1] as number;
}
/** invc, logc, logctail triples. */
const POW_TAB = hexDoubles(POW_TAB_HEX);
