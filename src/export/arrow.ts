/**
 * Arrow IPC writing for trajectories: record batches assembled without copying from the buffers of the row builder
 * (./table-builder.ts, re-exported), and an IPC file writer that streams to disk, its body buffers optionally
 * zstd-compressed (./zstd.ts; reading compressed files needs nothing more than importing this module). A sink writes
 * the builder's buffers as a message body laid out by ./ipc-body.ts, without a record batch in between.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { ARROW_COMPRESSIONS, arrowCompression, type ArrowCompression } from './compression.js';
import { compressionRegistry, CompressionType, DataType, MetadataVersion, type Field, makeData, RecordBatch, RecordBatchFileWriter, Struct, tableFromIPC, type Data, type Schema, type Table } from 'apache-arrow';
import { type BodyCompression, BufferRegion, FieldNode, Message, RecordBatch as RecordBatchHeader } from 'apache-arrow/ipc/metadata/message';
import { Footer } from 'apache-arrow/ipc/metadata/file';
import { recordBatchBody, type BodyColumn, type RecordBatchBody } from './ipc-body.js';
import { EPISODE_SCHEMA, STEP_SCHEMA, type ScalarKind } from './schema.js';
import { requireZstdEncoder } from './zstd.js';
import type { ColumnBuffers, TableBuffers } from './table-builder.js';

export { episodeBuilder, stepBuilder, TableBuilder } from './table-builder.js';
export type { ColumnBuffers, TableBuffers } from './table-builder.js';

/** The Arrow data of one column's buffers (no copies). */
function columnData(f: Field, length: number, c: ColumnBuffers | undefined): Data {
  if (!c) throw new Error(`missing buffers for column ${f.name}`);
  const base = { type: f.type, length, nullCount: c.nullCount, nullBitmap: c.validity ?? undefined };
  const v = c.values;
  if (DataType.isList(f.type)) {
    const item = f.type.children[0]?.type;
    if (!c.items || !item || !DataType.isStruct(item)) throw new Error(`column ${f.name}: a list column needs struct items and their buffers`);
    return makeData({ ...base, valueOffsets: c.offsets ?? new Int32Array(length + 1), child: structData(item.children, c.items) });
  }
  switch (f.type.toString()) {
    case 'Utf8':
      return makeData({ ...base, valueOffsets: c.offsets ?? new Int32Array(length + 1), data: v });
    case 'Bool':
      return makeData({ ...base, data: v });
    case 'Int32':
      return makeData({ ...base, data: new Int32Array(v.buffer, v.byteOffset, length) });
    case 'Float64':
      return makeData({ ...base, data: new Float64Array(v.buffer, v.byteOffset, length) });
    default:
      // Int64 and Timestamp<MICROSECOND>.
      return makeData({ ...base, data: new BigInt64Array(v.buffer, v.byteOffset, length) });
  }
}

/** A struct (no nulls) of `fields` from a table's buffers. */
function structData(fields: Field[], t: TableBuffers): Data<Struct> {
  const children = fields.map((f, i) => columnData(f, t.length, t.columns[i]));
  return makeData({ type: new Struct(fields), length: t.length, nullCount: 0, children });
}

/** Assemble a record batch from raw buffers (no copies). */
export function recordBatch(schema: Schema, t: TableBuffers): RecordBatch {
  return new RecordBatch(schema, structData(schema.fields, t));
}

/** The kind of a scalar Arrow type as `columnData` writes it, or null. */
function scalarKind(t: DataType): ScalarKind | null {
  switch (t.toString()) {
    case 'Utf8':
      return 'utf8';
    case 'Bool':
      return 'bool';
    case 'Int32':
      return 'int32';
    case 'Float64':
      return 'float64';
    case 'Int64':
      return 'int64';
    default:
      return DataType.isTimestamp(t) ? 'timestamp_us' : null;
  }
}

/**
 * The columns of `schema` as ./ipc-body.ts lays out their buffers (the types `columnData` writes: Utf8, Bool, Int32,
 * Float64, Int64, Timestamp, and lists of structs of those), or null for a schema with any other type.
 */
