import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readArrowFile } from '../../src/export/arrow.js';
import { readParquetBatches, readParquetFile, stepParquetSink } from '../../src/export/parquet.js';
import { STEP_COLUMNS } from '../../src/export/schema.js';
import { readEpisodes, symlog, symlogInverse, tableFile, writeReport } from '../../src/cli/report.js';
import { dollars } from '../../src/cli/format.js';
import { planRun, runBulk, type RunSpec } from '../../src/cli/run.js';
import { workerScript } from '../../src/cli/prestart.js';
import { mergeShards, playShard } from '../../src/cli/shard.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-parquet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const haveWorker = existsSync(fileURLToPath(workerScript()));
// Greedy seed 3 goes bankrupt; max steps keeps the random episodes short.
const SPEC: RunSpec = { policies: ['greedy', 'random'], seeds: [1, 2, 3], preset: 'default', maxSteps: 400 };

function rowsOf(t: ReturnType<typeof readArrowFile>): unknown[] {
  return t.toArray().map((r) => JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
}

/** Two tables hold the same fields (names, types, nullability), schema metadata and rows. */
function expectSameTable(got: ReturnType<typeof readArrowFile>, want: ReturnType<typeof readArrowFile>): void {
  const fields = (t: typeof got) => t.schema.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`);
  expect(fields(got)).toEqual(fields(want));
  expect([...got.schema.metadata]).toEqual([...want.schema.metadata]);
  expect(got.numRows).toBe(want.numRows);
  expect(rowsOf(got)).toEqual(rowsOf(want));
}

describe('ycgym run --format parquet', () => {
  const arrow = join(dir, 'arrow');
  const plain = join(dir, 'arrow-plain');
  const parquet = join(dir, 'parquet');
  beforeAll(async () => {
    await runBulk({ ...SPEC, workers: 1, out: arrow, progress: false });
    await runBulk({ ...SPEC, compression: 'none', workers: 1, out: plain, progress: false });
    await runBulk({ ...SPEC, format: 'parquet', workers: 1, out: parquet, progress: false });
  });

  it('refuses --compression none with --format parquet, and an unknown compression', () => {
    expect(() => planRun({ ...SPEC, format: 'parquet', compression: 'none' })).toThrow(/Parquet files are always zstd-compressed/);
    expect(() => planRun({ ...SPEC, compression: 'lz4' as 'zstd' })).toThrow(/unknown compression "lz4" \(available: zstd, none\)/);
    expect(planRun({ ...SPEC, format: 'parquet' }).compression).toBe('zstd');
  });

  it('Arrow IPC is zstd-compressed by default (Arrow BodyCompression); --compression none writes the plain buffers; the same rows', () => {
    for (const table of ['trajectories', 'episodes']) expectSameTable(readArrowFile(join(arrow, `${table}.arrow`)), readArrowFile(join(plain, `${table}.arrow`)));
    expect(readFileSync(join(arrow, 'summary.json')).equals(readFileSync(join(plain, 'summary.json')))).toBe(true);
    const z = readFileSync(join(arrow, 'trajectories.arrow'));
    const p = readFileSync(join(plain, 'trajectories.arrow'));
    expect(z.subarray(0, 6).toString()).toBe('ARROW1');
    expect(z.length * 10).toBeLessThan(p.length);
  });

  it('writes the Arrow rows, schema and metadata as zstd Parquet, and the same summary', () => {
    expect(readdirSync(parquet).sort()).toEqual(['episodes.parquet', 'summary.json', 'trajectories.parquet']);
    expect(readFileSync(join(parquet, 'summary.json')).equals(readFileSync(join(arrow, 'summary.json')))).toBe(true);
    for (const table of ['trajectories', 'episodes']) expectSameTable(readParquetFile(join(parquet, `${table}.parquet`)), readArrowFile(join(arrow, `${table}.arrow`)));
    const pq = readFileSync(join(parquet, 'trajectories.parquet'));
    expect(pq.subarray(0, 4).toString()).toBe('PAR1');
    expect(pq.length * 10).toBeLessThan(readFileSync(join(plain, 'trajectories.arrow')).length);
    expect(readEpisodes(join(parquet, 'episodes.parquet'))).toEqual(readEpisodes(join(arrow, 'episodes.arrow')));
  });

  it('streams batches of only the columns asked for', async () => {
    const want = readArrowFile(join(arrow, 'trajectories.arrow'));
    let rows = 0;
    const funds: number[] = [];
    for await (const b of readParquetBatches(join(parquet, 'trajectories.parquet'), ['episode_id', 'funds_cents'])) {
      expect(b.schema.fields.map((f) => f.name)).toEqual(['episode_id', 'funds_cents']);
      rows += b.numRows;
      for (const v of b.getChild('funds_cents')?.toArray() ?? []) funds.push(Number(v));
    }
    expect(rows).toBe(want.numRows);
    expect(funds).toEqual([...(want.getChild('funds_cents')?.toArray() ?? [])].map(Number));
  });

  it('a sink closed without rows writes a valid file with the schema; a one-step run its two rows', async () => {
    const empty = join(dir, 'empty.parquet');
    await stepParquetSink(empty).close();
    const t = readParquetFile(empty);
    expect(t.numRows).toBe(0);
    expect(t.schema.fields.map((f) => f.name)).toEqual(STEP_COLUMNS.map((c) => c.name));
    const out = join(dir, 'one-step');
    await runBulk({ ...SPEC, policies: ['greedy'], seeds: [1], maxSteps: 1, format: 'parquet', workers: 1, out, progress: false });
    expect(readParquetFile(join(out, 'trajectories.parquet')).numRows).toBe(2);
  });

  it.skipIf(!haveWorker)('is byte-identical for --workers 1 and 2', async () => {
    const w2 = join(dir, 'parquet-w2');
    await runBulk({ ...SPEC, format: 'parquet', workers: 2, out: w2, progress: false });
    for (const f of ['trajectories.parquet', 'episodes.parquet', 'summary.json']) expect(readFileSync(join(w2, f)).equals(readFileSync(join(parquet, f))), f).toBe(true);
  });

  it('shards stage Arrow IPC and merge into the same Parquet bytes as ycgym run', async () => {
    const spec: RunSpec = { ...SPEC, format: 'parquet' };
    const plan = planRun(spec);
    const staging = join(dir, 'staging');
    await playShard(plan, { start: 0, end: 2, out: join(staging, 'a') });
    await playShard(plan, { start: 2, end: plan.jobs.length, out: join(staging, 'b') });
    expect(readdirSync(join(staging, 'a')).sort()).toEqual(['episodes.arrow', 'trajectories.arrow']);
    const out = join(dir, 'merged');
    const r = await mergeShards(plan, staging, out);
    expect(r.files.map((f) => f.split('/').pop())).toEqual(['trajectories.parquet', 'episodes.parquet', 'summary.json']);
    for (const f of ['trajectories.parquet', 'episodes.parquet', 'summary.json']) expect(readFileSync(join(out, f)).equals(readFileSync(join(parquet, f))), f).toBe(true);
  });

  it('ycgym report reads Parquet runs and gives the plots of the Arrow run', async () => {
    expect(tableFile(parquet, 'episodes')).toBe(join(parquet, 'episodes.parquet'));
    expect(tableFile(arrow, 'trajectories')).toBe(join(arrow, 'trajectories.arrow'));
    expect(tableFile(join(dir, 'nowhere'), 'episodes')).toBeNull();
    const a = await writeReport(arrow);
    const p = await writeReport(parquet);
    expect(p.map((f) => f.split('/').pop())).toEqual(a.map((f) => f.split('/').pop()));
    for (const f of ['report.md', 'funds.svg', 'prestige.svg']) expect(readFileSync(join(parquet, f), 'utf8')).toBe(readFileSync(join(arrow, f), 'utf8'));
  });
});

describe('ycgym report funds plot', () => {
  it('symlog is odd, monotonic, linear near 0 and inverted by symlogInverse', () => {
    const c = 1_000_000;
    const xs = [-1e12, -5e7, -c, -1, 0, 1, c, 3e7, 1e12];
    for (let i = 1; i < xs.length; i++) expect(symlog(xs[i] as number, c)).toBeGreaterThan(symlog(xs[i - 1] as number, c));
    for (const x of xs) {
      expect(symlog(-x, c)).toBe(-symlog(x, c));
      expect(symlogInverse(symlog(x, c), c)).toBeCloseTo(x, -Math.max(0, Math.log10(Math.abs(x) + 1) - 9));
    }
    expect(symlog(c, c)).toBeCloseTo(Math.log10(2), 12);
  });

  it('marks each bankruptcy and keeps the others readable (symlog axis)', async () => {
    const out = join(dir, 'arrow');
    await writeReport(out);
    const svg = readFileSync(join(out, 'funds.svg'), 'utf8');
    // One cross per bankrupt episode (greedy seed 3 among them), its final funds in its tooltip.
    const bankrupt = readEpisodes(join(out, 'episodes.arrow')).filter((e) => e.outcome === 'bankruptcy');
    const marks = [...svg.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => m[1]);
    expect(marks).toContain('greedy: bankrupt at -$16,303');
    expect(marks.sort()).toEqual(bankrupt.map((e) => `${e.policy}: bankrupt at ${dollars(e.final_funds_cents)}`).sort());
    expect(svg).toContain(`greedy (${bankrupt.filter((e) => e.policy === 'greedy').length} bankrupt ×)`);
    expect(svg).toContain('symlog axis');
    // Ticks of a symlog axis: 0 and powers of ten of $10,000.
    expect(svg).toContain('>$0<');
    expect(svg).toContain('>-$10,000<');
    expect(svg).toContain('>$100,000<');
  });
});

describe('report of files that are not tables', () => {
  it('names the file it cannot read', async () => {
    // Before: "Expected to read 1802401130 metadata bytes, but only read 1." without the file.
    const { writeFileSync, mkdirSync, copyFileSync } = await import('node:fs');
    for (const [name, bytes] of [['episodes.arrow', 'junk\n'], ['episodes.parquet', 'junk\n']] as const) {
      const d = join(dir, `junk-${name}`);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, name), bytes);
      await expect(writeReport(d)).rejects.toThrow(new RegExp(`^${join(d, name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot read it as a table: `));
    }
    if (!existsSync(join(dir, 'arrow', 'episodes.arrow'))) return; // the run of this file's first test
    const d = join(dir, 'junk-steps');
    mkdirSync(d, { recursive: true });
    copyFileSync(join(dir, 'arrow', 'episodes.arrow'), join(d, 'episodes.arrow'));
    writeFileSync(join(d, 'trajectories.arrow'), 'junk\n');
    await expect(writeReport(d)).rejects.toThrow(/trajectories\.arrow: cannot read it as a table: /);
    writeFileSync(join(d, 'trajectories.arrow'), '');
    rmSync(join(d, 'trajectories.arrow'));
    writeFileSync(join(d, 'summary.json'), '{not json');
    await expect(writeReport(d)).rejects.toThrow(/summary\.json: cannot read it as JSON: /);
  });
});
