/**
 * Export benchmarks (the `export` suite of `npm run bench`): Arrow rows written per second from prebuilt step
 * rows, and the wall time and file size of a bulk run of greedy episodes with trajectories exported using 2 worker
 * threads, as Arrow IPC and as zstd Parquet (`--format parquet`).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataType } from 'apache-arrow';
import { GreedyPolicy } from '../baselines/greedy.js';
import { runBulk } from '../src/cli/run.js';
import { workerScript } from '../src/cli/prestart.js';
import { loadPreset } from '../src/config/load.js';
import { stepBuilder, stepSink } from '../src/export/arrow.js';
import { rollout } from '../src/export/rollout.js';
import { recordBatch } from '../src/export/arrow.js';
import { STEP_SCHEMA, type StepRow } from '../src/export/schema.js';
import type { Sample, Size, Suite } from './harness.js';

/** Step rows of real greedy episodes (the rows a bulk run writes). */
function greedyRows(seeds: number[]): StepRow[] {
  const cfg = loadPreset('default');
  const b = stepBuilder();
  for (const seed of seeds) rollout(cfg, new GreedyPolicy(), { runId: 'bench', episodeId: seed, policy: 'greedy', preset: 'default', seed }, { steps: b });
  const t = recordBatch(STEP_SCHEMA, b.finish());
  return t.toArray().map((r) => {
    const o = r as Record<string, unknown>;
    const row = {} as Record<string, unknown>;
    for (const f of STEP_SCHEMA.fields) {
      const v = o[f.name];
      // A list of structs (trust) as plain objects, as the exporter's rows hold them.
      if (DataType.isList(f.type)) row[f.name] = [...(v as Iterable<{ toJSON(): object }>)].map((s) => s.toJSON());
      else row[f.name] = typeof v === 'bigint' ? Number(v) : v;
    }
    row['sim_time'] = 0;
    return row as unknown as StepRow;
  });
}

/** Rows per second to build and write `rows` (repeated to `target` rows) to an Arrow file, one batch per `batch` rows. */
function writeRate(path: string, rows: StepRow[], target: number, batch: number): { rowsPerSec: number; mbPerSec: number } {
  const t0 = performance.now();
  const b = stepBuilder();
  const sink = stepSink(path);
  for (let i = 0; i < target; i++) {
    b.append(rows[i % rows.length] as StepRow);
    if (b.length >= batch) sink.writeBuffers(b.finish());
  }
  sink.writeBuffers(b.finish());
  sink.close();
  const sec = (performance.now() - t0) / 1000;
  return { rowsPerSec: target / sec, mbPerSec: path === '/dev/null' ? 0 : statSync(path).size / 1e6 / sec };
}

const SIZES: Record<Size, { rows: number; episodes: number; rowSeeds: number; maxRepeats: number }> = {
  full: { rows: 300_000, episodes: 1000, rowSeeds: 5, maxRepeats: 3 },
  quick: { rows: 100_000, episodes: 200, rowSeeds: 5, maxRepeats: 3 },
  tiny: { rows: 2_000, episodes: 3, rowSeeds: 1, maxRepeats: 2 },
};

interface ExportContext {
  dir: string;
  rows: StepRow[];
  small: StepRow[];
  devNull: string;
  workers: number;
}

/**
 * The export suite: Arrow rows written per second from prebuilt greedy step rows (real observation text, and the
 * same rows with 64-character text; to a file and encoded only), and bulk runs of greedy episodes with trajectories
 * on 2 worker threads, as Arrow IPC and as zstd Parquet (ratios: Parquet over Arrow, in the same repeat).
 */
export const exportSuite: Suite<ExportContext> = {
  name: 'export',
  metrics: {
    arrow_write_rows_per_s: { unit: 'rows/s', better: 'higher', doc: 'step rows with their real observation text, built and written to an Arrow IPC file' },
    arrow_write_mb_per_s: { unit: 'MB/s', better: 'higher' },
    arrow_write_rows_per_s_64_char_text: { unit: 'rows/s', better: 'higher', doc: 'the same rows with the text cut to 64 characters' },
    arrow_encode_rows_per_s_no_disk: { unit: 'rows/s', better: 'higher', baselines: ['arrow_write_rows_per_s'], doc: 'built and encoded, written to /dev/null; ratio: over writing to a file' },
    bulk_greedy_arrow_seconds: { unit: 's', better: 'lower', doc: '`ycgym run --policy greedy` with trajectories (Arrow IPC), 2 workers' },
    bulk_greedy_parquet_seconds: { unit: 's', better: 'lower', baselines: ['bulk_greedy_arrow_seconds'], doc: 'the same run with --format parquet; ratio: over the Arrow run' },
    bulk_greedy_arrow_bytes_per_episode: { unit: 'bytes/episode', better: 'lower' },
    bulk_greedy_parquet_bytes_per_episode: { unit: 'bytes/episode', better: 'lower', baselines: ['bulk_greedy_arrow_bytes_per_episode'] },
  },
  params: (size) => ({ rows_written: SIZES[size].rows, row_source_seeds: SIZES[size].rowSeeds, bulk_episodes: SIZES[size].episodes, workers: 2, preset: 'default' }),
  maxRepeats: (size) => SIZES[size].maxRepeats,
  setup(size) {
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-bench-export-'));
    const rows = greedyRows(Array.from({ length: SIZES[size].rowSeeds }, (_, i) => i + 1));
    // Rows read back from an Arrow table: their texts are strings.
    const small = rows.map((r) => ({ ...r, observation_text: (r.observation_text as string).slice(0, 64) }));
    // Two worker threads need the built worker script (present after `npm run build`; tests may run from source).
    const workers = existsSync(fileURLToPath(workerScript())) ? 2 : 1;
    return { dir, rows, small, devNull: existsSync('/dev/null') ? '/dev/null' : join(dir, 'null.arrow'), workers };
  },
  async run(ctx, size) {
    const { rows: target, episodes } = SIZES[size];
    const file = join(ctx.dir, 'rows.arrow');
    const full = writeRate(file, ctx.rows, target, 4096);
    const out: Sample = {
      arrow_write_rows_per_s: full.rowsPerSec,
      arrow_write_mb_per_s: full.mbPerSec,
      arrow_write_rows_per_s_64_char_text: writeRate(file, ctx.small, target, 4096).rowsPerSec,
      arrow_encode_rows_per_s_no_disk: writeRate(ctx.devNull, ctx.rows, target, 4096).rowsPerSec,
    };
    const seeds = Array.from({ length: episodes }, (_, i) => i + 1);
    const dirOut = join(ctx.dir, 'run');
    for (const format of ['arrow', 'parquet'] as const) {
      rmSync(dirOut, { recursive: true, force: true });
      const r = await runBulk({ policies: ['greedy'], seeds, preset: 'default', workers: ctx.workers, out: dirOut, progress: false, format });
      out[`bulk_greedy_${format}_seconds`] = r.seconds;
      out[`bulk_greedy_${format}_bytes_per_episode`] = statSync(join(dirOut, `trajectories.${format}`)).size / episodes;
    }
    rmSync(dirOut, { recursive: true, force: true });
    return out;
  },
  teardown(ctx) {
    rmSync(ctx.dir, { recursive: true, force: true });
  },
};