export function bodyColumns(schema: Schema): BodyColumn[] | null {
  const out: BodyColumn[] = [];
  for (const f of schema.fields) {
    if (DataType.isList(f.type)) {
      const item = f.type.children[0]?.type;
      if (!item || !DataType.isStruct(item)) return null;
      const fields: { name: string; kind: ScalarKind }[] = [];
      for (const c of item.children) {
        const kind = scalarKind(c.type);
        if (kind === null) return null;
        fields.push({ name: c.name, kind });
      }
      out.push({ kind: 'list_struct', fields });
      continue;
    }
    const kind = scalarKind(f.type);
    if (kind === null) return null;
    out.push({ kind });
  }
  return out;
}

/** The record batch message (header) apache-arrow's writer writes before a body laid out by ./ipc-body.ts. */
export function bodyMessage(b: RecordBatchBody, compression: BodyCompression | null): Message {
  const nodes: FieldNode[] = [];
  for (let k = 0; k < b.nodes.length; k += 2) nodes.push(new FieldNode(b.nodes[k] as number, b.nodes[k + 1] as number));
  const regions: BufferRegion[] = [];
  for (let k = 0; k < b.regions.length; k += 2) regions.push(new BufferRegion(b.regions[k] as number, b.regions[k + 1] as number));
  return Message.from(new RecordBatchHeader(b.length, nodes, regions, compression, []), b.byteLength);
}

/**
 * A copy of `b`'s bytes. Not `b.slice()`: a Buffer's own `slice` is a view of its memory (a chunk a caller reused after
 * handing it over was written as it then was).
 */
function copyOf(b: Uint8Array): Uint8Array {
  return Uint8Array.prototype.slice.call(b);
}

/** Arrow IPC file writer that streams to a file descriptor (bounded memory, synchronous). */
class FdFileWriter extends RecordBatchFileWriter {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Where the footer of the last `checkpoint` starts: cut off before the next bytes go to the file. */
  private footerAt: number | null = null;
  /** Bytes went to the file since its last footer (none yet, or it was cut off): the file on disk is no Arrow file. */
  private unfinished = false;
  /** Bytes of the footers `checkpoint` wrote, all together, and of the last one. */
  footerBytesWritten = 0;
  lastFooterBytes = 0;
  /** While a checkpoint collects its footer's bytes instead of writing them. */
  private capture: Uint8Array[] | null = null;
  constructor(
    private readonly fd: number,
    compression: ArrowCompression,
    private readonly durable = false,
  ) {
    super(compression === 'zstd' ? { compressionType: CompressionType.ZSTD } : {});
  }
  /**
   * apache-arrow 21.2's writer puts the compressed length in each compressed buffer's 8-byte prefix, where the Arrow
   * format wants the uncompressed length (-1 for a buffer left uncompressed): pyarrow then refuses the file
   * ("Destination buffer is too small"); Arrow JS's own reader only tells -1 from the rest. The prefix is set right.
   */
  protected override _compressBodyBuffers(buffers: ArrayBufferView[]): ReturnType<RecordBatchFileWriter['_compressBodyBuffers']> {
    const out = super._compressBodyBuffers(buffers);
    for (let i = 0; i < buffers.length; i++) {
      const prefix = out.buffers[2 * i];
      // An empty buffer has no prefix.
      if (prefix === undefined || prefix.byteLength !== 8) continue;
      const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
      if (view.getBigInt64(0, true) !== -1n) view.setBigInt64(0, BigInt((buffers[i] as ArrayBufferView).byteLength), true);
    }
    return out;
  }
  protected override _write(chunk: ArrayBufferView | ArrayBuffer): this {
    if (!this._started) return this;
    const b = chunk instanceof Uint8Array ? chunk : ArrayBuffer.isView(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) : new Uint8Array(chunk);
    if (b.byteLength === 0) return this;
    this._position += b.byteLength;
    if (this.capture !== null) {
      this.capture.push(copyOf(b));
      return this;
    }
    if (b.byteLength >= 1 << 20) {
      this.flush();
      this.cut();
      writeAll(this.fd, b);
      this.unfinished = true;
    } else {
      // Small chunks (message prefixes, padding, a body's chunks) may be reused by the caller: copy them.
      this.pending.push(copyOf(b));
      this.pendingBytes += b.byteLength;
      // A durable sink holds batches back until they reach its footer's size (`ArrowFileSink.written`), however long.
      if (this.pendingBytes >= Math.max(1 << 22, this.durable ? this.lastFooterBytes : 0)) this.flush();
    }
    return this;
  }
  /**
   * Write a record batch message from its body (./ipc-body.ts): the header apache-arrow encodes for those nodes and
   * regions, then the body, as `write` does for the record batch of the same buffers (no dictionaries: the tables
   * have none).
   */
  writeBody(b: RecordBatchBody): void {
    if (!this._started) throw new Error('RecordBatchWriter is not started');
    this._writeMessage(bodyMessage(b, this._compression));
    for (const c of b.chunks) this._write(c);
  }
  /**
   * Make the file on disk a complete Arrow file of the batches written so far: their footer (the bytes `finish` would
   * write now) goes after them, and the write position stays where it was, so the next bytes first cut it off and the
   * finished file is the same as without checkpoints. A process killed between checkpoints leaves a readable file.
   */
  checkpoint(): void {
    const schema = this._schema;
    if (!this._started || schema === null) return;
    this.flush();
    const at = this._position;
    const footer: Uint8Array[] = [];
    this.capture = footer;
    try {
      this._writeFooter(schema);
    } finally {
      this.capture = null;
      this._position = at;
    }
    this.cut();
    // At its place, without moving the descriptor's offset: the next sequential write lands at `at` after the cut.
    const bytes = Buffer.concat(footer);
    let off = 0;
    while (off < bytes.byteLength) off += writeSync(this.fd, bytes, off, bytes.byteLength - off, at + off);
    this.footerAt = at;
    this.unfinished = false;
    this.footerBytesWritten += bytes.byteLength;
    this.lastFooterBytes = bytes.byteLength;
  }
  /** Bytes of the file so far, held ones included, without a footer (`_position`, where a checkpoint's footer starts). */
  get position(): number {
    return this._position;
  }
  /** Bytes `writeBody(b)` adds before the footer: its message header (prefixed, padded to 8), then its body. */
  bodyBytes(b: RecordBatchBody): number {
    return ((Message.encode(bodyMessage(b, this._compression)).byteLength + 8 + 7) & ~7) + b.byteLength;
  }
  /** Whether the file on disk lacks a footer for bytes already written to it (a checkpoint must follow). */
  get footerless(): boolean {
    return this.unfinished;
  }
  /** Bytes held in memory, not yet written to the file. */
  get heldBytes(): number {
    return this.pendingBytes;
  }
  /** Record batches written (held or not): the blocks a footer lists. */
  get batches(): number {
    return this._recordBatchBlocks.length;
  }
  /** Cut off the last checkpoint's footer (before bytes that follow the batches it lists). */
  private cut(): void {
    if (this.footerAt === null) return;
    ftruncateSync(this.fd, this.footerAt);
    this.footerAt = null;
  }
  flush(): void {
    if (this.pending.length === 0) return;
    this.cut();
    writeAll(this.fd, Buffer.concat(this.pending, this.pendingBytes));
    this.pending = [];
    this.pendingBytes = 0;
    this.unfinished = true;
  }
}

