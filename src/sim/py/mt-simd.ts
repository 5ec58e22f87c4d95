/**
 * CPython's `init_by_array` for {@link SIMD_STREAMS} Mersenne Twister streams at once, in WebAssembly SIMD (i32x4 lanes).
 *
 * Seeding one stream is two dependent chains of 623 steps (a multiply, a shift and two xors each): latency-bound in
 * scalar code. Here each i32x4 lane is one stream and {@link SIMD_VECTORS} vectors' chains are interleaved, so the same
 * steps run for 8 streams in about the time scalar code takes for one or two. The module's bytes are written by
 * {@link emitSeedModule} below (no .wasm file, no build step: the bytes are a pure function of this source), compiled on
 * first use; where WebAssembly or its SIMD is missing, {@link simdSeeder} returns null and ./rng.ts seeds in JavaScript.
 *
 * Only keys of one or two 32-bit words (every stream seed, every seed below 2^64) take this path; the steps are those
 * of rng.ts's `seedMtState`, lane for lane. test/unit/mt-simd.test.ts compares every lane with CPython's loops as written.
 */

import { K as SHA256_K } from './sha256.js';
const N = 624;
/** i32x4 vectors interleaved per call (2: the chains' latency hidden; 3 or 4 measured no faster per stream). */
export const SIMD_VECTORS = 2;
/** Streams seeded per call: four lanes per vector. */
export const SIMD_STREAMS = 4 * SIMD_VECTORS;

/**
 * Memory layout (bytes) for `vectors` vectors: init_genrand(19650218)'s words; the lanes' key words (per vector a0's
 * lanes, then a1's); the first loop's words interleaved (word i of every lane side by side); each stream's 624 words
 * (stream s = 4 * vector + lane); the SHA-256 message schedules, word t of every vector's lanes side by side (words 0
 * to 15: the lanes' padded message blocks); the digests' words 0 (hi) and 1 (lo) (per vector, hi's lanes, then lo's);
 * SHA-256's round constants.
 */
function layout(vectors: number) {
  const key = N * 4;
  const scratch = 4096;
  const out = scratch + N * 16 * vectors;
  const sched = out + 4 * vectors * N * 4;
  const digest = sched + 64 * 16 * vectors;
  const shaK = digest + 32 * vectors;
  const end = shaK + 64 * 4;
  return { init: 0, key, scratch, out, sched, digest, shaK, end, pages: Math.ceil(end / 65536) };
}
const L = layout(SIMD_VECTORS);

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

// The instructions used (WebAssembly core and fixed-width SIMD opcodes).
const localGet = (i: number): number[] => [0x20, ...uleb(i)];
const localSet = (i: number): number[] => [0x21, ...uleb(i)];
const localTee = (i: number): number[] => [0x22, ...uleb(i)];
const i32Const = (n: number): number[] => [0x41, ...sleb(n | 0)];
const I32_ADD = 0x6a;
const I32_MUL = 0x6c;
const I32_NE = 0x47;
const I32_STORE = 0x36;
const LOOP = 0x03;
const BLOCK_VOID = 0x40;
const BR_IF = 0x0d;
const END_OP = 0x0b;
const simd = (op: number, ...imm: number[]): number[] => [0xfd, ...uleb(op), ...imm];
const memarg = (alignLog2: number, offset: number): number[] => [...uleb(alignLog2), ...uleb(offset)];
const v128Load = (offset: number): number[] => simd(0x00, ...memarg(4, offset));
const v128Store = (offset: number): number[] => simd(0x0b, ...memarg(4, offset));
const v128Load32Splat = (offset: number): number[] => simd(0x09, ...memarg(2, offset));
const v128Store32Lane = (offset: number, lane: number): number[] => simd(0x5a, ...memarg(2, offset), lane);
const I32X4_SPLAT = simd(0x11);
const V128_XOR = simd(0x51);
const I32X4_SHR_U = simd(0xad);
const I32X4_ADD = simd(0xae);
const I32X4_SUB = simd(0xb1);
const I32X4_MUL = simd(0xb5);

