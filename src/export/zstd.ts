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

interface Compressor {
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

/** Load the encoder (once) and register it with apache-arrow's writers. */
export async function zstdEncoder(): Promise<void> {
  if (encoder !== null) return;
  loading ??= import('@hpcc-js/wasm-zstd').then(({ Zstd }) => Zstd.load());
  encoder = await loading;
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
