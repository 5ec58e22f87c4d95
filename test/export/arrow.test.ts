import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataType, RecordBatchFileReader } from 'apache-arrow';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ArrowFileSink, readArrowFile, recordBatch, stepBuilder, stepSink, TableBuilder } from '../../src/export/arrow.js';
import { zstdEncoder } from '../../src/export/zstd.js';
import { loadPreset } from '../../src/config/load.js';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { packedSize, packTable, unpackTable, type PackedTable, type TableBuffers } from '../../src/export/table-builder.js';
import { arrowSchema, EPISODE_COLUMNS, EPISODE_SCHEMA, isoToMicros, STEP_COLUMNS, STEP_SCHEMA, type ColumnDef } from '../../src/export/schema.js';
import type { TextSource } from '../../src/export/columns.js';
import { rollout, stepRow } from '../../src/export/rollout.js';
import { Env } from '../../src/env/env.js';
import type { Simulation } from '../../src/sim/index.js';
import { listChain, memoList, memoRendered, PyFloat, pyJsonAppend, pyJsonDumps, type Out } from '../../src/sim/py/pyjson.js';
import { oraclePyJsonDumps } from '../helpers/pyjson-oracle.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-arrow-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COLS: ColumnDef[] = [
  { name: 's', kind: 'utf8', nullable: true, doc: '' },
  { name: 'i', kind: 'int32', nullable: false, doc: '' },
  { name: 'l', kind: 'int64', nullable: false, doc: '' },
  { name: 'f', kind: 'float64', nullable: true, doc: '' },
  { name: 'b', kind: 'bool', nullable: false, doc: '' },
  { name: 't', kind: 'timestamp_us', nullable: false, doc: '' },
];
interface Row {
  s: string | null;
  i: number;
  l: number;
  f: number | null;
  b: boolean;
  t: number;
}


/** COLS and a nullable list<struct<k, v>> column, and a row of them whose texts are at most `maxText` long. */
const KV_COLS: ColumnDef[] = [...COLS, { name: 'kv', kind: 'list_struct', nullable: true, doc: '', fields: [{ name: 'k', kind: 'utf8' }, { name: 'v', kind: 'float64' }] }];
const kvRow = (maxText: number) =>
  fc.record({
    s: fc.option(fc.string({ maxLength: maxText }), { nil: null }),
    i: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    l: fc.maxSafeInteger(),
    f: fc.option(fc.double(), { nil: null }),
    b: fc.boolean(),
    t: fc.nat(),
    kv: fc.option(fc.dictionary(fc.string({ maxLength: 4 }), fc.double(), { maxKeys: 3 }), { nil: null }),
  });

