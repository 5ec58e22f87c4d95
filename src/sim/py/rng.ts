/**
 * Bit-exact port of CPython 3.11's `random.Random` (Mersenne Twister MT19937).
 *
 * Seeding reproduces `_randommodule.c` (`init_genrand(19650218)` + `init_by_array(key)`), the
 * uniform/integer methods reproduce `Lib/random.py` line by line, and log/exp/pow go through
 * ./pymath.ts (bit-exact ports of the ARM optimized-routines code glibc uses) instead of V8's
 * Math.log/exp/pow, which disagree with glibc in the last bit for several percent of arguments.
 * Exception: `gauss` needs sin/cos, which are V8's (within 1 ulp of glibc, last bit different for ~3%
 * of arguments; see ./pymath.ts), so gauss() values are not always bit-identical to CPython's; every
 * other method is.
 *
 * Determinism: no Math.random, no clock. A generator's whole state is plain JSON ({@link PyRandomState}).
 */

import { createHash } from 'node:crypto';
import { sha256Utf8Words } from './sha256.js';
import { pyCos, pyExp, pyLog, pyPow, pySin, pySqrt } from './pymath.js';
import { pyRepr, pyRound } from './pyfloat.js';
import { SIMD_STREAMS, simdSeeder } from './mt-simd.js';

const N = 624;
const M = 397;
const MATRIX_A = 0x9908b0df | 0;
const UPPER_MASK = 0x80000000 | 0;
const LOWER_MASK = 0x7fffffff;

/** Python's `random` module constants, computed exactly as CPython does (glibc-exact log/exp). */
export const TWOPI = 6.283185307179586; // math.tau
/** math.e */
export const E = 2.718281828459045;
/** NV_MAGICCONST = 4 * exp(-0.5) / sqrt(2.0) */
export const NV_MAGICCONST: number = (4 * pyExp(-0.5)) / Math.sqrt(2.0);
/** LOG4 = log(4.0) */
export const LOG4: number = pyLog(4.0);
/** SG_MAGICCONST = 1.0 + log(4.5) */
export const SG_MAGICCONST: number = 1.0 + pyLog(4.5);

/**
 * The relative margin within which a value of {@link PyRandom.betavariateRounded4} computed with V8's `Math.log` /
 * `Math.exp` is taken to match the exact (glibc) one: 2^-36, 128 times the bound derived there.
 */
export const FAST_REL = 2 ** -36;

/**
 * One round of Cheng's algorithm in `gammavariate(alpha, beta)` (alpha > 1) with its draws u1 (in range) and u2: the
 * round's x (the gamma variate over beta) when it accepts, NaN when it rejects.
 */
function chengRound(alpha: number, u1: number, u2: number): number {
  const ainv = pySqrt(2.0 * alpha - 1.0);
  const bbb = alpha - LOG4;
  const ccc = alpha + ainv;
  const v = pyLog(u1 / (1.0 - u1)) / ainv;
  const x = alpha * pyExp(v);
  const z = u1 * u1 * u2;
  const r = bbb + ccc * v - x;
  return r + SG_MAGICCONST - 4.5 * z >= 0.0 || r >= pyLog(z) ? x : NaN;
}

/** `gammavariate(alpha, 1.0)`'s value (alpha > 1; `x * 1.0` is x) for the round it accepted with `u1`, computed as it does. */
function chengX(alpha: number, u1: number): number {
  return alpha * pyExp(pyLog(u1 / (1.0 - u1)) / pySqrt(2.0 * alpha - 1.0));
}

/** JSON snapshot of a {@link PyRandom}: the lazily twisted MT state ([index, ...624 words], uint32) plus gauss_next. */
export interface PyRandomState {
  /**
   * [index, ...624 state words] in the lazily twisted layout pure-rand's mersenne generator uses (the format of
   * snapshots taken when this ran on pure-rand), NOT CPython's getstate().
   */
  mt: number[];
  /** CPython's cached second Box-Muller deviate (`Random.gauss_next`), or null. */
  gaussNext: number | null;
}

/** Split a non-negative integer into 32-bit words, least significant first (CPython's seed key; 0 -> [0]). */
export function seedKey(seed: number | bigint | string): number[] {
  let n = seedToBigInt(seed);
  if (n < 0n) n = -n; // CPython seeds with abs(n)
  const key: number[] = [];
  while (n > 0n) {
    key.push(Number(n & 0xffffffffn));
    n >>= 32n;
  }
  if (key.length === 0) key.push(0);
  return key;
}

/** CPython's int seed for `random.Random(seed)`: ints as-is, str via version-2 sha512 expansion. */
function seedToBigInt(seed: number | bigint | string): bigint {
  if (typeof seed === 'bigint') return seed;
  if (typeof seed === 'number') {
    if (!Number.isInteger(seed)) throw new Error(`PyRandom: only integer (or str) seeds are supported, got ${seed}`);
    return BigInt(seed);
  }
  // version 2: a = int.from_bytes(a.encode() + sha512(a.encode()).digest(), 'big')
  const bytes = Buffer.from(seed, 'utf8');
  const all = Buffer.concat([bytes, createHash('sha512').update(bytes).digest()]);
  return BigInt(`0x${all.toString('hex')}`);
}

/** CPython `init_genrand(19650218)`: the constant starting point of every `init_by_array`. */
const INIT_GENRAND: Int32Array = (() => {
  const mt = new Int32Array(N);
  let prev = 19650218;
  mt[0] = prev;
  for (let i = 1; i < N; i++) {
    prev = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) | 0;
    mt[i] = prev;
  }
  return mt;
})();

