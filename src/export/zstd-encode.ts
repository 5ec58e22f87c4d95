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
 * needs more, with headroom), not in two blocks allocated and freed per call as the library's `compress` does: measured
 * on a bulk-run worker's buffers, no change for the small ones (zstd's own set-up per frame dominates them), a few
 * percent less for an episode's observation text (megabytes allocated and freed per episode before). The same
 * `compress(dst, compressBound(n), src, n, level)` call, so the same bytes. Not reentrant: `keep` must not compress with
 * the same library.
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
 * library's fallback, when its internals are not as expected, hands out its own arrays). Small inputs seen before at
 * the same place of a round are answered from an `OutputMemo` (the same bytes: compression is a function of the input).
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
  const memo = new OutputMemo();
  return {
    encode: (data) => {
      const place = memo.next(data);
      if (place === null) return take(data, level, keep);
      const known = place.output(data);
      if (known !== null) return keep(known);
      return take(data, level, (out) => {
        place.remember(data, out);
        return keep(out);
      });
    },
    reset: () => {
      used = 0;
      memo.reset();
    },
  };
}

/** Inputs `OutputMemo` remembers: up to this many bytes (the buffers of a few hundred rows' fixed-width columns). */
const MEMO_INPUT_BYTES = 16 << 10;
/** Bytes of inputs and outputs an `OutputMemo` keeps at most (past them it remembers nothing new). */
const MEMO_BYTES = 8 << 20;
/** A place stops remembering when the inputs it saw differ from the one it kept of their length this many times more than they matched. */
const MEMO_CLASHES = 4;

/** An input and its compressed output, copies of their own (overwritten in place when the place sees another input of that length). */
interface MemoEntry {
  input: Uint8Array;
  output: Uint8Array;
  outputLength: number;
}

/** The inputs one place of a round (the n-th call since a reset) was given, one per length. */
class MemoPlace {
  private readonly byLength = new Map<number, MemoEntry>();
  private hits = 0;
  private clashes = 0;
  /** Off once the place's inputs keep differing (a column whose values change from episode to episode). */
  off = false;
  constructor(private readonly owner: OutputMemo) {}
  /** The output kept for exactly `data`'s bytes, or null. */
  output(data: Uint8Array): Uint8Array | null {
    const e = this.byLength.get(data.byteLength);
    if (e === undefined) return null;
    if (Buffer.compare(e.input, data) === 0) {
      this.hits++;
      return e.output.subarray(0, e.outputLength);
    }
    if (++this.clashes > this.hits + MEMO_CLASHES) {
      this.off = true;
      for (const x of this.byLength.values()) this.owner.bytes -= x.input.byteLength + x.output.byteLength;
      this.byLength.clear();
    }
    return null;
  }
  /** Keep `out` as `data`'s output (copies of both; `out` may be a view of the WebAssembly heap). */
  remember(data: Uint8Array, out: Uint8Array): void {
    if (this.off) return;
    const e = this.byLength.get(data.byteLength);
    if (e !== undefined) {
      e.input.set(data);
      if (e.output.byteLength < out.byteLength) {
        this.owner.bytes += out.byteLength - e.output.byteLength;
        e.output = new Uint8Array(out.byteLength);
      }
      e.output.set(out);
      e.outputLength = out.byteLength;
      return;
    }
    if (this.owner.bytes + data.byteLength + out.byteLength > MEMO_BYTES) return;
    this.owner.bytes += data.byteLength + out.byteLength;
    // Copies by the Uint8Array constructor: `slice` of a Buffer (a utf8 column's bytes) is a view of it.
    this.byLength.set(data.byteLength, { input: new Uint8Array(data), output: new Uint8Array(out), outputLength: out.byteLength });
  }
}

/**
 * The compressed outputs of small inputs, remembered by their place in a round (a round: the buffers of one record
 * batch body, in their fixed order) and their length, and handed out again when the same place is given the very same
 * bytes (compared in full: a kept output is only ever that of its own input). A bulk run's bodies repeat many of their
 * buffers: those that depend only on the row count and the run (the run, policy and preset columns, the step numbers,
 * the first/last flags, the validity bitmaps), each one a zstd frame whose set-up costs more than its few bytes. A
 * place whose inputs keep changing (most value columns) stops remembering.
 */
class OutputMemo {
  private readonly places: MemoPlace[] = [];
  private at = 0;
  /** Bytes kept by every place. */
  bytes = 0;
  /** Start a round: the next input is at place 0. */
  reset(): void {
    this.at = 0;
  }
  /** The place of the next input of this round, or null when it is not one to remember (too large, or its place is off). */
  next(data: Uint8Array): MemoPlace | null {
    const k = this.at++;
    if (data.byteLength > MEMO_INPUT_BYTES) return null;
    let p = this.places[k];
    if (p === undefined) {
      p = new MemoPlace(this);
      this.places[k] = p;
    }
    return p.off ? null : p;
  }
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
