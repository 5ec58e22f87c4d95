/**
 * The WebAssembly SIMD seeder (src/sim/py/mt-simd.ts) and the group seeding built on it (seedMtStates,
 * PyRandom.reseedStreams, StreamSequence) against CPython's init_by_array written out plainly here, on random keys of
 * every length class, with the SIMD path on and off.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { emitSeedModule, SIMD_STREAMS, simdSeeder } from '../../src/sim/py/mt-simd.js';
import { PyRandom, seedMtStates, stream, StreamSequence, useSimdSeeding } from '../../src/sim/py/rng.js';

const N = 624;

/** CPython `init_by_array(init_genrand(19650218), key)` as `_randommodule.c` writes it (uint32 words as signed int32). */
function initByArray(key: readonly number[]): Int32Array {
  const mt = new Uint32Array(N);
  mt[0] = 19650218;
  for (let i = 1; i < N; i++) mt[i] = Math.imul(1812433253, (mt[i - 1] as number) ^ ((mt[i - 1] as number) >>> 30)) + i;
  let i = 1;
  let j = 0;
  for (let k = Math.max(N, key.length); k > 0; k--) {
    const prev = mt[i - 1] as number;
    mt[i] = ((mt[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1664525)) + (key[j] as number) + j;
    i++;
    j++;
    if (i >= N) {
      mt[0] = mt[N - 1] as number;
      i = 1;
    }
    if (j >= key.length) j = 0;
  }
  for (let k = N - 1; k > 0; k--) {
    const prev = mt[i - 1] as number;
    mt[i] = ((mt[i] as number) ^ Math.imul(prev ^ (prev >>> 30), 1566083941)) - i;
    i++;
    if (i >= N) {
      mt[0] = mt[N - 1] as number;
      i = 1;
    }
  }
  mt[0] = 0x80000000;
  return new Int32Array(mt.buffer);
}

const word = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xffffffff), fc.nat({ max: 0xffffffff }));
/** Keys of every length class: [0], one word, two words (the top one nonzero, up to 0xffffffff), three to five words. */
const key = fc.oneof(
  fc.constant([0]),
  fc.tuple(word).map((k) => [...k]),
  fc.tuple(word, word.filter((w) => w !== 0)).map((k) => [...k]),
  fc.array(word, { minLength: 3, maxLength: 5 }).map((k) => [...k.slice(0, -1), (k[k.length - 1] as number) || 1]),
);
const shortKey = fc.oneof(fc.constant([0]), fc.tuple(word).map((k) => [...k]), fc.tuple(word, word.filter((w) => w !== 0)).map((k) => [...k]));

function expectWords(got: Int32Array, want: Int32Array, label: string): void {
  for (let i = 0; i < N; i++) if (got[i] !== want[i]) expect(got[i], `${label} word ${i}`).toBe(want[i]);
}

afterEach(() => {
  useSimdSeeding(true);
});

