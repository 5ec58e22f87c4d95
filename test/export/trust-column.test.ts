import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataType, type Table } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { loadPreset } from '../../src/config/load.js';
import { Env, StatusObjects } from '../../src/env/env.js';
import type { Simulation } from '../../src/sim/index.js';
import { runEpisode } from '../../src/env/episode.js';
import { ArrowFileSink, readArrowFile, stepBuilder, TableBuilder } from '../../src/export/arrow.js';
import { ParquetFileSink, readParquetFile } from '../../src/export/parquet.js';
import { rollout } from '../../src/export/rollout.js';
import { arrowSchema, STEP_SCHEMA, type ColumnDef } from '../../src/export/schema.js';
import type { TableBuffers } from '../../src/export/table-builder.js';
import { TrajectoryRecorder } from '../../src/server/recorder.js';
import { SessionManager } from '../../src/server/sessions.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-trust-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Pairs = [string, number][];

/** A list<struct{client, trust}> cell read back by apache-arrow, as pairs. */
function pairs(cell: unknown): Pairs | null {
  if (cell === null) return null;
  return [...(cell as Iterable<{ client: string; trust: number }>)].map((s) => [s.client, s.trust]);
}

/** The `trust` column of a table, as pairs per row. */
function trustColumn(t: Table): (Pairs | null)[] {
  return [...(t.getChild('trust') ?? [])].map(pairs);
}

const COLS: ColumnDef[] = [
  { name: 'i', kind: 'int32', nullable: false, doc: '' },
  { name: 'trust', kind: 'list_struct', nullable: true, doc: '', fields: [{ name: 'client', kind: 'utf8' }, { name: 'trust', kind: 'float64' }] },
  { name: 's', kind: 'utf8', nullable: false, doc: '' },
];
interface Row {
  i: number;
  trust: Record<string, number> | { client: string; trust: number }[] | null;
  s: string;
}

