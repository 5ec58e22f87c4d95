import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { ArrowFileSink, bodyColumns, readArrowFile, recordBatch, stepBuilder, TableBuilder, type ArrowCompression } from '../../src/export/arrow.js';
import { recordBatchBody, type RecordBatchBody } from '../../src/export/ipc-body.js';
import { IpcStreamBuffer, ParquetFileSink } from '../../src/export/parquet.js';
import { RecordBatchStreamWriter } from 'apache-arrow';
import { rollout } from '../../src/export/rollout.js';
import { arrowSchema, STEP_SCHEMA, type ColumnDef } from '../../src/export/schema.js';
import { STEP_COLUMNS } from '../../src/export/columns.js';
import { packTable, unpackTable, type TableBuffers } from '../../src/export/table-builder.js';
import { zstdEncoder } from '../../src/export/zstd.js';
import { zstdLevelEncoder } from '../../src/export/zstd-encode.js';
import { loadPreset } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-ipc-body-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** A bulk-run worker's encoder (its own WebAssembly instance), not the one registered with apache-arrow. */
let workerZstd: (d: Uint8Array) => Uint8Array;
beforeAll(async () => {
  await zstdEncoder();
  workerZstd = await zstdLevelEncoder();
});

const COLS: ColumnDef[] = [
  { name: 's', kind: 'utf8', nullable: true, doc: '' },
  { name: 'i', kind: 'int32', nullable: true, doc: '' },
  { name: 'l', kind: 'int64', nullable: false, doc: '' },
  { name: 'f', kind: 'float64', nullable: true, doc: '' },
  { name: 'b', kind: 'bool', nullable: true, doc: '' },
  { name: 'c', kind: 'bool', nullable: false, doc: '' },
  { name: 't', kind: 'timestamp_us', nullable: false, doc: '' },
  { name: 'kv', kind: 'list_struct', nullable: true, doc: '', fields: [{ name: 'k', kind: 'utf8' }, { name: 'v', kind: 'float64' }, { name: 'on', kind: 'bool' }] },
];
const SCHEMA = arrowSchema(COLS, 'steps');
type Row = { s: string | null; i: number | null; l: number; f: number | null; b: boolean | null; c: boolean; t: number; kv: { k: string; v: number; on: boolean }[] | null };

/** Write `chunks` to two files, through apache-arrow's record batch writer and through writeBuffers; their bytes. */
function both(name: string, chunks: TableBuffers[], compression: ArrowCompression, schema = SCHEMA): [Buffer, Buffer] {
  const a = join(dir, `${name}-${compression}-batch.arrow`);
  const b = join(dir, `${name}-${compression}-body.arrow`);
  const viaBatch = new ArrowFileSink(a, schema, compression);
  const viaBody = new ArrowFileSink(b, schema, compression);
  for (const t of chunks) {
    if (t.length > 0) viaBatch.writeBatch(recordBatch(schema, t));
    viaBody.writeBuffers(t);
  }
  viaBatch.close();
  viaBody.close();
  return [readFileSync(a), readFileSync(b)];
}

/**
 * The record batch body of the rows appended to `builder` as a bulk-run worker hands it over: assembled from the
 * builder's own buffers (`consume`, views), compressed with the worker's encoder, its chunks copied into one buffer
 * before the views go.
 */
function workerBody(builder: TableBuilder<object>, columns: Parameters<typeof recordBatchBody>[0], compression: ArrowCompression): RecordBatchBody {
  return builder.consume((t) => {
    const b = recordBatchBody(columns, t, compression === 'zstd' ? workerZstd : null);
    if (b === null) throw new Error('no body');
    const bytes = new Uint8Array(b.byteLength);
    let at = 0;
    for (const c of b.chunks) {
      bytes.set(c, at);
      at += c.byteLength;
    }
    expect(at).toBe(b.byteLength);
    return { ...b, chunks: [bytes] };
  });
}

