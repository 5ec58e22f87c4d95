/**
 * The worker threads of a bulk run (`ycgym run`, `ycgym main`), started before the modules that run it load.
 *
 * A worker thread takes a few hundred milliseconds to start: its own module graph, the run's preset validated, the
 * zstd library inflated and compiled. The main thread needs as long again to load what plays and writes a run
 * (./run.ts with Arrow, Parquet and the progress bar). Started one after the other, both sit on the critical path of
 * every run; started here, from the command's action before it imports ./run.ts, they overlap. The workers load what
 * the `preload` hint names while they wait for their run's settings (`{ config }`, the first message `takeWorkers`'s
 * caller posts; ./export-worker.ts), which the main thread knows only once it has planned the run.
 *
 * This module imports nothing but Node's: it is on the CLI's start path (test/unit/cli-imports.test.ts).
 */
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** What a bulk-run worker thread loads as it starts, before its settings come (./export-worker.ts). */
export interface WorkerPreload {
  /** The run's preset (name or TOML path): validated and frozen ahead (`presetConfig`). */
  preset: string;
  /** Whether the worker compresses its episodes' bodies with zstd (the library loaded ahead). */
  zstd: boolean;
}

/** `workerData` of a bulk-run worker thread. */
export interface WorkerStart {
  preload: WorkerPreload;
}

/** Location of the compiled worker script (from sources under test, the build in dist/). */
export function workerScript(): URL {
  const here = import.meta.url;
  if (here.endsWith('.js')) return new URL('./export-worker.js', here);
  return new URL('../../dist/src/cli/export-worker.js', here);
}

/** `ycgym run`'s default `--workers`: the machine's cores, at most 4. */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(4, cpus().length));
}

/** Worker threads a run of `jobs` episodes uses with `--workers workers`: none (0) when it plays in the calling thread. */
export function poolSize(workers: number, jobs: number): number {
  const n = Math.max(1, Math.min(workers, jobs));
  return n > 1 ? n : 0;
}

/** How a worker hands over an episode's step rows (`WorkerConfig.body`): see ./export/jobs.ts. */
export function bodyMode(trajectories: boolean, format: 'arrow' | 'parquet', compression: 'zstd' | 'none'): 'zstd' | 'none' | null {
  return trajectories && format === 'arrow' ? compression : null;
}

/** Workers started ahead and not taken yet, each with the first error it raised (null: none). */
let started: { worker: Worker; error: Error | null }[] = [];

/**
 * Start `n` worker threads now (none when `n` is 0), for `takeWorkers` to hand to the run. They do not keep the
 * process alive until taken (a run that fails before it starts its pool exits as it would without them); an error of
 * theirs is kept for the run.
 */
export function startWorkers(n: number, preload: WorkerPreload): void {
  const script = workerScript();
  if (n <= 0 || !existsSync(fileURLToPath(script))) return; // takeWorkers says why there is no script
  for (let k = 0; k < n; k++) {
    const entry = { worker: new Worker(script, { workerData: { preload } satisfies WorkerStart }), error: null as Error | null };
    entry.worker.on('error', (e: Error) => void (entry.error ??= e));
    entry.worker.unref();
    started.push(entry);
  }
}

/**
 * `n` worker threads for a run: those `startWorkers` started (the extra ones terminated), then new ones started with
 * `preload`; with the first error one of them raised before (null: none). The caller posts each its `{ config }`
 * before any job.
 */
export function takeWorkers(n: number, preload: WorkerPreload): { workers: Worker[]; error: Error | null } {
  const script = workerScript();
  if (!existsSync(fileURLToPath(script))) throw new Error(`worker script ${fileURLToPath(script)} not found: build first (npx tsc -p tsconfig.json)`);
  const ahead = started;
  started = [];
  for (const extra of ahead.splice(n)) void extra.worker.terminate();
  const error = ahead.find((e) => e.error !== null)?.error ?? null;
  const workers = ahead.map((e) => {
    e.worker.ref();
    return e.worker;
  });
  while (workers.length < n) workers.push(new Worker(script, { workerData: { preload } satisfies WorkerStart }));
  return { workers, error };
}
