/**
 * Export benchmarks (picked up by bench/run.ts as the `export` suite): Arrow rows written per second from
 * prebuilt step rows, and the wall time and file size of a bulk run of greedy episodes with trajectories
 * exported using 2 worker threads, as Arrow IPC and as zstd Parquet (`--format parquet`), with their ratios
 * measured in the same run. Every figure is a median over repeats.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GreedyPolicy } from '../baselines/greedy.js';
import { runBulk } from '../src/cli/run.js';
import { loadPreset } from '../src/config/load.js';
import { stepBuilder, stepSink } from '../src/export/arrow.js';
import { rollout } from '../src/export/rollout.js';
import { recordBatch } from '../src/export/arrow.js';
import { STEP_SCHEMA, type StepRow } from '../src/export/schema.js';
import { median } from './core.js';

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
      row[f.name] = typeof v === 'bigint' ? Number(v) : v;
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

/** The export suite. */
export async function runExportBench(opts: { quick: boolean }): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'ycgym-bench-export-'));
  try {
    const rounds = opts.quick ? 3 : 5;
    const rows = greedyRows([1, 2, 3, 4, 5]);
    const avgText = rows.reduce((a, r) => a + r.observation_text.length, 0) / rows.length;
    const small = rows.map((r) => ({ ...r, observation_text: r.observation_text.slice(0, 64) }));
    const target = opts.quick ? 200_000 : 1_000_000;
    const full: number[] = [];
    const fullMb: number[] = [];
    const short: number[] = [];
    const encodeFull: number[] = [];
    const encodeShort: number[] = [];
    const file = join(dir, 'rows.arrow');
    const devNull = existsSync('/dev/null') ? '/dev/null' : file;
    for (let k = 0; k < rounds; k++) {
      const a = writeRate(file, rows, target, 4096);
      full.push(a.rowsPerSec);
      fullMb.push(a.mbPerSec);
      short.push(writeRate(file, small, target, 4096).rowsPerSec);
      encodeFull.push(writeRate(devNull, rows, target, 4096).rowsPerSec);
      encodeShort.push(writeRate(devNull, small, target, 4096).rowsPerSec);
    }
    const episodes = opts.quick ? 200 : 1000;
    const wall: number[] = [];
    const wallPq: number[] = [];
    let arrowBytes = 0;
    let parquetBytes = 0;
    const seeds = Array.from({ length: episodes }, (_, i) => i + 1);
    for (let k = 0; k < (opts.quick ? 1 : 3); k++) {
      const out = join(dir, `run${k}`);
      const r = await runBulk({ policies: ['greedy'], seeds, preset: 'default', workers: 2, out, progress: false });
      wall.push(r.seconds);
      arrowBytes = statSync(join(out, 'trajectories.arrow')).size;
      rmSync(out, { recursive: true, force: true });
      const rp = await runBulk({ policies: ['greedy'], seeds, preset: 'default', workers: 2, out, progress: false, format: 'parquet' });
      wallPq.push(rp.seconds);
      parquetBytes = statSync(join(out, 'trajectories.parquet')).size;
      rmSync(out, { recursive: true, force: true });
    }
    return {
      arrow_write_rows_per_sec: { median: median(full), rounds: full, avg_observation_chars: Math.round(avgText) },
      arrow_write_mb_per_sec: { median: median(fullMb) },
      arrow_write_rows_per_sec_64_char_text: { median: median(short), rounds: short },
      arrow_encode_rows_per_sec_no_disk: { median: median(encodeFull), rounds: encodeFull },
      arrow_encode_rows_per_sec_no_disk_64_char_text: { median: median(encodeShort), rounds: encodeShort },
      bulk_greedy_with_trajectories_2_workers: { episodes, median_seconds: median(wall), rounds: wall, bytes_per_episode: Math.round(arrowBytes / episodes) },
      bulk_greedy_with_parquet_trajectories_2_workers: {
        episodes,
        median_seconds: median(wallPq),
        rounds: wallPq,
        bytes_per_episode: Math.round(parquetBytes / episodes),
        seconds_ratio_vs_arrow: median(wallPq) / median(wall),
        size_ratio_vs_arrow: parquetBytes / arrowBytes,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