/** CPython `init_by_array(init_genrand(19650218), key)` followed by one full MT twist: the 624 words of the first output block. */
export function mtStateFromKey(key: readonly number[]): Uint32Array {
  const mt = seedMtState(key, new Int32Array(N));
  twistBlock(mt);
  return new Uint32Array(mt.buffer);
}

/**
 * CPython `init_by_array(init_genrand(19650218), key)` into `mt` (Int32Array keeps words small integers for V8; bit
 * patterns are identical): the state CPython twists on its first draw. The word just written is carried in a local
 * (`prev`) instead of being read back: the seeding of ~200 streams per generated world is the largest cost of a fresh
 * world. The twist is left to the generator (lazily, one word per draw; see {@link Mt19937}).
 */
function seedMtState(key: readonly number[], mt: Int32Array): Int32Array {
  const klen = key.length;
  if (klen > 2) return seedMtStateLong(key, mt);
  // Keys of one or two words (every seed below 2^64, every stream): init_by_array's first loop is N steps, i = 1..N-1
  // reading init_genrand's words, then one more at i = 1 after the wrap. `key[j] + j` is added as one int32
  // (addition mod 2^32 is associative): a0 at odd i (j = 0), a1 at even i and at the wrap step (j = 1 when klen = 2).
  const a0 = (key[0] as number) | 0;
  const a1 = klen === 2 ? ((key[1] as number) + 1) | 0 : a0;
  const init = INIT_GENRAND;
  let prev = init[0] as number;
  for (let i = 1; i < N; i++) {
    prev = (((init[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + (i & 1 ? a0 : a1)) | 0;
    mt[i] = prev;
  }
  prev = (((mt[1] as number) ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + a1) | 0;
  mt[1] = prev;
  // Second loop: N - 1 steps from i = 2, the last one at i = 1 after the wrap.
  for (let i = 2; i < N; i++) {
    prev = (((mt[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i) | 0;
    mt[i] = prev;
  }
  mt[1] = (((mt[1] as number) ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - 1) | 0;
  mt[0] = UPPER_MASK;
  return mt;
}

/**
 * {@link seedMtState} of two keys into two buffers, the two streams' steps interleaved in one pass. Each stream's
 * seeding is two dependent chains of N steps (a multiply, shifts and xors each, latency-bound); two independent chains
 * side by side keep the CPU's other units busy, so a pair costs about 1.3 times one stream instead of 2 (micro
 * benchmark: 2.4 us per stream alone, 1.6 us per stream in pairs). The steps are {@link seedMtState}'s, word for word;
 * keys of more than two words go to it one at a time. test/unit/rng.test.ts compares both states with single seeding.
 */
function seedMtStatePair(keyA: readonly number[], mtA: Int32Array, keyB: readonly number[], mtB: Int32Array): void {
  if (keyA.length > 2 || keyB.length > 2) {
    seedMtState(keyA, mtA);
    seedMtState(keyB, mtB);
    return;
  }
  const a0 = (keyA[0] as number) | 0;
  const a1 = keyA.length === 2 ? ((keyA[1] as number) + 1) | 0 : a0;
  const b0 = (keyB[0] as number) | 0;
  const b1 = keyB.length === 2 ? ((keyB[1] as number) + 1) | 0 : b0;
  const init = INIT_GENRAND;
  let p = init[0] as number;
  let q = p;
  for (let i = 1; i < N; i++) {
    const x = init[i] as number;
    const odd = i & 1;
    p = ((x ^ Math.imul(p ^ (p >>> 30), 1664525)) + (odd ? a0 : a1)) | 0;
    mtA[i] = p;
    q = ((x ^ Math.imul(q ^ (q >>> 30), 1664525)) + (odd ? b0 : b1)) | 0;
    mtB[i] = q;
  }
  p = (((mtA[1] as number) ^ Math.imul(p ^ (p >>> 30), 1664525)) + a1) | 0;
  mtA[1] = p;
  q = (((mtB[1] as number) ^ Math.imul(q ^ (q >>> 30), 1664525)) + b1) | 0;
  mtB[1] = q;
  for (let i = 2; i < N; i++) {
    p = (((mtA[i] as number) ^ Math.imul(p ^ (p >>> 30), 1566083941)) - i) | 0;
    mtA[i] = p;
    q = (((mtB[i] as number) ^ Math.imul(q ^ (q >>> 30), 1566083941)) - i) | 0;
    mtB[i] = q;
  }
  mtA[1] = (((mtA[1] as number) ^ Math.imul(p ^ (p >>> 30), 1566083941)) - 1) | 0;
  mtA[0] = UPPER_MASK;
  mtB[1] = (((mtB[1] as number) ^ Math.imul(q ^ (q >>> 30), 1566083941)) - 1) | 0;
  mtB[0] = UPPER_MASK;
}

let simdSeeding = true;

/**
 * For tests and benchmarks: whether {@link seedMtStates} (and so {@link StreamSequence}) may use the WebAssembly SIMD
 * seeder (default true; it is used only where it could be compiled). Returns the previous setting.
 */
export function useSimdSeeding(on: boolean): boolean {
  const was = simdSeeding;
  simdSeeding = on;
  return was;
}

/** How many streams {@link seedMtStates} seeds together: {@link SIMD_STREAMS} with the SIMD seeder, else 2 (pairs). */
function seedingGroup(): number {
  return simdSeeding && simdSeeder() !== null ? SIMD_STREAMS : 2;
}

/**
 * {@link seedMtState} of `keys[k]` into `mts[k]` for k < n: groups of three to {@link SIMD_STREAMS} keys of one or two
 * words go to the WebAssembly SIMD seeder (./mt-simd.ts: 8 streams in about the time of 2 in pairs) where it is
 * available, the rest in pairs ({@link seedMtStatePair}) or alone. Every state is the one seedMtState writes.
 */
export function seedMtStates(keys: readonly (readonly number[])[], mts: readonly Int32Array[], n: number): void {
  const simd = simdSeeding ? simdSeeder() : null;
  let k = 0;
  while (k < n) {
    const m = Math.min(n - k, simd !== null ? SIMD_STREAMS : 2);
    let short = true;
    for (let j = k; j < k + m; j++) if ((keys[j] as readonly number[]).length > 2) short = false;
    if (simd !== null && m >= 3 && short) simd.seed(keys, mts, k, k + m);
    else if (m >= 2) {
      seedMtStatePair(keys[k] as readonly number[], mts[k] as Int32Array, keys[k + 1] as readonly number[], mts[k + 1] as Int32Array);
      k += 2;
      continue;
    } else seedMtState(keys[k] as readonly number[], mts[k] as Int32Array);
    k += m;
  }
}

/**
 * The states of `stream(runSeed, keys[k])` into `mts[k]` for k < n: with the SIMD seeder, groups of three to
 * {@link SIMD_STREAMS} whose texts `"{runSeed}:{key}"` are ASCII and at most 55 characters are hashed and seeded in the
 * WebAssembly module; the rest through {@link streamKey} (SHA-256 in JavaScript) and {@link seedMtStates}.
 */
function seedStreamStates(runSeed: number | bigint | string, keys: readonly string[], mts: readonly Int32Array[], n: number): void {
  const simd = simdSeeding ? simdSeeder() : null;
  let k = 0;
  if (simd !== null && n >= 3) {
    const texts: string[] = [];
    for (let j = 0; j < n; j++) texts.push(streamText(runSeed, keys[j] as string));
    while (n - k >= 3 && simd.seedTexts(texts, mts, k, k + Math.min(SIMD_STREAMS, n - k))) k += Math.min(SIMD_STREAMS, n - k);
  }
  if (k === n) return;
  const rest: number[][] = [];
  for (let j = k; j < n; j++) rest.push(streamKey(runSeed, keys[j] as string));
  seedMtStates(rest, k === 0 ? mts : mts.slice(k), n - k);
}

/** {@link seedMtState} for keys of any length (CPython's loops as written). */
function seedMtStateLong(key: readonly number[], mt: Int32Array): Int32Array {
  mt.set(INIT_GENRAND);
  const klen = key.length;
  let i = 1;
  let j = 0;
  let prev = mt[0] as number;
  for (let k = N > klen ? N : klen; k > 0; k--) {
    // | 0 keeps every intermediate an int32 (arithmetic mod 2^32, like CPython's `&= 0xffffffff`).
    prev = (((((mt[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + (key[j] as number)) | 0) + j) | 0;
    mt[i] = prev;
    i++;
    j++;
    if (i >= N) {
      mt[0] = prev;
      i = 1;
    }
    if (j >= klen) j = 0;
  }
  prev = mt[i - 1] as number;
  for (let k = N - 1; k > 0; k--) {
    prev = (((mt[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i) | 0;
    mt[i] = prev;
    i++;
    if (i >= N) {
      mt[0] = prev;
      i = 1;
    }
  }
  mt[0] = UPPER_MASK;
  return mt;
}

/** CPython's whole-block twist (genrand_uint32 at index N), in place; the conditional XOR is branch-free. */
function twistBlock(mt: Int32Array): void {
  let kk = 0;
  let y: number;
  let cur = mt[0] as number;
  for (; kk < N - M; kk++) {
    const next = mt[kk + 1] as number;
    y = (cur & UPPER_MASK) | (next & LOWER_MASK);
    mt[kk] = (mt[kk + M] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
    cur = next;
  }
  for (; kk < N - 1; kk++) {
    const next = mt[kk + 1] as number;
    y = (cur & UPPER_MASK) | (next & LOWER_MASK);
    mt[kk] = (mt[kk + M - N] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
    cur = next;
  }
  y = ((mt[N - 1] as number) & UPPER_MASK) | ((mt[0] as number) & LOWER_MASK);
  mt[N - 1] = (mt[M - 1] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
}

/**
 * Word `i` of CPython's block twist, in place, given that words `0..i-1` are already twisted and words `i..N-1` are
 * not (the order {@link twistBlock} goes in): returns the new word. In pure-rand's layout (slots `i..N-1` the current
 * block, `0..i-1` the next one) the same step advances slot `i` into the next block.
 */
function twistWordInOrder(mt: Int32Array, i: number): number {
  let y: number;
  let w: number;
  if (i < N - M) {
    y = ((mt[i] as number) & UPPER_MASK) | ((mt[i + 1] as number) & LOWER_MASK);
    w = (mt[i + M] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
  } else if (i < N - 1) {
    y = ((mt[i] as number) & UPPER_MASK) | ((mt[i + 1] as number) & LOWER_MASK);
    w = (mt[i + M - N] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
  } else {
    y = ((mt[N - 1] as number) & UPPER_MASK) | ((mt[0] as number) & LOWER_MASK);
    w = (mt[M - 1] as number) ^ (y >>> 1) ^ (-(y & 1) & MATRIX_A);
  }
  mt[i] = w;
  return w;
}

/** The text `f"{runSeed}:{key}"` the reference hashes (ints in decimal, floats as repr). */
function streamText(runSeed: number | bigint | string, key: string): string {
  let s: string;
  if (typeof runSeed === 'number') {
    // String() of a safe integer is its plain decimal digits (and "0" for -0, like int(-0.0))
    if (Number.isSafeInteger(runSeed)) s = String(runSeed);
    else s = Number.isInteger(runSeed) ? BigInt(runSeed).toString() : pyRepr(runSeed);
  } else s = runSeed.toString();
  return `${s}:${key}`;
}

/** `int.from_bytes(sha256(f"{runSeed}:{key}".encode()).digest()[:8], "big")` */
export function streamSeed(runSeed: number | bigint | string, key: string): bigint {
  const h = sha256Utf8Words(streamText(runSeed, key));
  return (BigInt((h[0] as number) >>> 0) << 32n) | BigInt((h[1] as number) >>> 0);
}

/** The {@link seedKey} words of `streamSeed(runSeed, key)`, straight from the digest (no bigint round trip). */
function streamKey(runSeed: number | bigint | string, key: string): number[] {
  const h = sha256Utf8Words(streamText(runSeed, key));
  const hi = (h[0] as number) >>> 0;
  const lo = (h[1] as number) >>> 0;
  // least significant word first, no leading zero word ([0] for 0)
  return hi !== 0 ? [lo, hi] : [lo];
}

/** `random.Random(streamSeed(runSeed, key))` */
export function stream(runSeed: number | bigint | string, key: string): PyRandom {
  return new PyRandom({ seedKey: streamKey(runSeed, key) });
}

/**
 * `stream(runSeed, key)`, reusing `prev`'s state buffer when given (see {@link PyRandom.reseedStream}): for loops that
 * draw from one stream per item and drop it before the next.
 */
export function restream(prev: PyRandom | null, runSeed: number | bigint | string, key: string): PyRandom {
  return prev === null ? stream(runSeed, key) : prev.reseedStream(runSeed, key);
}

/**
 * The streams `stream(runSeed, prefix + i)` for i = 1, 2, ..., count, handed out in order by {@link next}: seeded a
 * group at a time ({@link PyRandom.reseedStreams}: 8 in WebAssembly SIMD where available, else pairs) into reused
 * generators. A stream handed out is valid until the next call (its buffer may then be reseeded), for loops that draw
 * from one stream per item and drop it before the next.
 */
export class StreamSequence {
  private readonly gens: PyRandom[] = [];
  private readonly keys: string[] = [];
  private readonly group = seedingGroup();
  private spare: PyRandom | null = null;
  private i = 0;

  constructor(
    private readonly runSeed: number | bigint | string,
    private readonly prefix: string,
    private readonly count: number,
  ) {}

  /** `stream(runSeed, prefix + i)` for the next i (1 first); past `count`, one at a time. */
  next(): PyRandom {
    const i = ++this.i;
    if (i > this.count) return (this.spare = restream(this.spare, this.runSeed, this.prefix + String(i)));
    const slot = (i - 1) % this.group;
    if (slot === 0) {
      const n = Math.min(this.group, this.count - i + 1);
      for (let k = 0; k < n; k++) this.keys[k] = this.prefix + String(i + k);
      PyRandom.reseedStreams(this.gens, this.runSeed, this.keys, n);
    }
    return this.gens[slot] as PyRandom;
  }
}

/** Number of bits of a non-negative integer n <= 2^53 (Python's int.bit_length()). */
function bitLength(n: number): number {
  if (n < 4294967296) return 32 - Math.clz32(n);
  return 64 - Math.clz32(Math.floor(n / 4294967296));
}

/** Python's bisect.bisect_right(a, x, lo, hi). */
function bisectRight(a: readonly number[], x: number, lo: number, hi: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x < (a[mid] as number)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * MT19937 with a lazy twist: `next()` tempers word `index`, then twists that slot into its value of the next block
 * (so the state is always "the words still to output, then the next block's words already twisted"). This is
 * pure-rand's mersenne layout, kept so snapshots stay the same; the words live in an Int32Array (signed, same bits).
 *
 * A freshly seeded generator (`fresh`) is lazier still: its words are CPython's seeded state, not yet twisted, and
 * each draw twists just the word it outputs (CPython's in-order block twist, one word at a time), so a stream that
 * draws a handful of words never pays for the other ~620. At the end of that first block, or when a snapshot is
 * taken ({@link settle}), it switches to the layout above; the output sequence is the same either way.
 */
class Mt19937 {
  constructor(
    readonly words: Int32Array,
    public index: number,
    /** Words `index..N-1` are the seeded state, words `0..index-1` the first block's (already output). */
    public fresh: boolean,
  ) {}

  /** Next tempered 32-bit output as a signed int32 (callers take `>>> 0` or `>>> k`). */
  next(): number {
    const mt = this.words;
    const i = this.index;
    let y: number;
    if (this.fresh) {
      y = twistWordInOrder(mt, i);
      if (i === N - 1) {
        // the first block is out: twist the second, and go on in the pure-rand layout at index 0
        twistBlock(mt);
        this.fresh = false;
        this.index = 0;
      } else this.index = i + 1;
    } else {
      y = mt[i] as number;
      twistWordInOrder(mt, i);
      this.index = i === N - 1 ? 0 : i + 1;
    }
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y;
  }

  /** Switch a fresh generator to the pure-rand layout (same output from here on): finish the block, advance slots 0..index-1. */
  settle(): void {
    if (!this.fresh) return;
    const mt = this.words;
    for (let k = this.index; k < N; k++) twistWordInOrder(mt, k);
    for (let k = 0; k < this.index; k++) twistWordInOrder(mt, k);
    this.fresh = false;
  }
}

/** CPython 3.11 `random.Random`, bit-exact for integer/str seeds (all methods consume the MT stream identically). */
export class PyRandom {
  private gen: Mt19937;
  /** CPython's `gauss_next` cache (second Box-Muller deviate). */
  gaussNext: number | null = null;

  /**
   * `random.Random(seed)` for an int (any size, sign ignored like CPython) or str (version 2) seed, or an int given
   * by its {@link seedKey} words (`{ seedKey }`: 32-bit words, least significant first, no leading zero word), or
   * `{ seeded }`: 624 words that {@link seedMtState} (or {@link seedMtStates}) has written, taken over as they are.
   */
  constructor(seed: number | bigint | string | { readonly seedKey: readonly number[] } | { readonly seeded: Int32Array }) {
    if (typeof seed !== 'object') this.gen = new Mt19937(seedMtState(seedKey(seed), new Int32Array(N)), 0, true);
    else if ('seeded' in seed) this.gen = new Mt19937(seed.seeded, 0, true);
    else this.gen = new Mt19937(seedMtState(seed.seedKey, new Int32Array(N)), 0, true);
  }

  /**
   * `gens[k] = stream(runSeed, keys[k])` for k < n: the generators given reseeded in place (like {@link reseedStream}),
   * missing ones created, all n seeded together ({@link seedMtStates}). The generators must be distinct.
   */
  static reseedStreams(gens: PyRandom[], runSeed: number | bigint | string, keys: readonly string[], n: number): void {
    const words: Int32Array[] = [];
    for (let k = 0; k < n; k++) {
      const g = gens[k];
      if (g !== undefined) {
        for (let j = 0; j < k; j++) if (gens[j] === g) throw new Error('PyRandom.reseedStreams: the generators must be distinct');
        words.push(g.gen.words);
      } else words.push(new Int32Array(N));
    }
    seedStreamStates(runSeed, keys, words, n);
    for (let k = 0; k < n; k++) {
      const g = gens[k];
      if (g === undefined) gens[k] = new PyRandom({ seeded: words[k] as Int32Array });
      else {
        g.gen.index = 0;
        g.gen.fresh = true;
        g.gaussNext = null;
      }
    }
  }

  /**
   * `self.seed(streamSeed(runSeed, key))`: this generator, in place, becomes what `stream(runSeed, key)` returns
   * (gauss_next cleared like CPython's seed()), reusing its state buffer. For loops that draw from one stream per
   * item and drop it: no 2.5 KB buffer to allocate and collect per item. Returns this.
   */
  reseedStream(runSeed: number | bigint | string, key: string): this {
    const gen = this.gen;
    seedMtState(streamKey(runSeed, key), gen.words);
    gen.index = 0;
    gen.fresh = true;
    this.gaussNext = null;
    return this;
  }

  /**
   * `this.reseedStream(runSeed, keyA)` and `other.reseedStream(runSeed, keyB)` (two distinct generators), the two
   * seedings interleaved ({@link seedMtStatePair}).
   */
  reseedStreamPair(other: PyRandom, runSeed: number | bigint | string, keyA: string, keyB: string): void {
    if (other === this) throw new Error('PyRandom.reseedStreamPair: two distinct generators are needed');
    const ga = this.gen;
    const gb = other.gen;
    seedMtStatePair(streamKey(runSeed, keyA), ga.words, streamKey(runSeed, keyB), gb.words);
    ga.index = 0;
    ga.fresh = true;
    this.gaussNext = null;
    gb.index = 0;
    gb.fresh = true;
    other.gaussNext = null;
  }

  /** Next raw 32-bit output (`genrand_uint32`), as an unsigned integer. */
  nextUint32(): number {
    return this.gen.next() >>> 0;
  }

  /** `random()`: 53-bit float in [0, 1), `(a*67108864 + b) / 2^53` with a = u32>>>5, b = u32>>>6. */
  random(): number {
    const a = this.gen.next() >>> 5;
    const b = this.gen.next() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** `getrandbits(k)` for 0 <= k <= 53 as a number (CPython word order: least significant 32-bit word first). */
  getrandbits(k: number): number {
    if (!Number.isInteger(k) || k < 0) throw new Error('ValueError: number of bits must be non-negative');
    if (k === 0) return 0;
    if (k <= 32) return this.gen.next() >>> (32 - k);
    if (k > 53) throw new Error('PyRandom.getrandbits: use getrandbitsBig for k > 53');
    const lo = this.gen.next() >>> 0;
    const hi = this.gen.next() >>> (64 - k);
    return hi * 4294967296 + lo;
  }

  /** `getrandbits(k)` for any k >= 0 as a bigint (words least significant first, top word truncated). */
  getrandbitsBig(k: number): bigint {
    if (!Number.isInteger(k) || k < 0) throw new Error('ValueError: number of bits must be non-negative');
    if (k === 0) return 0n;
    if (k <= 32) return BigInt(this.gen.next() >>> (32 - k));
    let result = 0n;
    let shift = 0n;
    for (let left = k; left > 0; left -= 32) {
      let r = this.gen.next() >>> 0;
      if (left < 32) r >>>= 32 - left;
      result |= BigInt(r) << shift;
      shift += 32n;
    }
    return result;
  }

  /**
   * `_randbelow_with_getrandbits(n)`: uniform int in [0, n) for 0 < n <= 2^53 (rejection on bit_length(n) bits).
   * n <= 0 throws (CPython 3.11 loops forever on n == 0; it is never called that way by the public API).
   */
  randbelow(n: number): number {
    if (!(n > 0) || !Number.isInteger(n) || n > 9007199254740992) throw new Error(`PyRandom.randbelow: n must be an integer in (0, 2^53], got ${n}`);
    const k = bitLength(n);
    if (k <= 32) {
      const sh = 32 - k;
      let r = this.gen.next() >>> sh;
      while (r >= n) r = this.gen.next() >>> sh;
      return r;
    }
    // two words, least significant first (CPython getrandbits); exact for every accepted r < n <= 2^53
    const sh = 64 - k;
    let r = (this.gen.next() >>> 0) + (this.gen.next() >>> sh) * 4294967296;
    while (r >= n) r = (this.gen.next() >>> 0) + (this.gen.next() >>> sh) * 4294967296;
    return r;
  }

  /** `randrange(start, stop?, step=1)` with CPython 3.11's integer semantics and error messages. */
  randrange(start: number, stop?: number, step = 1): number {
    if (!Number.isInteger(start)) throw new Error('ValueError: non-integer arg 1 for randrange()');
    if (stop === undefined) {
      if (step !== 1) throw new Error('TypeError: Missing a non-None stop argument');
      if (start > 0) return this.randbelow(start);
      throw new Error('ValueError: empty range for randrange()');
    }
    if (!Number.isInteger(stop)) throw new Error('ValueError: non-integer stop for randrange()');
    if (!Number.isInteger(step)) throw new Error('ValueError: non-integer step for randrange()');
    const width = stop - start;
    if (step === 1) {
      if (width > 0) return start + this.randbelow(width);
      throw new Error(`ValueError: empty range for randrange() (${start}, ${stop}, ${width})`);
    }
    let n: number;
    if (step > 0) n = Math.floor((width + step - 1) / step);
    else if (step < 0) n = Math.floor((width + step + 1) / step);
    else throw new Error('ValueError: zero step for randrange()');
    if (n <= 0) throw new Error('ValueError: empty range for randrange()');
    return start + step * this.randbelow(n);
  }

  /** `randint(a, b)` = randrange(a, b + 1): uniform integer in [a, b]. */
  randint(a: number, b: number): number {
    return this.randrange(a, b + 1);
  }

  /** `choice(seq)`: seq[randbelow(len(seq))]; IndexError on an empty sequence. */
  choice<T>(seq: readonly T[]): T {
    if (seq.length === 0) throw new Error('IndexError: Cannot choose from an empty sequence');
    return seq[this.randbelow(seq.length)] as T;
  }

  /** `shuffle(x)` in place: for i from len-1 down to 1, swap x[i] with x[randbelow(i+1)]. */
  shuffle<T>(x: T[]): void {
    for (let i = x.length - 1; i > 0; i--) {
      const j = this.randbelow(i + 1);
      const t = x[i] as T;
      x[i] = x[j] as T;
      x[j] = t;
    }
  }

  /** Indices CPython's `sample(range(n), k)` would return (pool branch or set branch, same draws). */
  sampleIndices(n: number, k: number): number[] {
    if (!(Number.isInteger(k) && k >= 0 && k <= n)) throw new Error('ValueError: Sample larger than population or is negative');
    const result = new Array<number>(k);
    let setsize = 21;
    if (k > 5) setsize += 4 ** Math.ceil(pyLog(k * 3) / pyLog(4));
    if (n <= setsize) {
      const pool = new Array<number>(n);
      for (let i = 0; i < n; i++) pool[i] = i;
      for (let i = 0; i < k; i++) {
        const j = this.randbelow(n - i);
        result[i] = pool[j] as number;
        pool[j] = pool[n - i - 1] as number;
      }
    } else {
      const selected = new Set<number>();
      for (let i = 0; i < k; i++) {
        let j = this.randbelow(n);
        while (selected.has(j)) j = this.randbelow(n);
        selected.add(j);
        result[i] = j;
      }
    }
    return result;
  }

  /** `sample(population, k, counts=None)`: k unique picks in selection order (CPython 3.11 algorithm). */
  sample<T>(population: readonly T[], k: number, counts?: readonly number[]): T[] {
    if (counts !== undefined) {
      if (counts.length !== population.length) throw new Error('ValueError: The number of counts does not match the population');
      const cum: number[] = [];
      let acc = 0;
      for (const c of counts) {
        acc += c;
        cum.push(acc);
      }
      const total = cum.pop();
      if (total === undefined || !Number.isInteger(total)) throw new Error('TypeError: Counts must be integers');
      if (total <= 0) throw new Error('ValueError: Total of counts must be greater than zero');
      const sel = this.sampleIndices(total, k);
      return sel.map((s) => population[bisectRight(cum, s, 0, cum.length)] as T);
    }
    return this.sampleIndices(population.length, k).map((i) => population[i] as T);
  }

  /** `choices(population, weights=None, *, cum_weights=None, k=1)` (CPython 3.11 algorithm). */
  choices<T>(population: readonly T[], weights?: readonly number[] | null, cumWeights?: readonly number[] | null, k = 1): T[] {
    const n = population.length;
    let cum: readonly number[];
    if (cumWeights == null) {
      if (weights == null) {
        const out: T[] = [];
        for (let i = 0; i < k; i++) out.push(population[Math.floor(this.random() * n)] as T);
        return out;
      }
      const acc: number[] = [];
      let s = 0;
      for (const w of weights) {
        s += w;
        acc.push(s);
      }
      cum = acc;
    } else {
      if (weights != null) throw new Error('TypeError: Cannot specify both weights and cumulative weights');
      cum = cumWeights;
    }
    if (cum.length !== n) throw new Error('ValueError: The number of weights does not match the population');
    const total = (cum[n - 1] as number) + 0.0;
    if (total <= 0.0) throw new Error('ValueError: Total of weights must be greater than zero');
    if (!Number.isFinite(total)) throw new Error('ValueError: Total of weights must be finite');
    const hi = n - 1;
    const out: T[] = [];
    for (let i = 0; i < k; i++) out.push(population[bisectRight(cum, this.random() * total, 0, hi)] as T);
    return out;
  }

  /** `uniform(a, b)` = a + (b - a) * random(). */
  uniform(a: number, b: number): number {
    return a + (b - a) * this.random();
  }

  /** `triangular(low=0, high=1, mode=None)`; returns low when high == low and a mode is given (ZeroDivisionError path). */
  triangular(low = 0.0, high = 1.0, mode: number | null = null): number {
    let u = this.random();
    let c: number;
    if (mode === null) c = 0.5;
    else {
      const d = high - low;
      if (d === 0) return low;
      c = (mode - low) / d;
    }
    if (u > c) {
      u = 1.0 - u;
      c = 1.0 - c;
      const t = low;
      low = high;
      high = t;
    }
    return low + (high - low) * pySqrt(u * c);
  }

  /** `normalvariate(mu=0, sigma=1)`: Kinderman-Monahan ratio-of-uniforms with NV_MAGICCONST. */
  normalvariate(mu = 0.0, sigma = 1.0): number {
    let z: number;
    for (;;) {
      const u1 = this.random();
      const u2 = 1.0 - this.random();
      z = (NV_MAGICCONST * (u1 - 0.5)) / u2;
      const zz = (z * z) / 4.0;
      if (zz <= -pyLog(u2)) break;
    }
    return mu + z * sigma;
  }

  /**
   * `gauss(mu=0, sigma=1)`: Box-Muller with CPython's cached second deviate (`gauss_next`). Consumes the
   * stream exactly like CPython, but the value may differ from CPython's in the last bits (~3% of draws,
   * at most 2 ulps of the deviate) because sin/cos are V8's, not glibc's (see ./pymath.ts).
   */
  gauss(mu = 0.0, sigma = 1.0): number {
    let z = this.gaussNext;
    this.gaussNext = null;
    if (z === null) {
      const x2pi = this.random() * TWOPI;
      const g2rad = pySqrt(-2.0 * pyLog(1.0 - this.random()));
      z = pyCos(x2pi) * g2rad;
      this.gaussNext = pySin(x2pi) * g2rad;
    }
    return mu + z * sigma;
  }

  /** `lognormvariate(mu, sigma)` = exp(normalvariate(mu, sigma)). */
  lognormvariate(mu: number, sigma: number): number {
    return pyExp(this.normalvariate(mu, sigma));
  }

  /** `expovariate(lambd)` = -log(1 - random()) / lambd. */
  expovariate(lambd: number): number {
    if (lambd === 0) throw new Error('ZeroDivisionError: float division by zero');
    return -pyLog(1.0 - this.random()) / lambd;
  }

  /** `gammavariate(alpha, beta)`: Cheng (alpha > 1), exponential (alpha == 1), Kennedy-Gentle GS (alpha < 1). */
  gammavariate(alpha: number, beta: number): number {
    if (alpha <= 0.0 || beta <= 0.0) throw new Error('ValueError: gammavariate: alpha and beta must be > 0.0');
    if (alpha > 1.0) {
      for (;;) {
        // u1 then u2, in argument order
        const x = chengRound(alpha, this.chengU1Draw(), 1.0 - this.random());
        if (x === x) return x * beta;
      }
    }
    if (alpha === 1.0) return -pyLog(1.0 - this.random()) * beta;
    let x: number;
    for (;;) {
      const u = this.random();
      const b = (E + alpha) / E;
      const p = b * u;
      if (p <= 1.0) x = pyPow(p, 1.0 / alpha);
      else x = -pyLog((b - p) / alpha);
      const u1 = this.random();
      if (p > 1.0) {
        if (u1 <= pyPow(x, alpha - 1.0)) break;
      } else if (u1 <= pyExp(-x)) break;
    }
    return x * beta;
  }

  /** `betavariate(alpha, beta)` (3.11): y = gamma(alpha, 1); y ? y / (y + gamma(beta, 1)) : 0.0. */
  betavariate(alpha: number, beta: number): number {
    const y = this.gammavariate(alpha, 1.0);
    if (y !== 0) return y / (y + this.gammavariate(beta, 1.0));
    return 0.0;
  }

  /**
   * `pyRound(max(low, min(high, scale * betavariate(alpha, beta))), 4)`, world generation's `beta` draw, bit for bit
   * and drawing the same words, but for alpha, beta > 1 (Cheng's gamma algorithm for both gammas) with V8's
   * `Math.log`/`Math.exp` instead of the exact glibc ones, which are most of a world's generation cost. The two libms
   * agree to within 2 ulps, so every quantity computed with V8's lies within a relative {@link FAST_REL} of the exact
   * one (the bound is derived at {@link chengFast}); a decision (a rejection test, the clamp, the rounding to 4
   * digits) is taken from the fast values only when that margin cannot change it, and anything closer is computed the
   * exact way from the same draws (about one draw in a million). `tolerance` (tests only) widens the margin:
   * `1` sends every decision down the exact path.
   */
  betavariateRounded4(alpha: number, beta: number, scale: number, low: number, high: number, tolerance = FAST_REL): number {
    if (!(alpha > 1.0 && beta > 1.0 && tolerance >= FAST_REL)) return pyRound(Math.max(low, Math.min(high, scale * this.betavariate(alpha, beta))), 4);
    const ya = this.chengFast(alpha, tolerance);
    const ua = this.chengU1;
    const yb = this.chengFast(beta, tolerance);
    const ub = this.chengU1;
    // ya, yb > 0 (alpha * exp(v), |v| < 17): y / (y + g) as betavariate's, within 3 * 2^-44 of it; scale adds one rounding.
    const v = scale * (ya / (ya + yb));
    const e = tolerance * Math.abs(v);
    if (v - e > low && v + e < high) {
      // Strictly inside the clamp, so both values round as they are: alike unless a rounding midpoint (k + 0.5) * 1e-4
      // lies within e of v. f, the fraction of t = v * 1e4 (t within |t| 2^-53 of the real product, f exact), is further
      // than |f - 0.5| - |t| 2^-53 steps of 1e-4 from any midpoint; e is |t| * tolerance of those steps.
      const t = v * 1e4;
      const f = t - Math.floor(t);
      if (Math.abs(f - 0.5) > Math.abs(t) * (2 ** -52 + 2 * tolerance)) return pyRound(v, 4);
    } else if (v + e < low) {
      return pyRound(low, 4);
    } else if (v - e > high) {
      return pyRound(Math.max(low, high), 4);
    }
    // Too close to call: betavariate's value from the accepted draws, the exact way.
    const xa = chengX(alpha, ua);
    return pyRound(Math.max(low, Math.min(high, scale * (xa / (xa + chengX(beta, ub))))), 4);
  }

  /** Cheng's u1: a draw, drawn again until it lies in (1e-7, 0.9999999) (gammavariate's `continue`). */
  private chengU1Draw(): number {
    for (;;) {
      const u1 = this.random();
      if (1e-7 < u1 && u1 < 0.9999999) return u1;
    }
  }

  /** The u1 of the last {@link chengFast} draw's accepted round. */
  private chengU1 = 0;

  /**
   * One `gammavariate(alpha, 1.0)` for alpha > 1 (Cheng's algorithm, the same draws and the same accept/reject
   * decisions), its value computed with V8's log/exp: within a relative 2^-44 of the exact one. The accepted round's u1
   * is left in {@link chengU1} ({@link chengX} recomputes the exact value from it).
   *
   * The bound: with q = u1 / (1 - u1) in (1e-7, 1e7), |log q| < 16.2, and both libms within 1 ulp of the true log and
   * exp, so the two logs differ by at most 2^-51 |log q|; v = log q / ainv (ainv = sqrt(2 alpha - 1) > 1) by at most
   * 2^-49 |v| with the division's rounding, |v| < 16.2; exp of two such arguments differs by a relative 16.2 * 2^-49
   * < 2^-45, plus an ulp from each libm and the rounding of alpha * exp: x within 2^-44 x. r = bbb + ccc v - x then
   * lies within 2^-43 M of the exact r (M = |bbb| + |ccc v| + x: the propagated errors plus two roundings per side),
   * the first test's r + SG - 4.5 z within 2^-43 (M + SG + 4.5 z), and log z within 2^-50 |log z|. `tolerance`
   * (>= 2^-36) is 128 times these.
   */
  private chengFast(alpha: number, tolerance: number): number {
    const ainv = pySqrt(2.0 * alpha - 1.0);
    const bbb = alpha - LOG4;
    const ccc = alpha + ainv;
    for (;;) {
      const u1 = this.chengU1Draw();
      const u2 = 1.0 - this.random();
      const v = Math.log(u1 / (1.0 - u1)) / ainv;
      const x = alpha * Math.exp(v);
      const z = u1 * u1 * u2;
      const cv = ccc * v;
      const r = bbb + cv - x;
      const m = Math.abs(bbb) + Math.abs(cv) + x;
      const a = r + SG_MAGICCONST - 4.5 * z;
      const ea = tolerance * (m + SG_MAGICCONST + 4.5 * z);
      let accept: boolean;
      if (a > ea) accept = true;
      else if (a >= -ea) accept = !Number.isNaN(chengRound(alpha, u1, u2));
      else {
        // The first test fails the exact way too: the second decides.
        const lz = Math.log(z);
        const b = r - lz;
        const eb = tolerance * (m + Math.abs(lz));
        accept = b > eb ? true : b < -eb ? false : !Number.isNaN(chengRound(alpha, u1, u2));
      }
      if (accept) {
        this.chengU1 = u1;
        return x;
      }
    }
  }

  /** JSON-safe snapshot of the full generator state (restore with {@link setState} or {@link PyRandom.fromState}). */
  getState(): PyRandomState {
    this.gen.settle();
    const words = this.gen.words;
    const mt = new Array<number>(N + 1);
    mt[0] = this.gen.index;
    for (let i = 0; i < N; i++) mt[i + 1] = (words[i] as number) >>> 0;
    return { mt, gaussNext: this.gaussNext };
  }

  /** Restore a snapshot taken with {@link getState}; the stream continues exactly where it was. */
  setState(state: PyRandomState): void {
    if (state.mt.length !== N + 1) throw new Error('PyRandom.setState: bad state length');
    const index = state.mt[0] as number;
    if (!(Number.isInteger(index) && index >= 0 && index < N)) throw new Error('PyRandom.setState: bad state index');
    const words = new Int32Array(N);
    for (let i = 0; i < N; i++) words[i] = state.mt[i + 1] as number;
    this.gen = new Mt19937(words, index, false);
    this.gaussNext = state.gaussNext;
  }

  /** New generator positioned at a snapshot taken with {@link getState}. */
  static fromState(state: PyRandomState): PyRandom {
    const r = new PyRandom(0);
    r.setState(state);
    return r;
  }

  /** Independent copy with identical state. */
  clone(): PyRandom {
    return PyRandom.fromState(this.getState());
  }
}
