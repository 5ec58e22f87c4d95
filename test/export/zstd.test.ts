import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decompress } from 'fzstd';
import { describe, expect, it } from 'vitest';
import { stepSink } from '../../src/export/arrow.js';
import { directCompressor, loadZstdLibrary } from '../../src/export/zstd.js';
import { arenaEncoder, type Compressor } from '../../src/export/zstd-encode.js';

/** Deterministic bytes: `n` of them, drawn from an alphabet of `alphabet` symbols (small: compressible). */
function bytes(n: number, alphabet: number, seed: number): Uint8Array {
  let x = seed >>> 0 || 1;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    // xorshift32
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = (x >>> 0) % alphabet;
  }
  return out;
}

describe('directCompressor (the wasm encoder without its per-byte copy)', () => {
  it('is used with the pinned @hpcc-js/wasm-zstd (not the fallback)', async () => {
    const lib = await loadZstdLibrary();
    expect(directCompressor(lib)).not.toBe(lib);
  });

  it('writes the bytes the library writes, and they decompress to the input', async () => {
    const lib = await loadZstdLibrary();
    const direct = directCompressor(lib);
    const inputs = [
      new Uint8Array(0),
      new Uint8Array([7]),
      bytes(1000, 256, 1),
      bytes(100_000, 4, 2),
      new Uint8Array(3 << 20).fill(42),
      // Larger than the module's initial heap: compressing it grows the WebAssembly memory (a periodic pattern, so
      // the library's per-byte copy of its output stays quick).
      new Uint8Array(40 << 20).map((_, i) => (i * 7) & 63),
    ];
    for (const level of [1, 3]) {
      for (const data of inputs) {
        const got = direct.compress(data, level);
        expect(Buffer.from(got).equals(Buffer.from(lib.compress(data, level)))).toBe(true);
        expect(Buffer.from(decompress(got)).equals(Buffer.from(data))).toBe(true);
        // A copy of its own, not a view of the WebAssembly heap (which the next call overwrites or detaches).
        expect(got.byteOffset).toBe(0);
        expect(got.buffer.byteLength).toBe(got.byteLength);
      }
    }
  });

  it('falls back to the library object when its internals are not there', () => {
    const other = { compress: (d: Uint8Array) => d };
    expect(directCompressor(other)).toBe(other);
  });
});

describe('arenaEncoder (a bulk-run worker\'s encoder: outputs in one arena)', () => {
  it('writes the library\'s bytes; every view of a round stays intact as the arena fills and is replaced', async () => {
    const lib = await loadZstdLibrary();
    const enc = arenaEncoder(lib, 1);
    // Incompressible inputs (their output is as large as they are) fill the 64 KiB arena within a round.
    const inputs = [bytes(1000, 256, 3), bytes(30_000, 256, 4), new Uint8Array(5000).fill(9), bytes(50_000, 256, 5), bytes(200_000, 256, 6), bytes(10, 3, 7), new Uint8Array(0)];
    for (let round = 0; round < 3; round++) {
      enc.reset();
      const outs = inputs.map((d) => enc.encode(d));
      // Checked after the whole round: no output overwrote an earlier one.
      outs.forEach((got, k) => expect(Buffer.from(got).equals(Buffer.from(lib.compress(inputs[k] as Uint8Array, 1)))).toBe(true));
      // Several outputs share one backing store (no ArrayBuffer each).
      expect(outs[0]?.buffer).toBe(outs[2]?.buffer);
    }
  });

  /** The library with its compress call counted (the one `directCompress` makes per input it compresses). */
  async function counted(): Promise<{ lib: Compressor; calls: () => number }> {
    const lib = await loadZstdLibrary();
    const z = lib as unknown as { _mainModule: unknown; _zstdClass: { compress(...a: number[]): number } };
    let n = 0;
    const zc = Object.create(z._zstdClass, {
      compress: {
        value: (...a: number[]) => {
          n++;
          return z._zstdClass.compress(...a);
        },
      },
    });
    return { lib: Object.assign(Object.create(lib) as Compressor, { _mainModule: z._mainModule, _zstdClass: zc }), calls: () => n };
  }

  it('answers an input seen before at the same place from memory, and never an input that differs', async () => {
    const ref = await loadZstdLibrary();
    const { lib, calls } = await counted();
    const enc = arenaEncoder(lib, 1);
    // The caller's buffers as a bulk-run worker's row builder has them: Buffers (whose slice is a view, not a copy)
    // overwritten in place from round to round.
    const a = Buffer.from(bytes(3000, 4, 8));
    const b = Buffer.from(bytes(500, 4, 9));
    const rounds = [bytes(3000, 4, 8), bytes(3000, 4, 8), bytes(3000, 4, 10), bytes(3000, 4, 8), bytes(3000, 4, 11)];
    const compressed: number[] = [];
    for (const first of rounds) {
      enc.reset();
      a.set(first);
      const before = calls();
      const outs = [enc.encode(a), enc.encode(b)];
      compressed.push(calls() - before);
      expect(Buffer.from(outs[0] as Uint8Array).equals(Buffer.from(ref.compress(first, 1)))).toBe(true);
      expect(Buffer.from(outs[1] as Uint8Array).equals(Buffer.from(ref.compress(b, 1)))).toBe(true);
      // Copies in the round's arena, as every output (not the memory's own).
      expect(outs[0]?.buffer).toBe(outs[1]?.buffer);
    }
    // The first round compresses both; later ones only a first input their place has not kept (one per length).
    expect(compressed).toEqual([2, 0, 1, 1, 1]);
  });

  it('stops remembering at a place whose inputs keep changing, and still writes the library\'s bytes', async () => {
    const ref = await loadZstdLibrary();
    const { lib, calls } = await counted();
    const enc = arenaEncoder(lib, 1);
    for (let round = 0; round < 12; round++) {
      enc.reset();
      const d = bytes(2000, 4, 100 + round);
      const before = calls();
      expect(Buffer.from(enc.encode(d)).equals(Buffer.from(ref.compress(d, 1)))).toBe(true);
      expect(calls() - before).toBe(1);
    }
    // Off: the same input again is compressed again.
    const again = bytes(2000, 4, 111);
    enc.reset();
    const before = calls();
    expect(Buffer.from(enc.encode(again)).equals(Buffer.from(ref.compress(again, 1)))).toBe(true);
    expect(calls() - before).toBe(1);
  });

  it('falls back to the library\'s own compress when its internals are not there', () => {
    const enc = arenaEncoder({ compress: (d: Uint8Array, level?: number) => new Uint8Array([level ?? -1, d.length]) }, 1);
    expect([...enc.encode(new Uint8Array(5))]).toEqual([1, 5]);
  });
});

describe('ArrowFileSink compression', () => {
  it('refuses an unknown codec before opening its file (it was written uncompressed)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-sink-'));
    try {
      const path = join(dir, 't.arrow');
      expect(() => stepSink(path, 'lz4' as never)).toThrow(/unknown compression "lz4" \(available: zstd, none\)/);
      expect(existsSync(path)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
