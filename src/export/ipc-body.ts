/**
 * The body of an Arrow IPC record batch message straight from a table chunk's buffers (./table-builder.ts), without
 * apache-arrow: the buffers, field nodes and buffer regions that apache-arrow 21's writer derives from a record batch
 * of the same buffers (`recordBatch` in ./arrow.ts; its VectorAssembler, `_compressBodyBuffers` with the length
 * prefixes ./arrow.ts corrects, and `_writeBodyBuffers`), byte for byte, so that a file sink writes the message
 * without building the batch (test/export/ipc-body.test.ts compares whole files).
 */
import type { ColumnKind, StructFieldDef } from './columns.js';
import type { ColumnBuffers, TableBuffers } from './table-builder.js';

/** What decides a column's buffers: its kind and, for `list_struct`, its struct fields. */
export interface BodyColumn {
  readonly kind: ColumnKind;
  readonly fields?: readonly StructFieldDef[];
}

/** A record batch message's body, and what its header says of it. */
export interface RecordBatchBody {
  /** Rows. */
  length: number;
  /** Field nodes in the order of the header (pre-order, a list's struct and its fields after it): `[length, nullCount]` pairs. */
  nodes: number[];
  /** Buffer regions in the order of the header: `[offset, length]` pairs, offsets from the body's start. */
  regions: number[];
  /** Bytes of the body (a multiple of 8): what `chunks` add up to. */
  byteLength: number;
  /** The body's bytes, in order (padding included). */
  chunks: Uint8Array[];
}

const EMPTY = new Uint8Array(0);
const PADDING = new Uint8Array(8);
const align8 = (n: number): number => (n + 7) & ~7;

/** A validity or bool bitmap as apache-arrow's `truncateBitmap(0, length, bitmap)` writes it: whole, padded to 8 bytes. */
function bitmap(b: Uint8Array): Uint8Array {
  const size = align8(b.byteLength);
  if (b.byteLength === size) return b;
  const out = new Uint8Array(size);
  out.set(b);
  return out;
}

/** The bytes of `a`'s first `n` elements. */
function bytesOf(a: Int32Array, n: number): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, n * 4);
}

const WIDTH: Partial<Record<ColumnKind, number>> = { int32: 4, int64: 8, float64: 8, timestamp_us: 8 };

/**
 * The buffers and field nodes of `columns` over `t`, as apache-arrow's VectorAssembler lists them; null when a table
 * is not one this reproduces (offsets not starting at 0: the assembler would rebase them).
 */
function assemble(columns: readonly BodyColumn[], t: TableBuffers, nodes: number[], buffers: Uint8Array[]): boolean {
  const n = t.length;
  for (let k = 0; k < columns.length; k++) {
    const def = columns[k] as BodyColumn;
    const c = t.columns[k] as ColumnBuffers | undefined;
    if (c === undefined) throw new Error(`missing buffers for column ${k}`);
    nodes.push(n, c.nullCount);
    buffers.push(c.nullCount <= 0 ? EMPTY : bitmap(c.validity ?? EMPTY));
    switch (def.kind) {
      case 'utf8': {
        const offsets = c.offsets as Int32Array;
        const begin = offsets[0] as number;
        if (begin !== 0) return false;
        const end = offsets[n] as number;
        buffers.push(bytesOf(offsets, n + 1), c.values.subarray(0, Math.min(end, c.values.byteLength)));
        break;
      }
      case 'bool':
        buffers.push(c.nullCount >= n ? new Uint8Array((n + 7) >> 3) : bitmap(c.values));
        break;
      case 'list_struct': {
        const offsets = c.offsets as Int32Array;
        const items = c.items;
        if ((offsets[0] as number) !== 0 || items === undefined || def.fields === undefined) return false;
        buffers.push(bytesOf(offsets, n + 1));
        // The list's struct (no nulls), then its fields over the items the offsets reach.
        const count = offsets[n] as number;
        nodes.push(count, 0);
        buffers.push(EMPTY);
        if (!assemble(def.fields, { length: count, columns: items.columns }, nodes, buffers)) return false;
        break;
      }
      default:
        buffers.push(c.values.subarray(0, n * (WIDTH[def.kind] as number)));
    }
  }
  return true;
}

/**
 * The record batch body of `t` (rows of `columns`): each buffer zstd-compressed by `compress` behind its 8-byte length
 * prefix (the uncompressed length, or -1 and the buffer as it is when compressing does not make it shorter), or, with
 * `compress` null, the plain buffers; each padded to 8 bytes. Null when the table is not one this reproduces (the
 * caller then writes a record batch through apache-arrow).
 */
export function recordBatchBody(columns: readonly BodyColumn[], t: TableBuffers, compress: ((data: Uint8Array) => Uint8Array) | null): RecordBatchBody | null {
  const nodes: number[] = [];
  const buffers: Uint8Array[] = [];
  if (!assemble(columns, t, nodes, buffers)) return null;
  const regions: number[] = [];
  const chunks: Uint8Array[] = [];
  let at = 0;
  for (const b of buffers) {
    if (compress === null) {
      const size = align8(b.byteLength);
      regions.push(at, size);
      at += size;
      if (b.byteLength === 0) continue;
      chunks.push(b);
      if (size > b.byteLength) chunks.push(PADDING.subarray(0, size - b.byteLength));
      continue;
    }
    if (b.byteLength === 0) {
      regions.push(at, 0);
      continue;
    }
    const z = compress(b);
    const smaller = z.byteLength < b.byteLength;
    const data = smaller ? z : b;
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigInt64(0, smaller ? BigInt(b.byteLength) : -1n, true);
    at = align8(at);
    regions.push(at, 8 + data.byteLength);
    at += 8 + data.byteLength;
    chunks.push(prefix, data);
    const pad = align8(data.byteLength) - data.byteLength;
    if (pad > 0) chunks.push(PADDING.subarray(0, pad));
  }
  return { length: t.length, nodes, regions, byteLength: align8(at), chunks };
}

/** A record batch body laid into one buffer: what the header says of it (`RecordBatchBody` without its chunks). */
export type LaidBody = Omit<RecordBatchBody, 'chunks'>;

/**
 * The record batch body of `t` (see {@link recordBatchBody}) copied into the first `byteLength` bytes of the buffer
 * `into(byteLength)` returns: what a bulk-run worker thread hands over for an Arrow file (its slot), and what
 * bench/bulk-worker.ts times. `compress`'s outputs need only live until this returns. Throws for a table the body
 * cannot lay out.
 */
export function recordBatchBodyInto(columns: readonly BodyColumn[], t: TableBuffers, compress: ((data: Uint8Array) => Uint8Array) | null, into: (byteLength: number) => Uint8Array): LaidBody {
  const b = recordBatchBody(columns, t, compress);
  if (b === null) throw new Error('step rows the record batch body cannot lay out');
  const out = into(b.byteLength);
  let at = 0;
  for (const c of b.chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  if (at !== b.byteLength) throw new Error(`record batch body of ${at} bytes, ${b.byteLength} expected`);
  return { length: b.length, nodes: b.nodes, regions: b.regions, byteLength: b.byteLength };
}