/** Bytes a footer spends on each record batch it lists (an Arrow `Block`). */
const FOOTER_BYTES_PER_BATCH = 24;

/** What closing a file adds after its last batch besides the footer: the end-of-stream marker (8), the footer's length (4), the magic (6). */
const CLOSING_BYTES = 18;
/** Slack on a footer's size (`ArrowFileSink.finishedBytes`): the footer measures exactly `Footer.encode` of the schema plus a block per batch, this is a margin. */
const FOOTER_SLACK_BYTES = 8;
/** Bytes of a footer listing no batches, per schema. */
const emptyFooterBytes = new WeakMap<Schema, number>();
function footerBytesOf(schema: Schema): number {
  let n = emptyFooterBytes.get(schema);
  if (n === undefined) {
    n = Footer.encode(new Footer(schema, MetadataVersion.V5, [], [])).byteLength;
    emptyFooterBytes.set(schema, n);
  }
  return n;
}

/**
 * When a durable sink writes its footer (`ArrowFileSink`): after every batch while the footer's list of batches
 * (`FOOTER_BYTES_PER_BATCH` each) is at most `DURABLE_EVERY_BATCH_BYTES`; past that, once the batches held back since the last footer
 * are as many bytes as that footer (so footers cost no more than the data), or `durableDelayMs` after the first batch
 * held back, whichever comes first.
 */
export const DURABLE_EVERY_BATCH_BYTES = 4 * 1024;
/** The pause after which held-back batches are written with their footer: 200 ms, or longer for a long footer, so
 * that pauses write at most about 1 MB of footer a second. */
export function durableDelayMs(batches: number): number {
  return Math.max(200, Math.ceil((FOOTER_BYTES_PER_BATCH * batches) / 1000));
}