/** Write worker bodies (`workerBody`) to a file through `ArrowFileSink.writeBody`; its bytes. */
function viaBodies(name: string, bodies: RecordBatchBody[], compression: ArrowCompression, schema = SCHEMA): Buffer {
  const path = join(dir, `${name}-${compression}-worker.arrow`);
  const sink = new ArrowFileSink(path, schema, compression);
  for (const b of bodies) sink.writeBody(b, compression);
  sink.close();
  return readFileSync(path);
}

describe('record batch bodies written without apache-arrow (ipc-body.ts)', () => {
  it('write the bytes of apache-arrow\'s writer for random chunks of every column kind, nulls and all-null columns, zstd and plain', () => {
    const row = (allNull: boolean) =>
      fc.record({
        s: allNull ? fc.constant(null) : fc.option(fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', 'é✓', 'x'.repeat(300))), { nil: null }),
        i: allNull ? fc.constant(null) : fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { nil: null }),
        l: fc.maxSafeInteger(),
        f: allNull ? fc.constant(null) : fc.option(fc.double(), { nil: null }),
        b: allNull ? fc.constant(null) : fc.option(fc.boolean(), { nil: null }),
        c: fc.boolean(),
        t: fc.nat(),
        kv: allNull ? fc.constant(null) : fc.option(fc.array(fc.record({ k: fc.string({ maxLength: 5 }), v: fc.double(), on: fc.boolean() }), { maxLength: 4 }), { nil: null }),
      });
    // Repetitive chunks compress; short or random ones may not (their buffers are then written as they are, prefix -1).
    const chunk = fc.oneof(
      fc.array(row(false), { maxLength: 10 }),
      fc.array(row(true), { minLength: 1, maxLength: 10 }),
      fc.array(row(false), { minLength: 60, maxLength: 300 }),
      row(false).chain((r) => fc.integer({ min: 1, max: 400 }).map((n) => Array.from({ length: n }, () => r))),
    );
    fc.assert(
      fc.property(fc.array(chunk, { minLength: 1, maxLength: 4 }), fc.boolean(), (chunks, packed) => {
        const builder = new TableBuilder<Row>(COLS);
        const tables = chunks.map((rows) => {
          for (const r of rows) builder.append(r);
          const t = builder.finish();
          if (!packed) return t;
          // As the main thread gets them from a worker: views of a shared arena.
          const arena = new SharedArrayBuffer(1 << 22);
          return unpackTable(packTable(t, new Uint8Array(arena)), arena);
        });
        for (const t of tables) if (t.length > 0) expect(recordBatchBody(bodyColumns(SCHEMA) ?? [], t, null)).not.toBeNull();
        for (const compression of ['zstd', 'none'] as const) {
          const [a, b] = both('random', tables, compression);
          expect(b.equals(a)).toBe(true);
          // As a worker thread assembles and compresses them, from views of its builder (TableBuilder.consume).
          const wb = new TableBuilder<Row>(COLS);
          const bodies = chunks.map((rows) => {
            for (const r of rows) wb.append(r);
            return workerBody(wb as TableBuilder<object>, COLS, compression);
          });
          expect(viaBodies('random', bodies, compression).equals(a)).toBe(true);
        }
      }),
      { numRuns: 120 },
    );
  });

  it('write the bytes of apache-arrow\'s writer for greedy episodes\' step rows, and read back as the same table', () => {
    const cfg = loadPreset('default');
    const b = stepBuilder();
    const tables: TableBuffers[] = [];
    const bodies: Record<ArrowCompression, RecordBatchBody[]> = { zstd: [], none: [] };
    for (const seed of [1, 2, 3]) {
      for (const compression of ['zstd', 'none'] as const) {
        rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: seed, policy: 'greedy', preset: 'default', seed }, { steps: b, maxSteps: seed === 2 ? 7 : 400 });
        bodies[compression].push(workerBody(b as TableBuilder<object>, STEP_COLUMNS, compression));
      }
      rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: seed, policy: 'greedy', preset: 'default', seed }, { steps: b, maxSteps: seed === 2 ? 7 : 400 });
      tables.push(b.finish());
    }
    expect(bodyColumns(STEP_SCHEMA)).not.toBeNull();
    for (const compression of ['zstd', 'none'] as const) {
      const [x, y] = both('greedy', tables, compression, STEP_SCHEMA);
      expect(y.equals(x)).toBe(true);
      expect(viaBodies('greedy', bodies[compression], compression, STEP_SCHEMA).equals(x)).toBe(true);
      const t = readArrowFile(join(dir, `greedy-${compression}-body.arrow`));
      expect(t.numRows).toBe(tables.reduce((n, t) => n + t.length, 0));
    }
  });

  it('IpcStreamBuffer: the bytes of a RecordBatchStreamWriter for each batch, the buffer reused; Parquet files the same both ways', async () => {
    const row = fc.record({
      s: fc.option(fc.string({ maxLength: 40 }), { nil: null }),
      i: fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { nil: null }),
      l: fc.maxSafeInteger(),
      f: fc.option(fc.double(), { nil: null }),
      b: fc.option(fc.boolean(), { nil: null }),
      c: fc.boolean(),
      t: fc.nat(),
      kv: fc.option(fc.array(fc.record({ k: fc.string({ maxLength: 5 }), v: fc.double(), on: fc.boolean() }), { maxLength: 4 }), { nil: null }),
    });
    const cfg = loadPreset('default');
    const steps = stepBuilder();
    rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: 4, policy: 'greedy', preset: 'default', seed: 4 }, { steps, maxSteps: 60 });
    const greedy = steps.finish();
    const streamOf = (schema: typeof SCHEMA, t: TableBuffers): Buffer => {
      const w = new RecordBatchStreamWriter();
      w.write(recordBatch(schema, t));
      w.finish();
      return Buffer.from(w.toUint8Array(true));
    };
    const chunksArb = fc.array(fc.oneof(fc.array(row, { minLength: 1, maxLength: 10 }), fc.array(row, { minLength: 100, maxLength: 300 })), { minLength: 1, maxLength: 4 });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(chunksArb, async (chunks) => {
        const builder = new TableBuilder<Row>(COLS);
        const tables = chunks.map((rows) => {
          for (const r of rows) builder.append(r);
          return builder.finish();
        });
        const buf = new IpcStreamBuffer(SCHEMA);
        for (const t of tables) expect(Buffer.from(buf.streamOf(recordBatchBody(bodyColumns(SCHEMA) ?? [], t, null) ?? { length: 0, nodes: [], regions: [], byteLength: 0, chunks: [] })).equals(streamOf(SCHEMA, t))).toBe(true);
        const steps = new IpcStreamBuffer(STEP_SCHEMA);
        expect(Buffer.from(steps.streamOf(recordBatchBody(bodyColumns(STEP_SCHEMA) ?? [], greedy, null) ?? { length: 0, nodes: [], regions: [], byteLength: 0, chunks: [] })).equals(streamOf(STEP_SCHEMA, greedy))).toBe(true);
        // Parquet: batches through apache-arrow's stream writer and as bodies.
        run++;
        const a = join(dir, `p${run}-batch.parquet`);
        const b = join(dir, `p${run}-body.parquet`);
        const viaBatch = new ParquetFileSink(a, SCHEMA);
        const viaBody = new ParquetFileSink(b, SCHEMA);
        for (const t of tables) {
          viaBatch.writeBatch(recordBatch(SCHEMA, t));
          viaBody.writeBuffers(t);
        }
        await viaBatch.close();
        await viaBody.close();
        expect(readFileSync(b).equals(readFileSync(a))).toBe(true);
      }),
      { numRuns: 25 },
    );
  });

  it('ArrowFileSink.writeBody refuses a body of another compression and a closed sink, and takes an empty body as no batch', () => {
    const wb = new TableBuilder<Row>(COLS);
    wb.append({ s: 'a', i: 1, l: 2, f: 0.5, b: true, c: false, t: 3, kv: null });
    const plain = workerBody(wb as TableBuilder<object>, COLS, 'none');
    const path = join(dir, 'refusals.arrow');
    const sink = new ArrowFileSink(path, SCHEMA, 'zstd');
    expect(() => sink.writeBody(plain, 'none')).toThrow(/compressed with none in a file of zstd/);
    sink.writeBody({ length: 0, nodes: [], regions: [], byteLength: 0, chunks: [] }, 'zstd');
    expect(sink.rows).toBe(0);
    sink.close();
    expect(readArrowFile(path).numRows).toBe(0);
    expect(() => sink.writeBody(plain, 'zstd')).toThrow(/sink is closed/);
  });

  it('ArrowFileSink.writeBody copies small chunks given as Buffers: a caller reusing them after the call changes nothing written', () => {
    // Buffer's own slice is a view, not a copy: a durable sink, which holds batches back once its footer has grown
    // (`DURABLE_EVERY_BATCH_BYTES`), held a view of each small chunk and wrote what the caller put there since.
    const bodyOf = (j: number): RecordBatchBody => {
      const wb = new TableBuilder<Row>(COLS);
      for (let k = 0; k < 5; k++) wb.append({ s: `row ${(j + k) % 10}`, i: j + k, l: 2 * k + j, f: (j + k) / 4, b: (j + k) % 2 === 0, c: true, t: k, kv: [{ k: 'x', v: j, on: true }] });
      return workerBody(wb as TableBuilder<object>, COLS, 'none');
    };
    const bodies = [bodyOf(0), bodyOf(1), bodyOf(2)];
    for (const b of bodies) expect(b.chunks.map((c) => c.byteLength)).toEqual((bodies[0] as RecordBatchBody).chunks.map((c) => c.byteLength));
    const path = join(dir, 'reused-chunks.arrow');
    const want = join(dir, 'reused-chunks-want.arrow');
    const sink = new ArrowFileSink(path, SCHEMA, 'none', true);
    const other = new ArrowFileSink(want, SCHEMA, 'none', true);
    const reused = (bodies[0] as RecordBatchBody).chunks.map((c) => Buffer.alloc(c.byteLength));
    for (let k = 0; k < 400; k++) {
      const body = bodies[k % 3] as RecordBatchBody;
      body.chunks.forEach((c, i) => (reused[i] as Buffer).set(c));
      sink.writeBody({ ...body, chunks: reused }, 'none');
      other.writeBody(body, 'none');
    }
    for (const c of reused) c.fill(0xff);
    sink.close();
    other.close();
    expect(readArrowFile(path).numRows).toBe(2000);
    expect(readFileSync(path).equals(readFileSync(want))).toBe(true);
  });

  it('regions and lengths: compressed buffers behind their uncompressed length, -1 where compressing does not shorten them', () => {
    const b = new TableBuilder<{ s: string }>([{ name: 's', kind: 'utf8', nullable: false, doc: '' }]);
    b.append({ s: 'abc' });
    const calls: number[] = [];
    const body = recordBatchBody([{ kind: 'utf8' }], b.finish(), (d) => (calls.push(d.byteLength), new Uint8Array(d.byteLength === 8 ? 4 : 9)));
    // Validity (none), offsets (8 bytes: compressed to 4), values (3 bytes: "compressed" to 9, kept).
    expect(calls).toEqual([8, 3]);
    expect(body?.nodes).toEqual([1, 0]);
    expect(body?.regions).toEqual([0, 0, 0, 12, 16, 11]);
    expect(body?.byteLength).toBe(32);
    const bytes = Buffer.concat(body?.chunks ?? []);
    expect(bytes.length).toBe(32);
    expect(bytes.readBigInt64LE(0)).toBe(8n);
    expect(bytes.readBigInt64LE(16)).toBe(-1n);
    expect(bytes.subarray(24, 27).toString()).toBe('abc');
  });
});
