/**
 * The zstd encoder of Arrow IPC body buffers, without apache-arrow (./zstd.ts registers it with apache-arrow's writers;
 * a bulk-run worker thread, which does not load apache-arrow, compresses its episodes' buffers with it directly):
 * the reference zstd library compiled to WebAssembly (@hpcc-js/wasm-zstd, zstd 1.5.7), one instance per thread, at a
 * fixed level, so the same buffers give the same bytes in every thread and process.
 */

/** zstd level of the IPC buffers: the fastest of the regular levels (trajectory text compresses ~100x at it). */
export const ZSTD_LEVEL = 1;

export interface Compressor {
  compress(data: Uint8Array, level?: number): Uint8Array;
}

let loading: Promise<Compressor> | null = null;

/** The parts of @hpcc-js/wasm-zstd 1.12's instance that `compress` itself uses (private in its typings). */
interface ZstdInternals {
  _mainModule: {
    dataToHeap(data: Uint8Array): Block;
    malloc(size: number): Block;
    free(block: Block): void;
    heapView(block: Block): Uint8Array;
  };
  _zstdClass: {
    compressBound(size: number): number;
    compress(dst: number, dstCapacity: number, src: number, srcSize: number, level: number): number;
    isError(code: number): boolean;
    getErrorName(code: number): string;
  };
}
interface Block {
  ptr: number;
  size: number;
}

/**
 * The library's `compress` with its output copied out of the WebAssembly heap by `slice` instead of its
 * `new Uint8Array([...view])`, which goes through a JavaScript array of numbers, one per byte: on a bulk run that copy
 * took longer than the compression itself (about 0.6 s of the main thread's CPU per 300 greedy episodes). The same
 * calls in the same order, so the same bytes (test/export/zstd.test.ts); an error throws instead of being logged.
 * Falls back to the library's own `compress` if its internals are not as expected (another version).
 */
export function directCompressor(lib: Compressor): Compressor {
  const take = directCompress(lib);
  if (take === null) return lib;
  return { compress: (data: Uint8Array, level = 3): Uint8Array => take(data, level, (out) => out.slice()) };
}

/**
 * The library's `compress` as `directCompressor` makes it, its output handed to `keep` as a view of the WebAssembly
 * heap (valid during the call only: copy it); null when the library's internals are not as expected.
 *
 * The input and output lie in two blocks of the heap kept from call to call (each replaced by a larger one when a call
 * needs more, with headroom), not in two blocks allocated and freed per call as the library's `compress` does: a
 * bulk-run worker compresses ~40 buffers an episode, most of them small, and the allocator's calls and their handles
 * were a good part of a small buffer's time. The same `compress(dst, compressBound(n), src, n, level)` call, so the
 * same bytes. Not reentrant: `keep` must not compress with the same library.
 */
function directCompress(lib: Compressor): (<T>(data: Uint8Array, level: number, keep: (out: Uint8Array) => T) => T) | null {
  const z = lib as unknown as Partial<ZstdInternals>;
  const mm = z._mainModule;
  const zc = z._zstdClass;
  if (
    typeof mm?.dataToHeap !== 'function' ||
    typeof mm.malloc !== 'function' ||
    typeof mm.free !== 'function' ||
    typeof mm.heapView !== 'function' ||
    typeof zc?.compressBound !== 'function' ||
    typeof zc.compress !== 'function' ||
    typeof zc.isError !== 'function'
  ) {
    return null;
  }
  const src = new HeapBlock(mm);
  const dst = new HeapBlock(mm);
  return <T>(data: Uint8Array, level: number, keep: (out: Uint8Array) => T): T => {
    const n = data.byteLength;
    const bound = zc.compressBound(n);
    // Both blocks first (an allocation may grow the memory), then the input copied into the heap as it now is.
    const from = src.reserve(n);
    const to = dst.reserve(bound);
    mm.heapView({ ptr: from, size: n }).set(data);
    const size = zc.compress(to, bound, from, n, level);
    if (zc.isError(size)) throw new Error(`zstd compression failed: ${zc.getErrorName(size)}`);
    // heapView reads the module's current heap (a compression may have grown the memory).
    return keep(mm.heapView({ ptr: to, size }));
  };
}

/** A block of the WebAssembly heap kept for reuse: replaced (freed, a larger one allocated) when a call needs more. */
class HeapBlock {
  private ptr = 0;
  private size = 0;
  constructor(private readonly mm: ZstdInternals['_mainModule']) {}
  /** The block's address, with room for `n` bytes (at least 1: the allocator may answer 0 bytes with a null pointer). */
  reserve(n: number): number {
    if (n > this.size || this.ptr === 0) {
      if (this.ptr !== 0) this.mm.free({ ptr: this.ptr, size: this.size });
      this.ptr = 0;
      const size = Math.max(4096, n + (n >> 2));
      const b = this.mm.malloc(size);
      if (b.ptr === 0) throw new Error(`zstd: no ${size} bytes in the WebAssembly heap`);
      this.ptr = b.ptr;
      this.size = size;
    }
    return this.ptr;
  }
}

/** An encoder whose outputs are views of one arena of its own (`arenaEncoder`). */
export interface ArenaEncoder {
  /** `data` compressed: a view of the arena, valid until `reset()` (a larger arena replaces a full one; views stay). */
  encode(data: Uint8Array): Uint8Array;
  /** Let the next outputs overwrite the arena (every view handed out since the last reset is then stale). */
  reset(): void;
}

const ARENA_BYTES = 1 << 16;

/**
 * `directCompressor`'s compression at `level` with each output copied into an arena instead of an ArrayBuffer of its
 * own: a bulk-run worker compresses an episode's ~40 buffers and copies them into its slot at once, and each small
 * ArrayBuffer has its own off-heap backing store for the garbage collector to track and free. The same bytes (the
 * library's fallback, when its internals are not as expected, hands out its own arrays).
 */
export function arenaEncoder(lib: Compressor, level: number): ArenaEncoder {
  const take = directCompress(lib);
  if (take === null) return { encode: (data) => lib.compress(data, level), reset: () => {} };
  let arena = new Uint8Array(ARENA_BYTES);
  let used = 0;
  const keep = (out: Uint8Array): Uint8Array => {
    const n = out.byteLength;
    if (used + n > arena.byteLength) {
      // Views of the old arena (outputs of this round) keep it alive and unchanged.
      arena = new Uint8Array(Math.max(ARENA_BYTES, 2 * arena.byteLength, n));
      used = 0;
    }
    arena.set(out, used);
    const view = arena.subarray(used, used + n);
    used += n;
    return view;
  };
  return {
    encode: (data) => take(data, level, keep),
    reset: () => {
      used = 0;
    },
  };
}

/** The library's encoder as loaded (once), without `directCompressor`: what the tests compare against. */
export function loadZstdLibrary(): Promise<Compressor> {
  loading ??= import('@hpcc-js/wasm-zstd').then(({ Zstd }) => Zstd.load());
  return loading;
}

/** This thread's arena encoder (`arenaEncoder`) at `ZSTD_LEVEL` (the library loaded once). */
export async function zstdArenaEncoder(): Promise<ArenaEncoder> {
  return arenaEncoder(await loadZstdLibrary(), ZSTD_LEVEL);
}

/** This thread's encoder at `ZSTD_LEVEL` (the library loaded once, about a tenth of a second). */
export async function zstdLevelEncoder(): Promise<(data: Uint8Array) => Uint8Array> {
  const c = directCompressor(await loadZstdLibrary());
  return (data) => c.compress(data, ZSTD_LEVEL);
}