/**
 * The module's bytes: memory (exported as `memory`, as many 64 KiB pages as the layout needs, never grown) and `seed()`, which seeds the
 * {@link SIMD_STREAMS} streams whose (a0, a1) key words (see rng.ts) are at `key` into their 624 words at `out`,
 * `hash()` (see emitHash), which writes the digest words of the lanes' stream texts, and `keys()` (see emitKeys), which
 * turns digest words into key words.
 * `vectors` chains interleaved (the module used has {@link SIMD_VECTORS}; other counts for the test and benchmarks).
 */
export function emitSeedModule(vectors: number = SIMD_VECTORS): Uint8Array {
  const K = vectors;
  const lay = layout(K);
  const scratchOff = lay.scratch;
  const outOff = lay.out;
  const KEY_OFF = lay.key;
  const INIT_OFF = lay.init;
  // locals: 0 = byte index of the word (i32); v128: per vector p (the chain), a0, a1, m1 (mt[1] after the first loop); then
  // the two multipliers, the second loop's subtrahend i and the constant 1 (splatted)
  const I = 0;
  const P = (v: number): number => 1 + 4 * v;
  const A0 = (v: number): number => 2 + 4 * v;
  const A1 = (v: number): number => 3 + 4 * v;
  const M1 = (v: number): number => 4 + 4 * v;
  const C1 = 1 + 4 * K;
  const C2 = 2 + 4 * K;
  const IV = 3 + 4 * K;
  const ONE = 4 + 4 * K;
  const v128Locals = 4 * K + 4;
  // x on the stack -> x ^ imul(p ^ (p >>> 30), C)
  const mix = (v: number, c: number): number[] => [
    ...localGet(P(v)), ...localGet(P(v)), ...i32Const(30), ...I32X4_SHR_U, ...V128_XOR, ...localGet(c), ...I32X4_MUL, ...V128_XOR,
  ];
  const scratchAddr = [...localGet(I), ...i32Const(4 * K), I32_MUL]; // word i's interleaved row: i * 16K bytes
  const b: number[] = [];
  b.push(...i32Const(1664525), ...I32X4_SPLAT, ...localSet(C1));
  b.push(...i32Const(1566083941), ...I32X4_SPLAT, ...localSet(C2));
  b.push(...i32Const(1), ...I32X4_SPLAT, ...localSet(ONE));
  for (let v = 0; v < K; v++) {
    b.push(...i32Const(0), ...v128Load(KEY_OFF + 32 * v), ...localSet(A0(v)));
    b.push(...i32Const(0), ...v128Load(KEY_OFF + 32 * v + 16), ...localSet(A1(v)));
    b.push(...i32Const(19650218), ...I32X4_SPLAT, ...localSet(P(v)));
  }
  // First loop, i = 1..622 in pairs (odd i adds a0, even i a1): mt[i] = (init[i] ^ imul(p ^ p >>> 30, 1664525)) + a
  const body1: number[] = [];
  for (const [a, e] of [[A0, 0], [A1, 1]] as const) {
    for (let v = 0; v < K; v++) {
      body1.push(...scratchAddr, ...localGet(I), ...v128Load32Splat(INIT_OFF + 4 * e));
      body1.push(...mix(v, C1), ...localGet(a(v)), ...I32X4_ADD, ...localTee(P(v)));
      body1.push(...v128Store(scratchOff + 16 * v + 16 * K * e));
    }
  }
  b.push(...i32Const(4), ...localSet(I));
  b.push(LOOP, BLOCK_VOID, ...body1, ...localGet(I), ...i32Const(8), I32_ADD, ...localTee(I), ...i32Const(4 * (N - 1)), I32_NE, BR_IF, 0, END_OP);
  // i = 623 (odd), then the wrap step at i = 1 (a1), whose result is mt[1] until the very end
  for (let v = 0; v < K; v++) {
    b.push(...i32Const(0), ...i32Const(0), ...v128Load32Splat(INIT_OFF + 4 * (N - 1)));
    b.push(...mix(v, C1), ...localGet(A0(v)), ...I32X4_ADD, ...localTee(P(v)), ...v128Store(scratchOff + 16 * K * (N - 1) + 16 * v));
  }
  for (let v = 0; v < K; v++) {
    b.push(...i32Const(0), ...v128Load(scratchOff + 16 * K + 16 * v), ...mix(v, C1), ...localGet(A1(v)), ...I32X4_ADD, ...localTee(P(v)), ...localSet(M1(v)));
  }
  // Second loop, i = 2..623: mt[i] = (mt[i] ^ imul(p ^ p >>> 30, 1566083941)) - i, each lane stored to its stream
  b.push(...i32Const(2), ...I32X4_SPLAT, ...localSet(IV));
  b.push(...i32Const(8), ...localSet(I));
  const body2: number[] = [];
  for (let v = 0; v < K; v++) {
    body2.push(...scratchAddr, ...v128Load(scratchOff + 16 * v), ...mix(v, C2), ...localGet(IV), ...I32X4_SUB, ...localSet(P(v)));
    for (let lane = 0; lane < 4; lane++) body2.push(...localGet(I), ...localGet(P(v)), ...v128Store32Lane(outOff + (4 * v + lane) * N * 4, lane));
  }
  body2.push(...localGet(IV), ...localGet(ONE), ...I32X4_ADD, ...localSet(IV));
  b.push(LOOP, BLOCK_VOID, ...body2, ...localGet(I), ...i32Const(4), I32_ADD, ...localTee(I), ...i32Const(4 * N), I32_NE, BR_IF, 0, END_OP);
  // The wrap step at i = 1 (minus 1), and mt[0] = 0x80000000
  for (let v = 0; v < K; v++) {
    b.push(...localGet(M1(v)), ...mix(v, C2), ...localGet(ONE), ...I32X4_SUB, ...localSet(P(v)));
    for (let lane = 0; lane < 4; lane++) {
      const stream = outOff + (4 * v + lane) * N * 4;
      b.push(...i32Const(0), ...localGet(P(v)), ...v128Store32Lane(stream + 4, lane));
      b.push(...i32Const(stream), ...i32Const(0x80000000), I32_STORE, ...memarg(2, 0));
    }
  }
  b.push(END_OP);
  const body = [...uleb(2), ...uleb(1), VALTYPE_I32, ...uleb(v128Locals), VALTYPE_V128, ...b];
  const hash = emitHash(K, lay);
  const keys = emitKeys(K, lay);
  const section = (id: number, bytes: readonly number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
  const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (ch) => ch.charCodeAt(0))];
  const code = (f: readonly number[]): number[] => [...uleb(f.length), ...f];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    ...section(1, [1, 0x60, 0, 0]), // one type: () -> ()
    ...section(3, [3, 0, 0, 0]), // three functions of type 0
    ...section(5, [1, 0, ...uleb(lay.pages)]), // one memory, min pages, no max
    ...section(7, [4, ...name('seed'), 0x00, 0, ...name('hash'), 0x00, 1, ...name('keys'), 0x00, 2, ...name('memory'), 0x02, 0]), // exports
    ...section(10, [3, ...code(body), ...code(hash), ...code(keys)]), // code
  ]);
}

