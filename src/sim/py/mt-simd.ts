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

const N = 624;
/** i32x4 vectors interleaved per call (2: the chains' latency hidden; 3 or 4 measured no faster per stream). */
export const SIMD_VECTORS = 2;
/** Streams seeded per call: four lanes per vector. */
export const SIMD_STREAMS = 4 * SIMD_VECTORS;

// Memory layout (bytes): init_genrand(19650218)'s words, the lanes' key words, the first loop's words interleaved
// (word i of every lane side by side), then each stream's 624 words, stream s = 4 * vector + lane.
const INIT_OFF = 0;
const KEY_OFF = N * 4; // per vector: a0 lanes (16 bytes), a1 lanes (16 bytes)
const SCRATCH_OFF = 4096;
const OUT_OFF = SCRATCH_OFF + N * 16 * SIMD_VECTORS;
const END = OUT_OFF + SIMD_STREAMS * N * 4;

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
 * {@link SIMD_STREAMS} streams whose (a0, a1) key words (see rng.ts) are at KEY_OFF into their 624 words at OUT_OFF.
 * `vectors` chains interleaved (the module used has {@link SIMD_VECTORS}; other counts for the test and benchmarks).
 */
export function emitSeedModule(vectors: number = SIMD_VECTORS): Uint8Array {
  const K = vectors;
  const scratchOff = SCRATCH_OFF;
  const outOff = scratchOff + N * 16 * K;
  const pages = Math.ceil((outOff + 4 * K * N * 4) / 65536);
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
  const VALTYPE_I32 = 0x7f;
  const VALTYPE_V128 = 0x7b;
  const body = [...uleb(2), ...uleb(1), VALTYPE_I32, ...uleb(v128Locals), VALTYPE_V128, ...b];
  const section = (id: number, bytes: readonly number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
  const name = (s: string): number[] => [...uleb(s.length), ...Array.from(s, (ch) => ch.charCodeAt(0))];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    ...section(1, [1, 0x60, 0, 0]), // one type: () -> ()
    ...section(3, [1, 0]), // one function of type 0
    ...section(5, [1, 0, ...uleb(pages)]), // one memory, min pages, no max
    ...section(7, [2, ...name('seed'), 0x00, 0, ...name('memory'), 0x02, 0]), // exports
    ...section(10, [1, ...uleb(body.length), ...body]), // code
  ]);
}

/** The instantiated module: `seed()` and its memory's words (views never invalidated: the memory never grows). */
export interface SimdSeeder {
  /**
   * Seed streams `from..to-1` (at most {@link SIMD_STREAMS}): `keys[k]` (one or two 32-bit words, least significant
   * first) into `outs[k]`'s 624 words, as rng.ts's `seedMtState(keys[k], outs[k])`.
   */
  seed(keys: readonly (readonly number[])[], outs: readonly Int32Array[], from: number, to: number): void;
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
    const words = new Int32Array(memory.buffer, 0, END / 4);
    let prev = 19650218;
    words[INIT_OFF / 4] = prev;
    for (let i = 1; i < N; i++) {
      prev = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) | 0;
      words[INIT_OFF / 4 + i] = prev;
    }
    const outs: Int32Array[] = [];
    for (let s = 0; s < SIMD_STREAMS; s++) outs.push(words.subarray(OUT_OFF / 4 + s * N, OUT_OFF / 4 + (s + 1) * N));
    return {
      seed(keys, dst, from, to) {
        const n = to - from;
        if (!(n >= 1 && n <= SIMD_STREAMS)) throw new Error(`SimdSeeder.seed: 1 to ${SIMD_STREAMS} streams, got ${n}`);
        for (let s = 0; s < n; s++) {
          const key = keys[from + s] as readonly number[];
          if (key.length > 2) throw new Error('SimdSeeder.seed: keys of one or two words only');
          const a0 = (key[0] as number) | 0;
          const at = KEY_OFF / 4 + 8 * (s >> 2) + (s & 3);
          words[at] = a0;
          words[at + 4] = key.length === 2 ? ((key[1] as number) + 1) | 0 : a0;
        }
        run();
        for (let s = 0; s < n; s++) (dst[from + s] as Int32Array).set(outs[s] as Int32Array);
      },
    };
  } catch {
    return null;
  }
}
