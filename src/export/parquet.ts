/**
 * Parquet writing and reading for trajectories (`ycgym run --format parquet`), through parquet-wasm (the Rust
 * `parquet` crate compiled to WebAssembly). The files hold exactly the Arrow schema of `schema.ts` (metadata
 * included, stored by the writer as `ARROW:schema`), zstd-compressed, and are read by pyarrow, polars and DuckDB
 * without any extension.
 *
 * Output is deterministic: the same record batches in the same order give the same bytes (no time stamps; the
 * writer's `created_by` names the parquet-rs version pinned in package-lock.json).
 */
import { closeSync, openAsBlob, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { DataType, makeData, RecordBatch, RecordBatchStreamWriter, Struct, tableFromIPC, type Data, type Schema, type Table } from 'apache-arrow';
import * as pq from 'parquet-wasm/esm';
import { bodyColumns, bodyMessage, recordBatch, type TableBuffers } from './arrow.js';
import { recordBatchBody, type BodyColumn, type RecordBatchBody } from './ipc-body.js';
import { EPISODE_SCHEMA, STEP_SCHEMA } from './schema.js';

let ready = false;

/** Data of `type` without rows (a list's offsets and its item child included). */
function emptyData(type: DataType): Data {
  if (DataType.isList(type)) {
    const item = type.children[0]?.type as DataType;
    return makeData({ type, length: 0, nullCount: 0, valueOffsets: new Int32Array(1), child: emptyData(item) });
  }
  if (DataType.isStruct(type)) return makeData({ type, length: 0, nullCount: 0, children: type.children.map((f) => emptyData(f.type)) });
  return makeData({ type, length: 0, nullCount: 0 });
}

/** A record batch of `schema` without rows. */
function emptyBatch(schema: Schema): RecordBatch {
  return new RecordBatch(schema, emptyData(new Struct(schema.fields)) as Data<Struct>);
}

/** Instantiate the WebAssembly module once (synchronously, from the file the package ships). */
function init(): void {
  if (ready) return;
  // Resolved through node_modules, so it works from the build, from an installed npm package and from the
  // server bundle of the Python wheel (which ships this one file of the package beside the bundle).
  const path = createRequire(import.meta.url).resolve('parquet-wasm/esm/parquet_wasm_bg.wasm');
  pq.initSync({ module: readFileSync(path) });
  ready = true;
}

/** Rows per row group: bounds the writer's memory and lets readers skip and parallelise. */
export const ROW_GROUP_ROWS = 65536;

function writerProperties(): pq.WriterProperties {
  return (
    new pq.WriterPropertiesBuilder()
      .setCompression(pq.Compression.ZSTD)
      // Long texts: dictionary encoding hashes every value and rarely matches; zstd takes the repetition.
      .setColumnDictionaryEnabled('observation_text', false)
      .setMaxRowGroupSize(ROW_GROUP_ROWS)
      .build()
  );
}

/** An apache-arrow record batch as a parquet-wasm (WebAssembly memory) record batch, through the IPC stream format. */
function toWasm(b: RecordBatch): pq.RecordBatch {
  const w = new RecordBatchStreamWriter();
  w.write(b);
  w.finish();
  return fromStream(w.toUint8Array(true));
}

/**
 * One-batch IPC streams of one schema, in a buffer reused from batch to batch: the bytes a RecordBatchStreamWriter
 * writes for the record batch of a body's buffers (./ipc-body.ts; the schema message, the batch's, end of stream),
 * without the record batch, the writer's assembly and the joining of its output into a new buffer per batch.
 */
export class IpcStreamBuffer extends RecordBatchStreamWriter {
  private buf = new Uint8Array(1 << 16);
  private used = 0;
  private readonly schemaEnd: number;
  constructor(schema: Schema) {
    super();
    this.reset(undefined, schema);
    this.schemaEnd = this.used;
  }
  protected override _write(chunk: ArrayBufferView | ArrayBuffer): this {
    if (!this._started) return this;
    const b = ArrayBuffer.isView(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) : new Uint8Array(chunk);
    const need = this.used + b.byteLength;
    if (need > this.buf.byteLength) {
      let cap = this.buf.byteLength * 2;
      while (cap < need) cap *= 2;
      const next = new Uint8Array(cap);
      next.set(this.buf.subarray(0, this.used));
      this.buf = next;
    }
    this.buf.set(b, this.used);
    this.used = need;
    this._position += b.byteLength;
    return this;
  }
  /** The stream of the batch `b` (an uncompressed body): a view of the buffer, valid until the next call. */
  streamOf(b: RecordBatchBody): Uint8Array {
    this.used = this.schemaEnd;
    this._recordBatchBlocks = [];
    this._writeMessage(bodyMessage(b, null));
    for (const c of b.chunks) this._write(c);
    this._writeFooter(this._schema as Schema);
    return this.buf.subarray(0, this.used);
  }
}

/** The one record batch of an IPC stream, in parquet-wasm's memory (the bytes are copied: the caller may reuse them). */
function fromStream(bytes: Uint8Array): pq.RecordBatch {
  const t = pq.Table.fromIPCStream(bytes);
  try {
    const out = t.recordBatch(0);
    if (out === undefined) throw new Error('parquet: empty IPC stream');
    return out;
  } finally {
    t.free();
  }
}

function writeAll(fd: number, b: Uint8Array): void {
  let off = 0;
  while (off < b.byteLength) off += writeSync(fd, b, off, b.byteLength - off);
}

/**
 * Streams record batches of one schema into a zstd-compressed Parquet file. `writeBuffers`/`writeBatch` queue
 * a batch (one per episode); `drain()` lets the writer catch up (await it now and then to bound memory);
 * `close()` writes the footer.
 */
export class ParquetFileSink {
  private readonly fd: number;
  private controller!: ReadableStreamDefaultController<pq.RecordBatch>;
  private readonly done: Promise<void>;
  private failure: unknown = null;
  private closed = false;
  /** The schema's columns for ./ipc-body.ts and the stream buffer (null: batches go through apache-arrow's writer). */
  private readonly body: { columns: BodyColumn[]; stream: IpcStreamBuffer } | null;
  rows = 0;
  constructor(
    readonly path: string,
    readonly schema: Schema,
  ) {
    init();
    const columns = bodyColumns(schema);
    this.body = columns === null ? null : { columns, stream: new IpcStreamBuffer(schema) };
    this.fd = openSync(path, 'w');
    const source = new ReadableStream<pq.RecordBatch>({
      start: (c) => {
        this.controller = c;
      },
    });
    // The transform reads the first batch (for the schema) before it resolves: do not await it before writing.
    const bytes = pq.transformParquetStream(source, writerProperties());
    const fd = this.fd;
    this.done = (async () => {
      const out = (await bytes) as ReadableStream<Uint8Array>;
      for await (const chunk of out) writeAll(fd, chunk);
    })().catch((e: unknown) => {
      this.failure = e;
    });
    // Start with an empty batch so that a file without rows still carries the schema.
    this.pushBatch(emptyBatch(schema));
  }
  private pushBatch(b: RecordBatch): void {
    this.check();
    this.controller.enqueue(toWasm(b));
    this.rows += b.numRows;
  }
  private check(): void {
    if (this.closed) throw new Error(`${this.path}: sink is closed`);
    if (this.failure !== null) throw this.failure instanceof Error ? this.failure : new Error(String(this.failure));
  }
  /**
   * Append a batch of rows given as raw buffers: to parquet-wasm as the IPC stream of its body (./ipc-body.ts, built
   * in a reused buffer), the bytes a RecordBatchStreamWriter writes for `recordBatch(schema, t)`.
   */
  writeBuffers(t: TableBuffers): void {
    if (t.length === 0) return;
    const body = this.body === null ? null : recordBatchBody(this.body.columns, t, null);
    if (body === null || this.body === null) {
      this.pushBatch(recordBatch(this.schema, t));
      return;
    }
    this.check();
    this.controller.enqueue(fromStream(this.body.stream.streamOf(body)));
    this.rows += t.length;
  }
  /** Append a record batch whose fields equal the sink's schema. */
  writeBatch(b: RecordBatch): void {
    this.pushBatch(new RecordBatch(this.schema, b.data));
  }
  /** Batches queued and not yet taken by the writer. */
  backlog(): number {
    return this.closed ? 0 : Math.max(0, 1 - (this.controller.desiredSize ?? 1));
  }
  /** Let the writer take queued batches until at most `batches` wait. */
  async drain(batches = 0): Promise<void> {
    while (this.failure === null && this.backlog() > batches) await new Promise<void>((r) => setImmediate(r));
  }
  /** Write the footer and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.controller.close();
    await this.done;
    closeSync(this.fd);
    if (this.failure !== null) throw this.failure instanceof Error ? this.failure : new Error(String(this.failure));
  }
}

/** Streaming sink for step tables. */
export function stepParquetSink(path: string): ParquetFileSink {
  return new ParquetFileSink(path, STEP_SCHEMA);
}

/** Write one table (given as raw buffers) to a Parquet file in one go (small tables: the episode table). */
export function writeParquetBuffers(path: string, schema: Schema, t: TableBuffers): void {
  init();
  const batch = t.length > 0 ? recordBatch(schema, t) : emptyBatch(schema);
  const w = new RecordBatchStreamWriter();
  w.write(batch);
  w.finish();
  const table = pq.Table.fromIPCStream(w.toUint8Array(true));
  const bytes = pq.writeParquet(table, writerProperties());
  const fd = openSync(path, 'w');
  try {
    writeAll(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

/** Write episode rows' buffers to `path` as Parquet. */
export function writeEpisodesParquet(path: string, t: TableBuffers): void {
  writeParquetBuffers(path, EPISODE_SCHEMA, t);
}

/** Read a whole Parquet file into an apache-arrow table (schema metadata included). */
export function readParquetFile(path: string): Table {
  init();
  const t = pq.readParquet(readFileSync(path));
  return tableFromIPC(t.intoIPCStream());
}

/**
 * The record batches of a Parquet file, streamed from disk (bounded memory), with only the columns named
 * (all when omitted).
 */
export async function* readParquetBatches(path: string, columns?: readonly string[]): AsyncGenerator<RecordBatch> {
  init();
  const file = await pq.ParquetFile.fromFile(await openAsBlob(path));
  try {
    const stream = (await file.stream(columns ? { columns: [...columns] } : null)) as ReadableStream<pq.RecordBatch>;
    for await (const b of stream) yield* tableFromIPC(b.intoIPCStream()).batches;
  } finally {
    file.free();
  }
}