const VALTYPE_I32 = 0x7f;
const VALTYPE_V128 = 0x7b;
const V128_OR = simd(0x50);
const V128_BITSELECT = simd(0x52);
const I32X4_EQ = simd(0x37);
const I32X4_SHL = simd(0xab);

const SHA_H0 = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/**
 * `hash()`: SHA-256 of every lane's one-block message (words 0 to 15 of the schedule at `sched`, already padded), the
 * vectors' rounds interleaved; of each digest only words 0 (hi) and 1 (lo) are kept (at `digest`), all rng.ts's
 * streamKey uses. The round constants are read from `shaK` (written by the instantiation).
 */
function emitHash(K: number, lay: ReturnType<typeof layout>): number[] {
  // locals: 0 = byte offset of the round's schedule row (i32), 1 = byte offset of its round constant (i32); v128: per
  // vector the 8 working variables a..h, then temporaries t1, t2
  const Y = 0;
  const KA = 1;
  const W = (v: number, i: number): number => 2 + 8 * v + i;
  const T1 = 2 + 8 * K;
  const T2 = 3 + 8 * K;
  const row = 16 * K; // bytes per schedule word (every vector's lanes)
  const splat = (n: number): number[] => [...i32Const(n), ...I32X4_SPLAT];
  const rotr = (x: number[], n: number): number[] => [...x, ...i32Const(n), ...I32X4_SHR_U, ...x, ...i32Const(32 - n), ...I32X4_SHL, ...V128_OR];
  const loop = (counter: number, step: number, end: number, body: readonly number[]): number[] => [
    LOOP, BLOCK_VOID, ...body, ...localGet(counter), ...i32Const(step), I32_ADD, ...localTee(counter), ...i32Const(end), I32_NE, BR_IF, 0, END_OP,
  ];
  const b: number[] = [];
  // message schedule W[16..63]: Y = (t - 16) * row; W[t] = W[t-16] + s0(W[t-15]) + W[t-7] + s1(W[t-2])
  const w = (v: number, back: number): number[] => [...localGet(Y), ...v128Load(lay.sched + (16 - back) * row + 16 * v)];
  const sched: number[] = [];
  for (let v = 0; v < K; v++) {
    sched.push(...localGet(Y), ...w(v, 16), ...w(v, 7), ...I32X4_ADD);
    sched.push(...rotr(w(v, 15), 7), ...rotr(w(v, 15), 18), ...V128_XOR, ...w(v, 15), ...i32Const(3), ...I32X4_SHR_U, ...V128_XOR, ...I32X4_ADD);
    sched.push(...rotr(w(v, 2), 17), ...rotr(w(v, 2), 19), ...V128_XOR, ...w(v, 2), ...i32Const(10), ...I32X4_SHR_U, ...V128_XOR, ...I32X4_ADD);
    sched.push(...v128Store(lay.sched + 16 * row + 16 * v));
  }
  b.push(...i32Const(0), ...localSet(Y), ...loop(Y, row, 48 * row, sched));
  // 64 rounds: Y = t * row, KA = 4t
  for (let v = 0; v < K; v++) for (let i = 0; i < 8; i++) b.push(...splat(SHA_H0[i] as number), ...localSet(W(v, i)));
  const round: number[] = [];
  for (let v = 0; v < K; v++) {
    const [a, bb, c, d, e, f, g, h] = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => localGet(W(v, i))) as [number[], number[], number[], number[], number[], number[], number[], number[]];
    // t1 = h + S1(e) + ch(e, f, g) + K[t] + W[t]; ch = bitselect(f, g, e)
    round.push(...h, ...rotr(e, 6), ...rotr(e, 11), ...V128_XOR, ...rotr(e, 25), ...V128_XOR, ...I32X4_ADD);
    round.push(...f, ...g, ...e, ...V128_BITSELECT, ...I32X4_ADD);
    round.push(...localGet(KA), ...v128Load32Splat(lay.shaK), ...I32X4_ADD, ...localGet(Y), ...v128Load(lay.sched + 16 * v), ...I32X4_ADD, ...localSet(T1));
    // t2 = S0(a) + maj(a, b, c); maj = bitselect(c, a, a ^ b)
    round.push(...rotr(a, 2), ...rotr(a, 13), ...V128_XOR, ...rotr(a, 22), ...V128_XOR);
    round.push(...c, ...a, ...a, ...bb, ...V128_XOR, ...V128_BITSELECT, ...I32X4_ADD, ...localSet(T2));
    // h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2
    round.push(...g, ...localSet(W(v, 7)), ...f, ...localSet(W(v, 6)), ...e, ...localSet(W(v, 5)));
    round.push(...d, ...localGet(T1), ...I32X4_ADD, ...localSet(W(v, 4)));
    round.push(...c, ...localSet(W(v, 3)), ...bb, ...localSet(W(v, 2)), ...a, ...localSet(W(v, 1)));
    round.push(...localGet(T1), ...localGet(T2), ...I32X4_ADD, ...localSet(W(v, 0)));
  }
  round.push(...localGet(KA), ...i32Const(4), I32_ADD, ...localSet(KA));
  b.push(...i32Const(0), ...localSet(Y), ...i32Const(0), ...localSet(KA), ...loop(Y, row, 64 * row, round));
  // digest words 0 (hi) and 1 (lo)
  for (let v = 0; v < K; v++) {
    b.push(...i32Const(0), ...localGet(W(v, 0)), ...splat(SHA_H0[0] as number), ...I32X4_ADD, ...v128Store(lay.digest + 32 * v));
    b.push(...i32Const(0), ...localGet(W(v, 1)), ...splat(SHA_H0[1] as number), ...I32X4_ADD, ...v128Store(lay.digest + 32 * v + 16));
  }
  b.push(END_OP);
  return [...uleb(2), ...uleb(2), VALTYPE_I32, ...uleb(8 * K + 2), VALTYPE_V128, ...b];
}