describe('arrow table builder and file sink', () => {
  it('round-trips every column kind, nulls, negative int64 and non-ASCII text over several batches', () => {
    const schema = arrowSchema(COLS, 'steps');
    const b = new TableBuilder<Row>(COLS);
    const rows: Row[] = [];
    for (let k = 0; k < 1000; k++) {
      rows.push({
        s: k % 7 === 3 ? null : `row ${k} ünïcødé ✓ ${'x'.repeat(k % 50)}`,
        i: k - 500,
        l: (k - 500) * 123_456_789_013,
        f: k % 5 === 0 ? null : k / 3,
        b: k % 3 === 0,
        t: isoToMicros('2025-01-01T09:00:00') + k * 1_000_123,
      });
    }
    const path = join(dir, 'kinds.arrow');
    const sink = new ArrowFileSink(path, schema);
    for (let k = 0; k < rows.length; k++) {
      b.append(rows[k] as Row);
      if (k % 300 === 299) sink.writeBuffers(b.finish());
    }
    sink.writeBuffers(b.finish());
    sink.close();
    const t = readArrowFile(path);
    expect(t.numRows).toBe(1000);
    expect(t.batches.length).toBe(4);
    const back = t.toArray().map((r) => r as Record<string, unknown>);
    for (let k = 0; k < rows.length; k++) {
      const r = rows[k] as Row;
      const x = back[k] as Record<string, unknown>;
      expect(x['s']).toBe(r.s);
      expect(x['i']).toBe(r.i);
      expect(Number(x['l'])).toBe(r.l);
      expect(x['f']).toBe(r.f);
      expect(x['b']).toBe(r.b);
    }
    const tcol = t.getChild('t');
    const raw = tcol?.data[0]?.values as BigInt64Array;
    expect(Number(raw[1])).toBe(rows[1]?.t);
  });

  it('a durable sink (a short footer) is a complete Arrow file after every batch and, closed, the bytes of a plain sink (both codecs, both write paths)', async () => {
    // What a server that records with it leaves when killed between batches: every batch written so far, readable.
    await zstdEncoder();
    const cfg = loadPreset('default');
    for (const compression of ['none', 'zstd'] as const) {
      const plainPath = join(dir, `plain-${compression}.arrow`);
      const durablePath = join(dir, `durable-${compression}.arrow`);
      const plain = stepSink(plainPath, compression);
      const durable = stepSink(durablePath, compression, true);
      const rows: number[] = [];
      for (const seed of [1, 2, 3, 4]) {
        const b = stepBuilder();
        rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: seed, policy: 'greedy', preset: 'default', seed }, { steps: b, maxSteps: 10 + seed });
        const t = b.finish();
        rows.push(t.length);
        if (seed % 2 === 1) {
          plain.writeBuffers(t);
          durable.writeBuffers(t);
        } else {
          // The other path: a record batch (apache-arrow's assembly).
          plain.writeBatch(recordBatch(STEP_SCHEMA, t));
          durable.writeBatch(recordBatch(STEP_SCHEMA, t));
        }
        const onDisk = readArrowFile(durablePath);
        expect(onDisk.batches.map((x) => x.numRows), `${compression} after episode ${seed}`).toEqual(rows);
      }
      plain.close();
      durable.close();
      expect(readFileSync(durablePath).equals(readFileSync(plainPath)), compression).toBe(true);
    }
  });

  it('a durable sink of many batches writes footers in proportion to its data, and its file stays readable', async () => {
    // A recording of many small batches (a server recording a long training run: a batch per episode) rewrote the
    // whole footer, which lists every batch, after every batch: 20,000 batches took 39 s against 1 s unrecorded, a
    // batch 3.5 ms and growing, on the server's one thread. Past a small footer, checkpoints are now amortised: one
    // when the batches held back reach the footer's size, or after a pause; the file on disk is always the last
    // checkpoint, a complete Arrow file.
    const path = join(dir, 'many-batches.arrow');
    // The batches the file's footer lists (what a reader opening it sees), without reading them.
    const onDisk = (): number => {
      const r = RecordBatchFileReader.from(readFileSync(path)).open();
      return r.numRecordBatches;
    };
    const sink = stepSink(path, 'none', true);
    const b = stepBuilder();
    const cfg = loadPreset('default');
    const env = new Env();
    env.reset({ seed: 1, preset: cfg, options: { max_steps: 100_000, stall_steps: 0 } });
    const s = (env.simulation as Simulation).state;
    const n = 6000;
    for (let i = 0; i < n; i++) {
      const r = env.step('company status');
      b.append(stepRow({ runId: 'r', episodeId: i, policy: 'p', preset: 'default', seed: 1 }, 1, 'company status', r.observation, s.simTime, 0, false, false, s.startTime));
      sink.writeBuffers(b.finish());
      if (i === 99 || i % 500 === 499) {
        const listed = onDisk();
        // Every batch while the footer is short; then all but the last few.
        if (i < 150) expect(listed).toBe(i + 1);
        expect(listed).toBeGreaterThan(i - 100);
        expect(listed).toBeLessThanOrEqual(i + 1);
      }
    }
    // Left alone, the batches held back reach the disk with their footer (the pause's bound grows with the footer).
    await new Promise((r) => setTimeout(r, 600));
    expect(onDisk()).toBe(n);
    sink.close();
    expect(readArrowFile(path).batches.length).toBe(n);
    // Footers written by checkpoints: about as many bytes as the data (before, 24 bytes per batch listed, after every
    // batch: about 24 * n * n / 2 bytes, 430 MB here).
    expect(sink.footerBytesWritten).toBeGreaterThan(0);
    expect(sink.footerBytesWritten).toBeLessThan(1.25 * readFileSync(path).byteLength);
  });

  it('a process that exits without closing its durable sink leaves every batch in the file, held ones too', () => {
    // Held-back batches (past a short footer) would be lost by a script or server that ends without close(): at the
    // process's exit they are written with their footer (a kill, SIGKILL or out of memory, still loses them).
    const path = join(dir, 'exit-without-close.arrow');
    const script = `
      import { stepSink, stepBuilder } from ${JSON.stringify(new URL('../../dist/src/export/arrow.js', import.meta.url).href)};
      const b = stepBuilder();
      const row = { run_id: 'r', episode_id: 0, policy: 'p', preset: 'default', seed: 1, step: 0, action: null, observation_text: 'x', ok: true, exit_code: 0, command: null, sim_time: 0, funds_cents: 1, monthly_payroll_cents: 1, runway_months: 1, prestige_research: 1, prestige_inference: 1, prestige_data_environment: 1, prestige_training: 1, active_tasks: 0, planned_tasks: 0, completed_tasks: 0, reward: 0, reward_cents: 0, terminated: false, truncated: false, is_first: true, is_last: true, sim_day: 0, days_left: 1, trust: {} };
      const s = stepSink(${JSON.stringify(path)}, 'none', true);
      for (let i = 0; i < 1000; i++) { b.append({ ...row, episode_id: i }); s.writeBuffers(b.finish()); }
      process.exitCode = 0; // ends here, the sink never closed
    `;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(out.status, out.stderr).toBe(0);
    const t = readArrowFile(path);
    expect(t.numRows).toBe(1000);
    expect(Number(t.getChild('episode_id')?.get(999))).toBe(999);
  });

  it('append reads a row by column name whatever its keys: in column order, rotated, with an extra key, a null nullable value left out', () => {
    const names = KV_COLS.map((c) => c.name);
    fc.assert(
      fc.property(fc.array(fc.tuple(kvRow(20), fc.nat(), fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 20 }), (rows) => {
        const inOrder = new TableBuilder<Record<string, unknown>>(KV_COLS);
        const other = new TableBuilder<Record<string, unknown>>(KV_COLS);
        for (const [row, turn, extra, drop] of rows) {
          const r = row as Record<string, unknown>;
          inOrder.append(Object.fromEntries(names.map((n) => [n, r[n]])));
          const keys = [...names.slice(turn % names.length), ...names.slice(0, turn % names.length)];
          const o: Record<string, unknown> = {};
          for (const k of keys) if (!(drop && r[k] === null)) o[k] = r[k];
          if (extra) o['zz'] = 1;
          other.append(o);
        }
        expect(other.finish()).toEqual(inOrder.finish());
      }),
      { numRuns: 300 },
    );
    const b = new TableBuilder<Record<string, unknown>>(KV_COLS);
    expect(() => b.append({ s: 'x', i: null, l: 1, f: null, b: null, t: 0, kv: null })).toThrow('column i is not nullable');
  });

  it('the exporters build step rows with the step columns as keys, in column order (append reads those by field index)', () => {
    const env = new Env();
    const first = env.reset({ seed: 1 });
    const s = (env.simulation as Simulation).state;
    const meta = { runId: 'r', episodeId: 0, policy: 'greedy', preset: 'default', seed: 1 };
    const row = stepRow(meta, 0, null, first.observation, s.simTime, 0, false, false, s.startTime, s.horizonEnd);
    expect(Object.keys(row)).toEqual(STEP_COLUMNS.map((c) => c.name));
  });

  it('utf8 column bytes equal Buffer.from(s, "utf8") for any string, short or long (lone surrogates included)', () => {
    const cols: ColumnDef[] = [{ name: 's', kind: 'utf8', nullable: false, doc: '' }];
    const piece = fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.string({ maxLength: 200 }), fc.constantFrom('\ud800', '\udfff x', '\u00e9', '\u{1f600}'));
    fc.assert(
      fc.property(fc.array(fc.array(piece, { maxLength: 8 }).map((p) => p.join('')), { minLength: 1, maxLength: 40 }), (strings) => {
        const b = new TableBuilder<{ s: string }>(cols);
        for (const s of strings) b.append({ s });
        const c = b.finish().columns[0];
        const offsets = c?.offsets as Int32Array;
        strings.forEach((s, k) => {
          const got = Buffer.from((c?.values as Uint8Array).subarray(offsets[k], offsets[k + 1]));
          expect(got.equals(Buffer.from(s, 'utf8'))).toBe(true);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a utf8 column given UTF-8 bytes stores exactly what it stores for the string, the bytes copied at append', () => {
    const cols: ColumnDef[] = [{ name: 's', kind: 'utf8', nullable: true, doc: '' }];
    fc.assert(
      fc.property(fc.array(fc.option(fc.string({ maxLength: 300 }), { nil: null }), { minLength: 1, maxLength: 30 }), (strings) => {
        const asText = new TableBuilder<{ s: string | null }>(cols);
        const asBytes = new TableBuilder<{ s: string | Uint8Array | null }>(cols);
        const scratch = new Uint8Array(2048);
        for (const s of strings) {
          asText.append({ s });
          if (s === null) asBytes.append({ s });
          else {
            // A reused scratch buffer: the builder must copy it.
            const n = new TextEncoder().encodeInto(s, scratch).written;
            asBytes.append({ s: scratch.subarray(0, n) });
            scratch.fill(0x3f);
          }
        }
        expect(asBytes.finish()).toEqual(asText.finish());
      }),
      { numRuns: 200 },
    );
  });

  it('a utf8 column given a TextSource stores exactly what it stores for the text the source appends (as a string, or JSON rendered into its bytes)', () => {
    const cols: ColumnDef[] = [{ name: 's', kind: 'utf8', nullable: true, doc: '' }];
    const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Out>;
    const cell = fc.oneof(fc.constant(null), fc.string({ maxLength: 300 }).map((s) => ({ s })), json.map((v) => ({ v })));
    fc.assert(
      fc.property(fc.array(cell, { minLength: 1, maxLength: 30 }), (cells) => {
        const asText = new TableBuilder<{ s: string | null }>(cols);
        const asSource = new TableBuilder<{ s: string | TextSource | null }>(cols);
        for (const c of cells) {
          if (c === null) {
            asText.append({ s: null });
            asSource.append({ s: null });
          } else if ('s' in c) {
            asText.append({ s: c.s });
            asSource.append({ s: { appendText: (sink) => sink.string(c.s) } });
          } else {
            asText.append({ s: pyJsonDumps(c.v, 2) });
            asSource.append({ s: { appendText: (sink) => pyJsonAppend(c.v, 2, sink) } });
          }
        }
        expect(asSource.finish()).toEqual(asText.finish());
      }),
      { numRuns: 200 },
    );
  });

  it('a utf8 column takes listings of one chain (memoList) across its chunks: each text as printed alone, whatever the chunk before held', () => {
    const cols: ColumnDef[] = [{ name: 's', kind: 'utf8', nullable: false, doc: '' }];
    const entries = Array.from({ length: 12 }, (_, i) => memoRendered({ task_id: `Task-${i}`, required_qty: new PyFloat(i + 0.5) } as Out));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(11), fc.nat(11), fc.constantFrom('row', 'other', 'finish', 'consume')), { minLength: 1, maxLength: 20 }), (steps) => {
        const b = new TableBuilder<{ s: string | TextSource }>(cols);
        const chain = listChain();
        let list = entries.slice(0, 8);
        const want: string[] = [];
        const check = (values: Uint8Array, offsets: Int32Array): void => {
          const got = want.map((_, k) => Buffer.from(values).toString('latin1', offsets[k], offsets[k + 1]));
          expect(got).toEqual(want);
          want.length = 0;
        };
        for (const [drop, add, op] of steps) {
          if (op === 'finish') {
            const t = b.finish();
            check(t.columns[0]?.values as Uint8Array, t.columns[0]?.offsets as Int32Array);
            continue;
          }
          if (op === 'consume') {
            b.consume((t) => check(t.columns[0]?.values as Uint8Array, t.columns[0]?.offsets as Int32Array));
            continue;
          }
          if (op === 'other') {
            b.append({ s: 'x'.repeat(drop * 40) });
            want.push('x'.repeat(drop * 40));
            continue;
          }
          list = list.slice();
          list.splice(drop % list.length, 1);
          list.splice(add % (list.length + 1), 0, entries[add] as Out);
          const doc: Out = { tasks: memoList(list, chain) };
          b.append({ s: { appendText: (sink) => pyJsonAppend(doc, 2, sink) } });
          want.push(oraclePyJsonDumps(doc, 2));
        }
        const t = b.finish();
        check(t.columns[0]?.values as Uint8Array, t.columns[0]?.offsets as Int32Array);
      }),
      { numRuns: 200 },
    );
  });

  it('packTable/unpackTable: a table chunk packed into one arena reads back as the same buffers (8-byte aligned, zero padding)', () => {
    const cols = KV_COLS;
    const row = kvRow(50);
    fc.assert(
      fc.property(fc.array(row, { maxLength: 40 }), fc.nat(64), (rows, garbage) => {
        const b = new TableBuilder<Row & { kv: Record<string, number> | null }>(cols);
        for (const r of rows) b.append(r);
        const t = b.finish();
        // A reused arena: stale bytes everywhere, and a shared one as the worker threads use.
        const arena = new SharedArrayBuffer(packedSize(t) + garbage);
        new Uint8Array(arena).fill(0xa5);
        const layout = packTable(t, new Uint8Array(arena));
        const back = unpackTable(structuredClone(layout), arena);
        const plain = (x: TableBuffers): unknown => ({
          length: x.length,
          columns: x.columns.map((c) => ({ values: [...c.values], offsets: c.offsets ? [...c.offsets] : null, validity: c.validity ? [...c.validity] : null, nullCount: c.nullCount, items: c.items ? plain(c.items) : undefined })),
        });
        expect(plain(back)).toEqual(plain(t));
        const offs = (p: PackedTable): number[] => p.columns.flatMap((c) => [c.values[0], ...(c.offsets ? [c.offsets[0]] : []), ...(c.validity ? [c.validity[0]] : []), ...(c.items ? offs(c.items) : [])]);
        for (const o of offs(layout)) expect(o % 8).toBe(0);
      }),
      { numRuns: 150 },
    );
    const small = new TableBuilder<Row>(COLS);
    small.append({ s: 'abc', i: 1, l: 2, f: 3, b: true, t: 4 });
    const t = small.finish();
    expect(() => packTable(t, new Uint8Array(packedSize(t) - 1))).toThrow(RangeError);
  });

  it('TableBuilder.pack writes the bytes and layout of packTable(finish()) and starts over, as finish does', () => {
    const cols = KV_COLS;
    type KvRow = Row & { kv: Record<string, number> | null };
    const row = kvRow(90);
    // Chunks of up to 700 rows: past the builders' first capacities (256 offsets, 2 KiB of fixed values), so grown
    // buffers hold stale rows of an earlier, longer chunk beyond the rows packed.
    const chunk = fc.oneof(fc.array(row, { maxLength: 12 }), fc.array(row, { minLength: 250, maxLength: 700 }));
    fc.assert(
      fc.property(fc.array(chunk, { minLength: 1, maxLength: 4 }), fc.nat(64), (chunks, garbage) => {
        const viaFinish = new TableBuilder<KvRow>(cols);
        const direct = new TableBuilder<KvRow>(cols);
        for (const rows of chunks) {
          for (const r of rows) viaFinish.append(r);
          for (const r of rows) direct.append(r);
          const size = direct.packedSize();
          const t = viaFinish.finish();
          expect(size).toBe(packedSize(t));
          // Arenas full of stale bytes: every byte pack owns is written (padding zeroed).
          const a = new Uint8Array(new SharedArrayBuffer(size + garbage)).fill(0xa5);
          const b = new Uint8Array(new SharedArrayBuffer(size + garbage)).fill(0xa5);
          const expected = packTable(t, a);
          expect(direct.pack(b)).toEqual(expected);
          expect(Buffer.from(b).equals(Buffer.from(a))).toBe(true);
          expect(direct.length).toBe(0);
          expect(direct.packedSize()).toBe(packedSize(new TableBuilder<KvRow>(cols).finish()));
        }
      }),
      { numRuns: 60 },
    );
    const small = new TableBuilder<Row>(COLS);
    small.append({ s: 'abc', i: 1, l: 2, f: 3, b: true, t: 4 });
    expect(() => small.pack(new Uint8Array(small.packedSize() - 1))).toThrow(RangeError);
    // Refused before anything was packed: the row is still there.
    expect(small.length).toBe(1);
  });

  it('setBool changes an appended row of a non-nullable bool column and refuses anything else', () => {
    const b = new TableBuilder<Row>(COLS);
    for (let k = 0; k < 20; k++) b.append({ s: 'x', i: k, l: k, f: null, b: k % 2 === 0, t: k });
    b.setBool(19, 'b', true);
    b.setBool(0, 'b', false);
    const twin = new TableBuilder<Row>(COLS);
    for (let k = 0; k < 20; k++) twin.append({ s: 'x', i: k, l: k, f: null, b: k === 19 || (k % 2 === 0 && k !== 0), t: k });
    expect(() => b.setBool(20, 'b', true)).toThrow(/row 20 is not appended/);
    expect(() => b.setBool(-1, 'b', true)).toThrow(RangeError);
    expect(() => b.setBool(0, 'i', true)).toThrow(/not a non-nullable bool column/);
    expect(() => b.setBool(0, 'nope', true)).toThrow(/not a non-nullable bool column/);
    expect(b.finish()).toEqual(twin.finish());
  });

  it('a builder reused after finish keeps nothing of the earlier rows (bits, nulls, text, list items)', () => {
    const cols: ColumnDef[] = [
      ...COLS,
      { name: 'kv', kind: 'list_struct', nullable: true, doc: '', fields: [{ name: 'k', kind: 'utf8' }, { name: 'v', kind: 'float64' }] },
    ];
    const b = new TableBuilder<Row & { kv: Record<string, number> | null }>(cols);
    for (let k = 0; k < 100; k++) b.append({ s: k % 2 ? null : 'long text '.repeat(20), i: 7, l: -1, f: null, b: true, t: 5, kv: k % 3 ? null : { a: 1, b: 2 } });
    const first = b.finish();
    const second = b.finish();
    expect(second.length).toBe(0);
    for (const c of second.columns) expect(c.nullCount).toBe(0);
    b.append({ s: 'x', i: 1, l: 2, f: 3, b: false, t: 4, kv: { z: 9 } });
    const third = b.finish();
    const fresh = new TableBuilder<Row & { kv: Record<string, number> | null }>(cols);
    fresh.append({ s: 'x', i: 1, l: 2, f: 3, b: false, t: 4, kv: { z: 9 } });
    expect(third).toEqual(fresh.finish());
    expect(first.columns[0]?.nullCount).toBe(50);
  });

  it('writes a valid empty file and rejects nulls in non-nullable columns', () => {
    const path = join(dir, 'empty.arrow');
    new ArrowFileSink(path, STEP_SCHEMA).close();
    const t = readArrowFile(path);
    expect(t.numRows).toBe(0);
    expect(t.schema.fields.map((f) => f.name)).toEqual(STEP_COLUMNS.map((c) => c.name));
    const b = new TableBuilder<Row>(COLS);
    expect(() => b.append({ s: 'x', i: 1, l: 1, f: 1, b: true, t: null as unknown as number })).toThrow(/not nullable/);
  });

  it('schemas: plain types (no dictionary), nullability and metadata as documented', () => {
    for (const [schema, cols, name] of [
      [STEP_SCHEMA, STEP_COLUMNS, 'steps'],
      [EPISODE_SCHEMA, EPISODE_COLUMNS, 'episodes'],
    ] as const) {
      expect(schema.metadata.get('ycgym.schema')).toBe(name);
      expect(schema.metadata.get('ycgym.schema_version')).toBe('3');
      schema.fields.forEach((f, i) => {
        expect(DataType.isDictionary(f.type)).toBe(false);
        expect(f.name).toBe(cols[i]?.name);
        expect(f.nullable).toBe(cols[i]?.nullable);
      });
    }
    expect(isoToMicros('2025-01-17T11:13:55.712087') - isoToMicros('2025-01-17T11:13:55')).toBe(712087);
  });
});