/** A table chunk's buffers as one hex string per buffer, with its length and null counts (quick to compare). */
function bufferBytes(t: TableBuffers): string[] {
  const hex = (b: Uint8Array | Int32Array | null): string => (b === null ? 'null' : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex'));
  return [`length ${t.length}`, ...t.columns.flatMap((c) => [hex(c.values), hex(c.offsets), hex(c.validity), `nulls ${c.nullCount}`, ...(c.items ? bufferBytes(c.items) : [])])];
}

describe('list_struct columns (the trust column)', () => {
  it('round-trip through Arrow IPC and Parquet: arrays, records in sorted key order, empty lists, nulls, several batches', async () => {
    const rows: Row[] = [];
    const want: (Pairs | null)[] = [];
    for (let k = 0; k < 700; k++) {
      const n = k % 4;
      const names = Array.from({ length: n }, (_, j) => `Client ${String.fromCharCode(90 - j)} ✓${k % 3}`);
      const values = names.map((_, j) => (k * 7 + j) / 3 - 50);
      const sorted: Pairs = names.map((c, j): [string, number] => [c, values[j] as number]).sort((a, b) => (a[0] < b[0] ? -1 : 1));
      if (k % 9 === 4) {
        rows.push({ i: k, trust: null, s: `r${k}` });
        want.push(null);
      } else if (k % 2 === 0) {
        // A record whose keys are not sorted (written in sorted order).
        rows.push({ i: k, trust: Object.fromEntries(names.map((c, j) => [c, values[j] as number])), s: `r${k}` });
        want.push(sorted);
      } else {
        // An array is written as given.
        rows.push({ i: k, trust: names.map((c, j) => ({ client: c, trust: values[j] as number })), s: `r${k}` });
        want.push(names.map((c, j): [string, number] => [c, values[j] as number]));
      }
    }
    const schema = arrowSchema(COLS, 'steps');
    const f = schema.fields[1];
    expect(f && DataType.isList(f.type)).toBe(true);
    expect(String(f?.type)).toBe('List<Struct<{client:Utf8, trust:Float64}>>');
    const arrowPath = join(dir, 'list.arrow');
    const parquetPath = join(dir, 'list.parquet');
    const sink = new ArrowFileSink(arrowPath, schema);
    const psink = new ParquetFileSink(parquetPath, schema);
    const b = new TableBuilder<Row>(COLS);
    for (let k = 0; k < rows.length; k++) {
      b.append(rows[k] as Row);
      if (k % 250 === 249 || k === rows.length - 1) {
        const buffers = b.finish();
        sink.writeBuffers(buffers);
        psink.writeBuffers(buffers);
      }
    }
    sink.close();
    await psink.close();
    for (const t of [readArrowFile(arrowPath), readParquetFile(parquetPath)]) {
      expect(t.numRows).toBe(rows.length);
      expect(trustColumn(t)).toEqual(want);
      expect([...(t.getChild('i') ?? [])]).toEqual(rows.map((r) => r.i));
      expect([...(t.getChild('s') ?? [])]).toEqual(rows.map((r) => r.s));
    }
    expect(readArrowFile(arrowPath).batches.length).toBe(3);
  });

  it('a frozen record appended again repeats its structs: the same buffers as fresh copies of it (every field kind, growth, nulls, chunks)', () => {
    // Builders given the very frozen object again and again (the recorder's `StatusObjects.trust` while no trust
    // changes) and builders given a fresh unfrozen copy every row must hold the same bytes.
    for (const kind of ['float64', 'int64', 'int32', 'bool', 'utf8', 'timestamp_us'] as const) {
      const cols: ColumnDef[] = [
        { name: 'x', kind: 'list_struct', nullable: true, doc: '', fields: [{ name: 'k', kind: 'utf8' }, { name: 'v', kind }] },
        { name: 'n', kind: 'int32', nullable: false, doc: '' },
      ];
      const value = (k: number, j: number): unknown => (kind === 'bool' ? (k + j) % 3 === 0 : kind === 'utf8' ? `v${k}.${j} ✓` : kind === 'float64' ? k / 7 - j : k * 1000 + j);
      const memo = new TableBuilder<{ x: unknown; n: number }>(cols);
      const fresh = new TableBuilder<{ x: unknown; n: number }>(cols);
      let frozen: Readonly<Record<string, unknown>> = {};
      const chunks: [TableBuffers, TableBuffers][] = [];
      for (let k = 0; k < 1500; k++) {
        // A new frozen record every 40 rows (of 0 to 24 keys, unsorted), a null or an unfrozen record now and then.
        if (k % 40 === 0) {
          const n = (k / 40) % 25;
          frozen = Object.freeze(Object.fromEntries(Array.from({ length: n }, (_, j) => [`c${(j * 7) % 25}é`, value(k, j)])));
        }
        const x = k % 13 === 5 ? null : k % 17 === 3 ? { z: value(k, 99), a: value(k, 98) } : frozen;
        memo.append({ x, n: k });
        fresh.append({ x: x === null ? null : { ...x }, n: k });
        if (k % 600 === 599) chunks.push([memo.finish(), fresh.finish()]);
      }
      chunks.push([memo.finish(), fresh.finish()]);
      for (const [a, b] of chunks) expect(bufferBytes(a)).toEqual(bufferBytes(b));
    }
    // The rollout's trust objects (kept while no trust changes) are frozen, so the step builder repeats them.
    const env = new Env();
    env.reset({ seed: 1, preset: loadPreset('default') });
    const objects = new StatusObjects();
    const first = objects.update((env.simulation as Simulation).state).trust;
    expect(Object.isFrozen(first)).toBe(true);
    expect(objects.update((env.simulation as Simulation).state).trust).toBe(first);
  });

  it('a frozen record of mutable bytes is written as they are at each append, even the same object', () => {
    const cols: ColumnDef[] = [{ name: 'x', kind: 'list_struct', nullable: false, doc: '', fields: [{ name: 'k', kind: 'utf8' }, { name: 'v', kind: 'utf8' }] }];
    const bytes = new Uint8Array([0x61]);
    const rec = Object.freeze({ key: bytes });
    const memo = new TableBuilder<{ x: unknown }>(cols);
    const fresh = new TableBuilder<{ x: unknown }>(cols);
    memo.append({ x: rec });
    fresh.append({ x: { key: 'a' } });
    bytes[0] = 0x62;
    memo.append({ x: rec });
    fresh.append({ x: { key: 'b' } });
    expect(bufferBytes(memo.finish())).toEqual(bufferBytes(fresh.finish()));
  });

  it('an unfrozen record is written as it is at each append, even the same object', () => {
    const b = new TableBuilder<Row>(COLS);
    const rec: Record<string, number> = { a: 1, b: 2 };
    b.append({ i: 0, trust: rec, s: '' });
    rec['a'] = 5;
    b.append({ i: 1, trust: rec, s: '' });
    const sink = new ArrowFileSink(join(dir, 'mutable.arrow'), arrowSchema(COLS, 'steps'));
    sink.writeBuffers(b.finish());
    sink.close();
    expect(trustColumn(readArrowFile(join(dir, 'mutable.arrow')))).toEqual([
      [
        ['a', 1],
        ['b', 2],
      ],
      [
        ['a', 5],
        ['b', 2],
      ],
    ]);
  });

  it('refuses nulls inside the structs and records for structs of more than two fields', () => {
    const b = new TableBuilder<Row>(COLS);
    expect(() => b.append({ i: 1, trust: [{ client: 'a', trust: null as unknown as number }], s: '' })).toThrow(/not nullable/);
    const three: ColumnDef[] = [{ name: 'x', kind: 'list_struct', nullable: false, doc: '', fields: [{ name: 'a', kind: 'utf8' }, { name: 'b', kind: 'int32' }, { name: 'c', kind: 'bool' }] }];
    expect(() => new TableBuilder<{ x: unknown }>(three).append({ x: { a: 1 } })).toThrow(/two-field struct/);
    expect(() => new TableBuilder<{ x: unknown }>([{ name: 'x', kind: 'list_struct', nullable: false, doc: '' }])).toThrow(/no fields/);
  });

  it("the step table's trust is the status block's trust at every step: bulk rollout and the server recorder", () => {
    const cfg = loadPreset('default');
    // The statuses of greedy seed 2, step by step, from the env itself.
    const statuses: Pairs[] = [];
    const actions: string[] = [];
    runEpisode(new Env(), new GreedyPolicy(), { seed: 2, preset: cfg, options: { max_steps: 300 } }, {
      onReset: (first) => void statuses.push(Object.entries(first.observation.status.trust)),
      onStep: ({ action, result }) => {
        actions.push(action);
        statuses.push(Object.entries(result.observation.status.trust));
      },
    });
    const names = statuses[0]?.map(([c]) => c) ?? [];
    expect(names.length).toBe(6);
    expect([...names].sort()).toEqual(names);
    expect(new Set(statuses.map((s) => JSON.stringify(s))).size).toBeGreaterThan(1);

    // Bulk rollout rows (the rows `ycgym run` writes), through an Arrow file.
    const sb = stepBuilder();
    rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: 0, policy: 'greedy', preset: 'default', seed: 2 }, { steps: sb, maxSteps: actions.length });
    const bulkPath = join(dir, 'bulk.arrow');
    const bulk = new ArrowFileSink(bulkPath, STEP_SCHEMA);
    bulk.writeBuffers(sb.finish());
    bulk.close();
    expect(trustColumn(readArrowFile(bulkPath))).toEqual(statuses);

    // The server recorder over a session manager playing the same actions.
    const recPath = join(dir, 'rec.arrow');
    const rec = new TrajectoryRecorder({ path: recPath, flushRows: 64 });
    const sm = new SessionManager({ presets: ['default'], hooks: rec });
    const s = sm.reset({ seed: 2 });
    for (const a of actions) sm.step(s.session, a);
    rec.close();
    expect(trustColumn(readArrowFile(recPath))).toEqual(statuses);
  });
});