/**
 * `keys()`: every lane's key words from its digest words (at `digest`), as rng.ts's streamKey: the key is [lo, hi], or
 * [lo] when hi = 0, so (a0, a1) = (lo, hi === 0 ? lo : hi + 1), written at `key`.
 */
function emitKeys(K: number, lay: ReturnType<typeof layout>): number[] {
  const zero = i32Const(0);
  const b: number[] = [];
  for (let v = 0; v < K; v++) {
    const hi = [...zero, ...v128Load(lay.digest + 32 * v)];
    const lo = [...zero, ...v128Load(lay.digest + 32 * v + 16)];
    b.push(...zero, ...lo, ...v128Store(lay.key + 32 * v));
    // a1 = bitselect(lo, hi + 1, hi == 0)
    b.push(...zero, ...lo, ...hi, ...i32Const(1), ...I32X4_SPLAT, ...I32X4_ADD, ...hi, ...zero, ...I32X4_SPLAT, ...I32X4_EQ, ...V128_BITSELECT);
    b.push(...v128Store(lay.key + 32 * v + 16));
  }
  b.push(END_OP);
  return [0, ...b];
}

/** The instantiated module: `seed()` and its memory's words (views never invalidated: the memory never grows). */
export interface SimdSeeder {
  /**
   * Seed streams `from..to-1` (at most {@link SIMD_STREAMS}): `keys[k]` (one or two 32-bit words, least significant
   * first) into `outs[k]`'s 624 words, as rng.ts's `seedMtState(keys[k], outs[k])`.
   */
  seed(keys: readonly (readonly number[])[], outs: readonly Int32Array[], from: number, to: number): void;
  /**
   * Seed streams `from..to-1` (at most {@link SIMD_STREAMS}) from their texts: `outs[k]` gets the state of
   * `random.Random(int.from_bytes(sha256(texts[k]).digest()[:8], 'big'))` (rng.ts's `stream`), the SHA-256 computed
   * in the module too. Only for ASCII texts of at most 55 characters (one SHA-256 block): returns false, writing
   * nothing, when a text is not.
   */
  seedTexts(texts: readonly string[], outs: readonly Int32Array[], from: number, to: number): boolean;
  /**
   * Seed streams `from..to-1` from digest words (`hi[k]`, `lo[k]`: words 0 and 1 of a SHA-256 digest, as uint32 or
   * int32): the second half of {@link seedTexts}, for tests of the key words (hi = 0 gives a one-word key).
   */
  seedDigests(hi: readonly number[], lo: readonly number[], outs: readonly Int32Array[], from: number, to: number): void;
}

