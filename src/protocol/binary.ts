/**
 * The binary encoding of `step_batch` replies (request field `"encoding": "binary"`; docs/protocol.md, "Binary
 * step_batch"). Transport-free: the layout (which arrays, in which order, of which dtype), the header type and the
 * decoder of a reply's frames, for the TS client and tests. The server's encoder is src/server/binary-batch.ts.
 *
 * A binary reply is one ZeroMQ message of 1 + k frames after the routing envelope: frame 0 is the JSON reply
 * (`{v, id, ok: true, result: BinaryBatchResult}`), frames 1..k the raw bytes of the k arrays that
 * `result.arrays` lists, in order: little-endian, C order, row `i` for entry `i` of the request (zeros for an
 * entry that failed; its error is in `result.errors`). An error reply to the whole request is the usual one-frame
 * JSON error reply.
 */
import { BATCH_ENCODINGS, type BatchEncoding, type BinaryArrayDesc, type BinaryBatchError, type BinaryBatchResult, type BinaryDtype, type StepInfo } from './ops.js';

export { BATCH_ENCODINGS, type BatchEncoding, type BinaryArrayDesc, type BinaryBatchError, type BinaryBatchResult, type BinaryDtype };

/** Bytes per element of each dtype. */
export const DTYPE_BYTES: { readonly [D in BinaryDtype]: number } = { '<f8': 8, '<f4': 4, '|u1': 1 };

/**
 * The per-entry columns of every binary reply, in frame order (each of shape `[n]`). Integers that JSON sends as
 * numbers (`reward_cents`, `step`, `funds_cents`) are exact in float64 (they are safe integers); `terminal_reason`
 * is 0 for null, else 1 + its index in `TERMINAL_REASONS`.
 */
export const BINARY_COLUMNS = [
  { name: 'reward', dtype: '<f8' },
  { name: 'terminated', dtype: '|u1' },
  { name: 'truncated', dtype: '|u1' },
  { name: 'ok', dtype: '|u1' },
  { name: 'exit_code', dtype: '|u1' },
  { name: 'reward_cents', dtype: '<f8' },
  { name: 'step', dtype: '<f8' },
  { name: 'funds_cents', dtype: '<f8' },
  { name: 'terminal_reason', dtype: '|u1' },
] as const satisfies readonly { name: string; dtype: BinaryDtype }[];

/** Name of a per-entry column. */
export type BinaryColumn = (typeof BINARY_COLUMNS)[number]['name'];

/** The codes of `terminal_reason` (code 0: null; code k: `TERMINAL_REASONS[k - 1]`). */
export const TERMINAL_REASONS = ['bankruptcy', 'horizon_end', 'max_steps', 'stall'] as const satisfies readonly NonNullable<StepInfo['terminal_reason']>[];

/** Bytes of one row of the per-entry columns. */
export const BINARY_COLUMN_ROW_BYTES = BINARY_COLUMNS.reduce((a, c) => a + DTYPE_BYTES[c.dtype], 0);

/** A decoded array of a binary reply. */
export type BinaryArray = Float64Array | Float32Array | Uint8Array;

/** A decoded binary reply: the header's result and the arrays by name. */
export interface DecodedBinaryBatch {
  result: BinaryBatchResult;
  arrays: Record<string, BinaryArray>;
}

/** Why the frames of a binary reply do not fit its header, or null when they do. */
export function checkBinaryFrames(result: BinaryBatchResult, frames: readonly Uint8Array[]): string | null {
  if (!Number.isSafeInteger(result.n) || result.n < 1 || !Array.isArray(result.arrays)) return 'the header has no valid n or arrays';
  if (frames.length !== result.arrays.length) return `the header lists ${result.arrays.length} arrays, the reply has ${frames.length} array frames`;
  for (let k = 0; k < frames.length; k++) {
    const d = result.arrays[k] as BinaryArrayDesc;
    const per = DTYPE_BYTES[d.dtype];
    if (per === undefined) return `array ${d.name}: unknown dtype ${JSON.stringify(d.dtype)}`;
    const count = d.shape.reduce((a, b) => a * b, 1);
    if (d.shape[0] !== result.n || (frames[k] as Uint8Array).length !== count * per) {
      return `array ${d.name}: ${(frames[k] as Uint8Array).length} bytes for shape [${d.shape.join(', ')}] of ${d.dtype} (n ${result.n})`;
    }
  }
  return null;
}

/** The arrays of a binary reply (copies, aligned) by name; throws on frames that do not fit the header. */
export function decodeBinaryArrays(result: BinaryBatchResult, frames: readonly Uint8Array[]): Record<string, BinaryArray> {
  const problem = checkBinaryFrames(result, frames);
  if (problem !== null) throw new RangeError(`malformed binary step_batch reply: ${problem}`);
  const out: Record<string, BinaryArray> = {};
  result.arrays.forEach((d, k) => {
    const f = frames[k] as Uint8Array;
    const bytes = new Uint8Array(f.length);
    bytes.set(f);
    const buf = bytes.buffer;
    out[d.name] = d.dtype === '<f8' ? new Float64Array(buf) : d.dtype === '<f4' ? new Float32Array(buf) : bytes;
  });
  return out;
}
