/**
 * Zstandard for Arrow IPC files (`ycgym run`'s default `--compression zstd`): each body buffer of a record batch is
 * compressed on its own, as the Arrow IPC format's `BodyCompression` (ZSTD) lays it out, so pyarrow, polars,
 * arrow-rs and Arrow JS (with a codec registered) read the files with no extension.
 *
 * Decoding is registered with apache-arrow when this module loads (fzstd: pure JavaScript, synchronous), so every
 * reader of this package reads compressed and uncompressed files alike. Encoding uses the reference zstd library
 * compiled to WebAssembly (@hpcc-js/wasm-zstd, zstd 1.5.7), instantiated on first use (`zstdEncoder()`, about a
 * tenth of a second), at a fixed level: the same buffers give the same bytes in every process.
 */
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { decompress } from 'fzstd';

/** zstd level of the IPC buffers: the fastest of the regular levels (trajectory text compresses ~100x at it). */
const ZSTD_LEVEL = 1;

export interface Compressor {
  compress(data: Uint8Array, level?: number): Uint8Array;
}

let encoder: Compressor | null = null;
let loading: Promise<Compressor> | null = null;

function register(): void {
  const decode = zstdDecompress;
  const enc = encoder;
  // apache-arrow checks an encoder when it is registered (it compresses a test buffer): none until one is loaded.
  compressionRegistry.set(CompressionType.ZSTD, enc === null ? { decode } : { decode, encode: (data: Uint8Array) => enc.compress(data, ZSTD_LEVEL) });
}
register();

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
    return lib;
  }
  return {
    compress(data: Uint8Array, level = 3): Uint8Array {
      const src = mm.dataToHeap(data);
      const bound = zc.compressBound(data.length);
      const dst = mm.malloc(bound);
      try {
        const size = zc.compress(dst.ptr, bound, src.ptr, src.size, level);
        if (zc.isError(size)) throw new Error(`zstd compression failed: ${zc.getErrorName(size)}`);
        // heapView reads the module's current heap (a compression may have grown the memory).
        return mm.heapView({ ptr: dst.ptr, size }).slice();
      } finally {
        mm.free(dst);
        mm.free(src);
      }
    },
  };
}

/** The library's encoder as loaded (once), without `directCompressor`: what the tests compare against. */
export function loadZstdLibrary(): Promise<Compressor> {
  loading ??= import('@hpcc-js/wasm-zstd').then(({ Zstd }) => Zstd.load());
  return loading;
}

/** Load the encoder (once) and register it with apache-arrow's writers. */
export async function zstdEncoder(): Promise<void> {
  if (encoder !== null) return;
  const lib = await loadZstdLibrary();
  encoder ??= directCompressor(lib);
  register();
}

/** Throw unless `zstdEncoder()` has loaded the encoder (a writer of compressed files checks this first). */
export function requireZstdEncoder(): void {
  if (encoder === null) throw new Error('zstd encoder not loaded: await zstdEncoder() before writing a compressed Arrow file');
}

/**
 * Decompress one zstd frame (or several, concatenated) into a buffer of its own at offset 0: fzstd returns a view
 * 12 bytes into its work buffer, and apache-arrow views 64-bit columns in place (a BigInt64Array must start at a
 * multiple of 8).
 */
function zstdDecompress(data: Uint8Array): Uint8Array {
  const out = decompress(data);
  return out.byteOffset % 8 === 0 ? out : out.slice();
}