let seeder: SimdSeeder | null | undefined;

/** The seeder (compiled on first call), or null where WebAssembly SIMD is unavailable. */
export function simdSeeder(): SimdSeeder | null {
  if (seeder === undefined) seeder = instantiate();
  return seeder;
}

/** The part of the WebAssembly JavaScript API used here (the project's type libraries do not declare it). */
interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}

function instantiate(): SimdSeeder | null {
  try {
    const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (wasm === undefined) return null;
    const bytes = emitSeedModule(SIMD_VECTORS);
    if (!wasm.validate(bytes)) return null; // no SIMD
    const instance = new wasm.Instance(new wasm.Module(bytes), {});
    const memory = instance.exports.memory as { readonly buffer: ArrayBuffer };
    const run = instance.exports.seed as () => void;
    const hash = instance.exports.hash as () => void;
    const keys = instance.exports.keys as () => void;
    const words = new Int32Array(memory.buffer, 0, L.end / 4);
    let prev = 19650218;
    words[L.init / 4] = prev;
    for (let i = 1; i < N; i++) {
      prev = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) | 0;
      words[L.init / 4 + i] = prev;
    }
    words.set(SHA256_K, L.shaK / 4);
    const outs: Int32Array[] = [];
    for (let s = 0; s < SIMD_STREAMS; s++) outs.push(words.subarray(L.out / 4 + s * N, L.out / 4 + (s + 1) * N));
    const check = (n: number): void => {
      if (!(n >= 1 && n <= SIMD_STREAMS)) throw new Error(`SimdSeeder: 1 to ${SIMD_STREAMS} streams, got ${n}`);
    };
    const copyOut = (dst: readonly Int32Array[], from: number, n: number): void => {
      for (let s = 0; s < n; s++) (dst[from + s] as Int32Array).set(outs[s] as Int32Array);
    };
    return {
      seed(keys, dst, from, to) {
        const n = to - from;
        check(n);
        for (let s = 0; s < n; s++) {
          const key = keys[from + s] as readonly number[];
          if (key.length > 2) throw new Error('SimdSeeder.seed: keys of one or two words only');
          const a0 = (key[0] as number) | 0;
          const at = L.key / 4 + 8 * (s >> 2) + (s & 3);
          words[at] = a0;
          words[at + 4] = key.length === 2 ? ((key[1] as number) + 1) | 0 : a0;
        }
        run();
        copyOut(dst, from, n);
      },
      seedTexts(texts, dst, from, to) {
        const n = to - from;
        check(n);
        const stride = 4 * SIMD_VECTORS; // int32s between a lane's consecutive schedule words
        for (let s = 0; s < n; s++) {
          // the padded block, big-endian words: the text's bytes, 0x80, zeros, the length in bits in the last word
          // (written to the module's scratch even when a later text is refused: only `dst` must stay untouched)
          const t = texts[from + s] as string;
          const len = t.length;
          if (len > 55) return false;
          const at = L.sched / 4 + 4 * (s >> 2) + (s & 3);
          let w = 0;
          for (let p = 0; p < len; p++) {
            const c = t.charCodeAt(p);
            if (c >= 0x80) return false;
            w = (w << 8) | c;
            if ((p & 3) === 3) {
              words[at + stride * (p >> 2)] = w;
              w = 0;
            }
          }
          // the word holding 0x80 (after the text's last 0-3 bytes), then zeros up to the length word
          const q = len & 3;
          words[at + stride * (len >> 2)] = ((w << 8) | 0x80) << (8 * (3 - q));
          for (let j = (len >> 2) + 1; j < 15; j++) words[at + stride * j] = 0;
          words[at + stride * 15] = len * 8;
        }
        hash();
        keys();
        run();
        copyOut(dst, from, n);
        return true;
      },
      seedDigests(hi, lo, dst, from, to) {
        const n = to - from;
        check(n);
        for (let s = 0; s < n; s++) {
          const at = L.digest / 4 + 8 * (s >> 2) + (s & 3);
          words[at] = (hi[from + s] as number) | 0;
          words[at + 4] = (lo[from + s] as number) | 0;
        }
        keys();
        run();
        copyOut(dst, from, n);
      },
    };
  } catch {
    return null;
  }
}