/** Durable sinks holding batches back: written with their footer when the process exits (a script or server that
 * ends without closing them; a kill still loses them). */
const holding = new Set<{ flushHeld(): void }>();
let exitHook = false;
function holdUntilExit(sink: { flushHeld(): void }): void {
  holding.add(sink);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const s of holding) {
      try {
        s.flushHeld();
      } catch {
        // Exiting: a file that cannot be written keeps its last footer.
      }
    }
  });
}

function writeAll(fd: number, b: Uint8Array): void {
  let off = 0;
  while (off < b.byteLength) off += writeSync(fd, b, off, b.byteLength - off);
}

export { ARROW_COMPRESSIONS, arrowCompression, type ArrowCompression };

/**
 * Writes record batches of one schema to an Arrow IPC file (`.arrow`), streaming to disk. With `compression: 'zstd'`
 * the encoder must be loaded first (`await zstdEncoder()` from ./zstd.ts).
 */
export class ArrowFileSink {
  private readonly fd: number;
  private readonly writer: FdFileWriter;
  private closed = false;
  /** The file's size once closed. */
  private finalBytes: number | null = null;
  /** A durable sink's pending checkpoint of held-back batches (see `written`). */
  private timer: NodeJS.Timeout | null = null;
  /** The schema's columns for ./ipc-body.ts (null: batches go through apache-arrow's assembly). */
  private readonly body: BodyColumn[] | null;
  rows = 0;
  /**
   * `durable`: the file on disk is always a complete Arrow file (a footer written after the batches and cut off by the
   * next write; `FdFileWriter.checkpoint`), of every batch while the footer is short and, past that, of all but the
   * batches held back since the last footer (`written`), so a process killed while it writes (a recording server)
   * leaves a readable file; the closed file is the same either way.
   */
  constructor(
    readonly path: string,
    readonly schema: Schema,
    readonly compression: ArrowCompression = 'none',
    readonly durable = false,
  ) {
    if (arrowCompression(compression) === 'zstd') requireZstdEncoder();
    this.body = bodyColumns(schema);
    this.fd = openSync(path, 'w');
    this.writer = new FdFileWriter(this.fd, compression, durable);
    // Start with the schema so that a file without batches is still valid.
    this.writer.reset(undefined, schema);
  }
  /**
   * Append a batch of rows given as raw buffers: the bytes `writeBatch(recordBatch(schema, t))` writes, assembled and
   * compressed straight from the buffers (./ipc-body.ts) instead of through a record batch and apache-arrow's
   * assembly, which cost a bulk run's main thread as much again as compressing.
   */
  writeBuffers(t: TableBuffers): void {
    if (t.length === 0) return;
    if (this.closed) throw new Error(`${this.path}: sink is closed`);
    const body = this.bodyOf(t);
    if (body === null) {
      this.writeBatch(recordBatch(this.schema, t));
      return;
    }
    this.writer.writeBody(body);
    this.written(t.length);
  }
  /**
   * The record batch body `writeBuffers(t)` writes (null: this schema's batches go through apache-arrow's assembly);
   * `writeBody(body, sink.compression)` then writes the same bytes. Lets a caller learn a batch's size
   * (`batchBytes`) before it is written.
   */
  bodyOf(t: TableBuffers): RecordBatchBody | null {
    return this.body === null ? null : recordBatchBody(this.body, t, this.compression === 'zstd' ? zstdEncode() : null);
  }
  /** Bytes writing `b` adds to the finished file: its message and body, and its block in the footer. */
  batchBytes(b: RecordBatchBody): number {
    return this.writer.bodyBytes(b) + FOOTER_BYTES_PER_BATCH;
  }
  /**
   * Bytes of the file once closed: exactly its size after `close()`; before, an upper bound (the batches written so
   * far and the footer closing would write, with `FOOTER_SLACK_BYTES` of margin).
   */
  get finishedBytes(): number {
    if (this.finalBytes !== null) return this.finalBytes;
    return this.writer.position + footerBytesOf(this.schema) + FOOTER_BYTES_PER_BATCH * this.writer.batches + CLOSING_BYTES + FOOTER_SLACK_BYTES;
  }
  /**
   * After a batch of `rows` rows: to the file; with `durable`, the footer too when `DURABLE_EVERY_BATCH_BYTES` says
   * so, else held back (the file on disk stays the last checkpoint's complete file) until the held bytes reach the
   * last footer's size or `durableDelayMs` passes. A batch whose bytes had to reach the file (a chunk over 1 MiB, or
   * more held than the writer holds) is followed by its footer at once: between two turns of the event loop the file
   * on disk is always complete.
   */
  private written(rows: number): void {
    this.rows += rows;
    if (!this.durable) {
      this.writer.flush();
      return;
    }
    const w = this.writer;
    if (w.footerless || FOOTER_BYTES_PER_BATCH * w.batches <= DURABLE_EVERY_BATCH_BYTES || w.heldBytes >= w.lastFooterBytes) {
      this.checkpoint();
      return;
    }
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        if (!this.closed) this.checkpoint();
      }, durableDelayMs(this.writer.batches));
      // A sink's pending footer keeps no process alive (close() writes it, and so does the process's exit).
      this.timer.unref();
      holdUntilExit(this);
    }
  }
  private checkpoint(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    holding.delete(this);
    this.writer.checkpoint();
  }
  /** Write the batches held back with their footer (at the process's exit). */
  flushHeld(): void {
    if (!this.closed && this.timer !== null) this.checkpoint();
  }
  /** Bytes of the footers written after batches so far (durable sinks; the closing footer not counted). */
  get footerBytesWritten(): number {
    return this.writer.footerBytesWritten;
  }
  /**
   * Append a record batch from its body, assembled elsewhere (a bulk-run worker thread) by ./ipc-body.ts from a table
   * of this sink's schema with `compression`, which must be the sink's: the bytes `writeBuffers` writes for that table.
   */
  writeBody(b: RecordBatchBody, compression: ArrowCompression): void {
    if (this.closed) throw new Error(`${this.path}: sink is closed`);
    if (compression !== this.compression) throw new Error(`${this.path}: a record batch body compressed with ${compression} in a file of ${this.compression}`);
    if (this.body === null) throw new Error(`${this.path}: this schema's batches are not written from bodies`);
    if (b.length === 0) return;
    this.writer.writeBody(b);
    this.written(b.length);
  }
  /** Append a record batch (its schema must equal the sink's). */
  writeBatch(b: RecordBatch): void {
    if (this.closed) throw new Error(`${this.path}: sink is closed`);
    this.writer.write(b);
    this.written(b.numRows);
  }
  /** Write the footer and close the file. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    holding.delete(this);
    this.writer.finish();
    this.writer.flush();
    this.finalBytes = fstatSync(this.fd).size;
    closeSync(this.fd);
  }
}

/** The zstd encoder apache-arrow's writer uses (registered by ./zstd.ts once loaded). */
function zstdEncode(): (data: Uint8Array) => Uint8Array {
  const encode = compressionRegistry.get(CompressionType.ZSTD)?.encode;
  if (typeof encode !== 'function') throw new Error('zstd encoder not loaded: await zstdEncoder() before writing a compressed Arrow file');
  return encode;
}

