/**
 * Zstandard for Arrow IPC files (`ycgym run`'s default `--compression zstd`): each body buffer of a record batch is
 * compressed on its own, as the Arrow IPC format's `BodyCompression` (ZSTD) lays it out, so pyarrow, polars,
 * arrow-rs and Arrow JS (with a codec registered) read the files with no extension.
 *
 * Decoding is registered with apache-arrow when this module loads (fzstd: pure JavaScript, synchronous), so every
 * reader of this package reads compressed and uncompressed files alike. Encoding (./zstd-encode.ts: the reference
 * zstd library compiled to WebAssembly, at a fixed level) is instantiated on first use (`zstdEncoder()`).
 */
import { CompressionType, compressionRegistry } from 'apache-arrow';
import { decompress } from 'fzstd';
import { directCompressor, loadZstdLibrary, ZSTD_LEVEL, zstdLevelEncoder, type Compressor } from './zstd-encode.js';

export { directCompressor, loadZstdLibrary, ZSTD_LEVEL, type Compressor };

/** This thread's encoder at the files' level (./zstd-encode.ts), once loaded. */
let encode: ((data: Uint8Array) => Uint8Array) | null = null;

function register(): void {
  const decode = zstdDecompress;
  // apache-arrow checks an encoder when it is registered (it compresses a test buffer): none until one is loaded.
  compressionRegistry.set(CompressionType.ZSTD, encode === null ? { decode } : { decode, encode });
}
register();

/** Load the encoder (once) and register it with apache-arrow's writers. */
export async function zstdEncoder(): Promise<void> {
  if (encode !== null) return;
  const loaded = await zstdLevelEncoder();
  encode ??= loaded;
  register();
}

/** Throw unless `zstdEncoder()` has loaded the encoder (a writer of compressed files checks this first). */
export function requireZstdEncoder(): void {
  if (encode === null) throw new Error('zstd encoder not loaded: await zstdEncoder() before writing a compressed Arrow file');
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