describe('WebAssembly SIMD seeding', () => {
  it('the emitted module is valid and instantiates here (Node has WebAssembly SIMD), the same bytes every time', () => {
    const bytes = emitSeedModule();
    // The project's type libraries do not declare the WebAssembly global (src/sim/py/mt-simd.ts reads it the same way).
    expect((globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly.validate(bytes)).toBe(true);
    expect(emitSeedModule()).toEqual(bytes);
    expect(simdSeeder()).not.toBeNull();
  });

  it('seeds every lane as init_by_array does, for any one- or two-word keys and any group within the lanes', () => {
    const seeder = simdSeeder();
    if (seeder === null) throw new Error('no SIMD seeder');
    fc.assert(
      fc.property(fc.array(shortKey, { minLength: 1, maxLength: SIMD_STREAMS + 3 }), fc.nat(), fc.nat(), (keys, a, b) => {
        const from = a % keys.length;
        const to = Math.min(keys.length, from + 1 + (b % SIMD_STREAMS));
        const outs = keys.map(() => new Int32Array(N).fill(7));
        seeder.seed(keys, outs, from, to);
        for (let k = 0; k < keys.length; k++) {
          if (k >= from && k < to) expectWords(outs[k] as Int32Array, initByArray(keys[k] as number[]), `key ${keys[k]}`);
          else expect((outs[k] as Int32Array).every((w) => w === 7), `untouched ${k}`).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    expect(() => seeder.seed([[1, 2, 3]], [new Int32Array(N)], 0, 1)).toThrow();
    expect(() => seeder.seed([], [], 0, 0)).toThrow();
  });

  it('seedTexts hashes and seeds like stream(): key words from node:crypto SHA-256, ASCII texts of 0 to 55 characters', () => {
    const seeder = simdSeeder();
    if (seeder === null) throw new Error('no SIMD seeder');
    const digestKey = (t: string): number[] => {
      const h = createHash('sha256').update(t, 'utf8').digest();
      const hi = h.readUInt32BE(0);
      const lo = h.readUInt32BE(4);
      return hi !== 0 ? [lo, hi] : [lo];
    };
    const text = fc.oneof(
      fc.string({ unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)), maxLength: 55 }),
      fc.tuple(fc.integer(), fc.constantFrom('task_', 'employee_', 'replenish_'), fc.nat()).map(([s, p, i]) => `${s}:${p}${i}`),
      fc.integer({ min: 0, max: 55 }).map((n) => 'x'.repeat(n)),
    );
    fc.assert(
      fc.property(fc.array(text, { minLength: SIMD_STREAMS, maxLength: SIMD_STREAMS + 3 }), fc.nat(), fc.nat(), (texts, a, b) => {
        const from = a % 4;
        const to = Math.min(texts.length, from + 1 + (b % SIMD_STREAMS));
        const outs = texts.map(() => new Int32Array(N).fill(7));
        expect(seeder.seedTexts(texts, outs, from, to)).toBe(true);
        for (let k = 0; k < texts.length; k++) {
          if (k >= from && k < to) expectWords(outs[k] as Int32Array, initByArray(digestKey(texts[k] as string)), `text ${JSON.stringify(texts[k])}`);
          else expect((outs[k] as Int32Array).every((w) => w === 7), `untouched ${k}`).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
    // refused, nothing written: a text of 56 characters (two SHA-256 blocks) or not ASCII
    for (const bad of ['x'.repeat(56), 'caf\u00e9', '\u{1f600}']) {
      const outs = [0, 1, 2].map(() => new Int32Array(N).fill(7));
      expect(seeder.seedTexts(['a', bad, 'b'], outs, 0, 3)).toBe(false);
      expect(outs.every((o) => o.every((w) => w === 7))).toBe(true);
    }
  });

  it('seedDigests turns digest words into the key stream() takes: [lo, hi], or [lo] when hi is 0', () => {
    const seeder = simdSeeder();
    if (seeder === null) throw new Error('no SIMD seeder');
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.oneof(fc.constant(0), word), word), { minLength: 1, maxLength: SIMD_STREAMS }), (digests) => {
        const outs = digests.map(() => new Int32Array(N));
        seeder.seedDigests(digests.map(([hi]) => hi), digests.map(([, lo]) => lo), outs, 0, digests.length);
        digests.forEach(([hi, lo], k) => expectWords(outs[k] as Int32Array, initByArray(hi !== 0 ? [lo, hi] : [lo]), `digest ${hi} ${lo}`));
      }),
      { numRuns: 200 },
    );
  });

  for (const simd of [true, false]) {
    it(`seedMtStates (SIMD ${simd ? 'on' : 'off'}) writes init_by_array's state for keys of every length, mixed`, () => {
      useSimdSeeding(simd);
      fc.assert(
        fc.property(fc.array(key, { minLength: 0, maxLength: 3 * SIMD_STREAMS }), (keys) => {
          const outs = keys.map(() => new Int32Array(N).fill(-1));
          seedMtStates(keys, outs, keys.length);
          for (let k = 0; k < keys.length; k++) expectWords(outs[k] as Int32Array, initByArray(keys[k] as number[]), `key ${keys[k]}`);
        }),
        { numRuns: 200 },
      );
    });

    it(`StreamSequence and reseedStreams (SIMD ${simd ? 'on' : 'off'}) hand out stream(runSeed, key) over several groups`, () => {
      useSimdSeeding(simd);
      fc.assert(
        fc.property(fc.oneof(fc.nat(), fc.integer()), fc.oneof(fc.string({ maxLength: 8 }), fc.string({ minLength: 40, maxLength: 60 })), fc.nat({ max: 3 * SIMD_STREAMS + 2 }), fc.nat({ max: 3 }), fc.nat({ max: 30 }), (runSeed, prefix, count, extra, used) => {
          const seq = new StreamSequence(runSeed, prefix, count);
          for (let i = 1; i <= count + extra; i++) {
            const got = seq.next();
            const want = stream(runSeed, prefix + String(i));
            for (let d = 0; d <= used; d++) expect(got.nextUint32(), `${runSeed}:${prefix}${i} draw ${d}`).toBe(want.nextUint32());
          }
        }),
        { numRuns: 100 },
      );
      // reseeding generators in any state (drawn from, settled, a gauss pending) and creating missing ones
      fc.assert(
        fc.property(fc.nat(), fc.array(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: SIMD_STREAMS + 2 }), fc.nat({ max: 700 }), (runSeed, keys, used) => {
          const gens: PyRandom[] = [];
          for (let k = 0; k < keys.length - 1; k++) {
            const g = stream(k, 'old');
            for (let d = 0; d < (used + k) % 700; d++) g.nextUint32();
            if (k % 2 === 0) g.gauss();
            if (k % 3 === 0) g.getState();
            gens.push(g);
          }
          PyRandom.reseedStreams(gens, runSeed, keys, keys.length);
          expect(gens.length).toBe(keys.length);
          keys.forEach((k, i) => {
            const g = gens[i] as PyRandom;
            const want = stream(runSeed, k);
            expect(g.gaussNext).toBeNull();
            for (let d = 0; d < 3; d++) expect(g.nextUint32()).toBe(want.nextUint32());
            expect(g.gauss()).toBe(want.gauss());
            expect(g.getState()).toEqual(want.getState());
          });
        }),
        { numRuns: 60 },
      );
      const g = stream(1, 'x');
      expect(() => PyRandom.reseedStreams([g, g], 1, ['a', 'b'], 2)).toThrow();
    });
  }
});