/**
 * `finishedBytes` of a new sink of `schema`, before any batch: the magic and its padding (8 bytes), then what closing
 * writes (the schema lives in the footer).
 */
export function emptyFileBytes(schema: Schema): number {
  return 8 + footerBytesOf(schema) + CLOSING_BYTES + FOOTER_SLACK_BYTES;
}

/** Sink for step tables (`durable`: see `ArrowFileSink`). */
export function stepSink(path: string, compression: ArrowCompression = 'none', durable = false): ArrowFileSink {
  return new ArrowFileSink(path, STEP_SCHEMA, compression, durable);
}

/** Sink for episode tables (`durable`: see `ArrowFileSink`). */
export function episodeSink(path: string, compression: ArrowCompression = 'none', durable = false): ArrowFileSink {
  return new ArrowFileSink(path, EPISODE_SCHEMA, compression, durable);
}

/** Read a whole Arrow IPC file (or stream) into memory. Bytes that are neither are refused: apache-arrow reads some
 * of them (a short text file) as an empty table. */
export function readArrowFile(path: string): Table {
  const bytes = readFileSync(path);
  const file = bytes.length >= 6 && bytes.toString('latin1', 0, 6) === 'ARROW1';
  const stream = bytes.length >= 4 && bytes.readUInt32LE(0) === 0xffffffff;
  if (!file && !stream) throw new Error('not an Arrow IPC file or stream (no ARROW1 magic, no stream continuation marker)');
  return tableFromIPC(bytes);
}
