/**
 * `ycgym run`: many episodes of baseline policies, in parallel worker threads, exported as Arrow IPC files
 * (DIR/trajectories.arrow, DIR/episodes.arrow; the default) or zstd-compressed Parquet files
 * (DIR/trajectories.parquet, DIR/episodes.parquet; `--format parquet`) plus DIR/summary.json and a summary
 * table on stdout.
 *
 * Episodes are handed out in (policy, seed) order to whichever worker is free and written in (policy, seed) order; an
 * episode's rows depend on its job alone, so the output files are byte-identical for any number of workers.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { makeDirs, writeStaged, type StagedFiles } from '../export/dirs.js';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import cliProgress from 'cli-progress';
import { parseSeedList } from './args.js';
import { makePolicy, POLICY_NAMES } from '../../baselines/index.js';
import { presetConfig } from '../config/load.js';
import type { ExperimentConfig } from '../sim/index.js';
import { arrowCompression, episodeBuilder, episodeSink, stepBuilder, stepSink, type ArrowCompression, type TableBuffers } from '../export/arrow.js';
import { TABLE_FORMATS, type TableFormat } from '../export/compression.js';
import { zstdEncoder } from '../export/zstd.js';
import { playJobRows, type JobRequest, type JobResult, type WorkerConfig, type WorkerMessage } from '../export/jobs.js';
import { unpackTable } from '../export/table-builder.js';
import type { RecordBatchBody } from '../export/ipc-body.js';
import type { EpisodeRow } from '../export/schema.js';
import { dollars } from './format.js';
import { bodyMode, poolSize, takeWorkers } from './prestart.js';

/** Options of a bulk run. */
export interface RunOptions {
  policies: string[];
  seeds: number[];
  /** Preset name or TOML path. */
  preset: string;
  /** Worker threads (1: in the calling thread). */
  workers: number;
  /** Output directory (created if missing). */
  out: string;
  maxSteps?: number | null;
  /** Write DIR/trajectories.arrow (or .parquet; default true). */
  trajectories?: boolean;
  /** File format of the tables: Arrow IPC (`.arrow`, the default) or zstd-compressed Parquet (`.parquet`). */
  format?: TableFormat;
  /**
   * Body compression of the Arrow IPC tables (default `zstd`: each buffer compressed as the Arrow format's
   * BodyCompression; `none`: plain buffers, as before). Parquet files are always zstd-compressed.
   */
  compression?: ArrowCompression;
  /** Also write the reference's rollout JSON files to DIR/rollouts/ (default false). */
  rollouts?: boolean;
  /** Run identifier (default: derived from the run's parameters, so reruns are byte-identical). */
  runId?: string;
  /** Show a progress bar on stderr when it is a TTY (default true). */
  progress?: boolean;
}

/** Per-policy aggregate written to summary.json. */
export interface PolicySummary {
  episodes: number;
  mean_final_funds_cents: number;
  median_final_funds_cents: number;
  min_final_funds_cents: number;
  max_final_funds_cents: number;
  bankruptcies: number;
  tasks_succeeded: number;
  tasks_failed: number;
  adversarial_accept_share: number;
}

/** summary.json: keyed by policy, in the order the policies were given. */
export type RunSummary = Record<string, PolicySummary>;

/** Result of `runBulk`. */
export interface RunResult {
  summary: RunSummary;
  episodes: EpisodeRow[];
  files: { trajectories: string | null; episodes: string; summary: string };
  seconds: number;
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  if (s.length === 0) return 0;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Aggregate episode rows per policy. */
export function summarize(episodes: readonly EpisodeRow[], policies: readonly string[]): RunSummary {
  const out: RunSummary = {};
  for (const p of policies) {
    const eps = episodes.filter((e) => e.policy === p);
    const funds = eps.map((e) => e.final_funds_cents);
    const accepted = eps.reduce((a, e) => a + e.accepted_total, 0);
    const adv = eps.reduce((a, e) => a + e.accepted_from_adversarial, 0);
    out[p] = {
      episodes: eps.length,
      mean_final_funds_cents: funds.length ? funds.reduce((a, b) => a + b, 0) / funds.length : 0,
      median_final_funds_cents: median(funds),
      min_final_funds_cents: funds.length ? Math.min(...funds) : 0,
      max_final_funds_cents: funds.length ? Math.max(...funds) : 0,
      bankruptcies: eps.filter((e) => e.outcome === 'bankruptcy').length,
      tasks_succeeded: eps.reduce((a, e) => a + e.tasks_succeeded, 0),
      tasks_failed: eps.reduce((a, e) => a + e.tasks_failed, 0),
      adversarial_accept_share: accepted > 0 ? adv / accepted : 0,
    };
  }
  return out;
}

/** The summary as a Markdown table. */
export function summaryTable(s: RunSummary): string {
  const rows = [
    '| policy | episodes | mean | median | min | max | bankruptcies | tasks ok | tasks failed | adversarial share |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [p, v] of Object.entries(s)) {
    rows.push(
      `| ${p} | ${v.episodes} | ${dollars(v.mean_final_funds_cents)} | ${dollars(v.median_final_funds_cents)} | ${dollars(v.min_final_funds_cents)} | ${dollars(v.max_final_funds_cents)} | ${v.bankruptcies} | ${v.tasks_succeeded} | ${v.tasks_failed} | ${(100 * v.adversarial_accept_share).toFixed(1)}% |`,
    );
  }
  return rows.join('\n');
}

function defaultRunId(o: RunSpec, presetName: string): string {
  const key = JSON.stringify({ policies: o.policies, seeds: o.seeds, preset: presetName, maxSteps: o.maxSteps ?? null });
  return `run-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
}

interface Pool {
  /** Start the jobs; `onResult` is called in completion order. */
  run(jobs: JobRequest[], canStart: (index: number) => boolean, onResult: (r: JobResult) => void): Promise<void>;
  /** Re-check jobs waiting for `canStart`. */
  poke(): void;
  close(): Promise<void>;
}

/** Jobs a bulk-run worker thread holds at most (the one it plays and the next ones). */
export const JOBS_AHEAD = 2;

/**
 * Post jobs to workers, in queue order: the head of `queue` (removed from it) goes to the worker holding the fewest
 * jobs (`inFlight[w]`, counted up here and down by the caller on each answer; the lowest index among equals) while one
 * holds fewer than `ahead` and `canStart` allows that job; a job `canStart` refuses stops the queue there. Whichever
 * worker is free takes the next job (the output does not depend on which worker plays a job), so a worker never waits
 * for a job of its own while the other plays a long episode and the write window (`canStart`) is full.
 */
export function dispatchJobs(queue: JobRequest[], inFlight: number[], ahead: number, canStart: (index: number) => boolean, post: (worker: number, job: JobRequest) => void): void {
  for (let next = queue[0]; next !== undefined && canStart(next.index); next = queue[0]) {
    let w = -1;
    for (let k = 0; k < inFlight.length; k++) if ((inFlight[k] ?? 0) < ahead && (w < 0 || (inFlight[k] ?? 0) < (inFlight[w] ?? 0))) w = k;
    if (w < 0) return;
    queue.shift();
    inFlight[w] = (inFlight[w] ?? 0) + 1;
    post(w, next);
  }
}

function threadPool(n: number, wc: WorkerConfig): Pool {
  // Those the command started ahead (./prestart.ts), or new ones; each gets the run's settings before any job.
  const taken = takeWorkers(n, { preset: wc.preset, zstd: wc.body === 'zstd' });
  const workers = taken.workers;
  for (const wk of workers) wk.postMessage({ config: wc });
  // A worker's error (one that fails to load its modules, say) before `run`, kept for it; then `run`'s rejection.
  let early: Error | null = taken.error;
  let fail = (e: Error): void => void (early ??= e);
  for (const wk of workers) wk.on('error', (e: Error) => fail(e));
  let queue: JobRequest[] = [];
  // Jobs posted to each worker and not answered yet: up to JOBS_AHEAD, so that a worker that posts a result starts its
  // next episode at once instead of idling until the main thread has written that result and answered.
  const inFlight = new Array<number>(n).fill(0);
  let can: (i: number) => boolean = () => true;
  let pump = (): void => {};
  return {
    run(jobs, canStart, onResult) {
      can = canStart;
      queue = [...jobs];
      let remaining = jobs.length;
      return new Promise<void>((resolve, reject) => {
        if (early !== null) {
          reject(early);
          return;
        }
        fail = reject;
        if (remaining === 0) {
          resolve();
          return;
        }
        pump = () => {
          dispatchJobs(queue, inFlight, JOBS_AHEAD, can, (w, job) => (workers[w] as Worker).postMessage(job));
        };
        workers.forEach((wk, w) => {
          // The worker's shared slots, as received (export-worker.ts).
          const slots: SharedArrayBuffer[] = [];
          wk.on('message', (m: WorkerMessage | { index: number; error: string }) => {
            (inFlight[w] as number)--;
            if ('error' in m) {
              reject(new Error(`episode ${m.index} failed in worker ${w}: ${m.error}`));
              return;
            }
            try {
              const { packed, body, ...rest } = m;
              let r: JobResult = rest;
              const held = packed ?? body;
              if (held !== null) {
                if (held.sab !== null) slots[held.slot] = held.sab;
                const sab = slots[held.slot];
                if (sab === undefined) throw new Error(`worker ${w} used slot ${held.slot} before sending it`);
                const release = (): void => wk.postMessage({ free: held.slot });
                if (body !== null) {
                  const { length, nodes, regions, byteLength } = body;
                  r = { ...rest, body: { length, nodes, regions, byteLength, chunks: [new Uint8Array(sab, 0, byteLength)] }, release };
                } else if (packed !== null) r = { ...rest, steps: unpackTable(packed.layout, sab), release };
              }
              onResult(r);
            } catch (e) {
              reject(e instanceof Error ? e : new Error(String(e)));
              return;
            }
            remaining--;
            if (remaining === 0) resolve();
            else pump();
          });
        });
        pump();
      });
    },
    poke() {
      pump();
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

/** What a bulk run plays: the options that decide its output files (not how or where it runs). */
export type RunSpec = Pick<RunOptions, 'policies' | 'seeds' | 'preset' | 'maxSteps' | 'trajectories' | 'rollouts' | 'runId' | 'format' | 'compression'>;

/** A validated run: its preset, the settings every job shares and its jobs in output ((policy, seed)) order. */
export interface RunPlan {
  cfg: ExperimentConfig;
  wc: WorkerConfig;
  /** Policies in the order given (the summary's key order). */
  policies: string[];
  /** Job i has index i: the episode_id of its rows. */
  jobs: JobRequest[];
  /** File format of the tables (the run id does not depend on it: both formats hold the same rows). */
  format: TableFormat;
  /** Body compression of Arrow IPC tables (nor does the run id depend on it). */
  compression: ArrowCompression;
}

/** Validate a run and list its jobs; every process that plays part of a run derives the same plan. */
export function planRun(o: RunSpec): RunPlan {
  for (const p of o.policies) if (!POLICY_NAMES.includes(p)) throw new Error(`unknown policy ${JSON.stringify(p)} (available: ${POLICY_NAMES.join(', ')})`);
  if (o.seeds.length === 0) throw new Error('no seeds');
  // The preset's validated, deep-frozen config: every episode's Simulation.create takes it as is (a loadPreset copy
  // was compared deeply with its validated copy each time).
  const cfg = presetConfig(o.preset);
  const presetName = cfg.name;
  const wc: WorkerConfig = {
    preset: o.preset,
    presetName,
    runId: o.runId ?? defaultRunId(o, presetName),
    maxSteps: o.maxSteps ?? null,
    trajectories: o.trajectories !== false,
    rollouts: o.rollouts === true,
  };
  const jobs: JobRequest[] = [];
  for (const policy of o.policies) for (const seed of o.seeds) jobs.push({ index: jobs.length, policy, seed });
  const format = o.format ?? 'arrow';
  if (!TABLE_FORMATS.includes(format)) throw new Error(`unknown format ${JSON.stringify(format)} (available: ${TABLE_FORMATS.join(', ')})`);
  const compression = arrowCompression(o.compression ?? 'zstd');
  if (format === 'parquet' && compression === 'none') throw new Error('--compression none applies to Arrow IPC files: Parquet files are always zstd-compressed');
  return { cfg, wc, policies: [...o.policies], jobs, format, compression };
}

/** File name of an episode's reference rollout JSON under DIR/rollouts/. */
export function rolloutFileName(presetName: string, e: Pick<EpisodeRow, 'seed' | 'policy'>): string {
  return `yc_bench_result_${presetName}_${e.seed}_${e.policy}.json`;
}

/** Whether `name` is a rollout file's name (`rolloutFileName`): those a run replaces in DIR/rollouts/. */
export function isRolloutFile(name: string): boolean {
  return name.startsWith('yc_bench_result_') && name.endsWith('.json');
}

/** A streaming writer of step tables, Arrow IPC or Parquet. */
interface StepSink {
  writeBuffers(t: TableBuffers): void;
  /** Append a record batch body a worker assembled with the sink's compression (Arrow IPC only). */
  writeBody(b: RecordBatchBody): void;
  /** Batches waiting for the writer (Parquet compresses asynchronously); 0 for Arrow. */
  backlog(): number;
  drain(): Promise<void>;
  close(): Promise<void>;
}

type ParquetWriters = typeof import('../export/parquet.js');
let parquet: ParquetWriters | null = null;

/**
 * The Parquet writers (../export/parquet.ts), loaded on first use: a run that writes Arrow files, the default, does not
 * load parquet-wasm (about 50-70 ms of a run's start, before its worker threads get their first jobs).
 */
export async function parquetWriters(): Promise<ParquetWriters> {
  parquet ??= await import('../export/parquet.js');
  return parquet;
}

function loadedParquet(): ParquetWriters {
  if (parquet === null) throw new Error('the Parquet writers are not loaded: await parquetWriters() first');
  return parquet;
}

function openStepSink(path: string, format: TableFormat, compression: ArrowCompression): StepSink {
  if (format === 'parquet') {
    const s = loadedParquet().stepParquetSink(path);
    const writeBody = (): void => {
      throw new Error('a Parquet sink takes raw buffers, not Arrow IPC record batch bodies');
    };
    return { writeBuffers: (t) => s.writeBuffers(t), writeBody, backlog: () => s.backlog(), drain: () => s.drain(), close: () => s.close() };
  }
  const s = stepSink(path, compression);
  return { writeBuffers: (t) => s.writeBuffers(t), writeBody: (b) => s.writeBody(b, compression), backlog: () => 0, drain: async () => {}, close: async () => s.close() };
}

/**
 * Play `jobs` (a slice of `plan.jobs`, in order) and write DIR/trajectories.FORMAT (when the plan keeps
 * trajectories), DIR/rollouts/ (when asked) and DIR/episodes.FORMAT; returns the episode rows in job order.
 * `format` overrides the plan's (shards stage their files as Arrow IPC whatever the run's format). The files are
 * written beside their place and moved into it once all are written (a failed or interrupted run leaves what was
 * there as it was); with `staged`, they are left staged there, for the caller to add its own and commit them all.
 */
export async function playToDir(
  plan: RunPlan,
  jobs: readonly JobRequest[],
  out: string,
  workers: number,
  progress: boolean,
  format: TableFormat = plan.format,
  staged?: StagedFiles,
): Promise<{ episodes: EpisodeRow[]; trajectories: string | null; episodesPath: string }> {
  const n = Math.max(1, poolSize(workers, jobs.length));
  // Started first (or taken from those the command started before it loaded this module): the worker threads load
  // their modules while this one loads the zstd encoder and opens the files. Workers hand Arrow step rows over as
  // compressed record batch bodies (the compression off the writer's thread).
  const pool = n > 1 ? threadPool(n, { ...plan.wc, body: bodyMode(plan.wc.trajectories, format, plan.compression) }) : null;
  try {
    const play = (files: StagedFiles) => playWith(plan, jobs, out, pool, n, progress, format, files);
    return await (staged !== undefined ? play(staged) : writeStaged(play));
  } finally {
    await pool?.close();
  }
}

/** `playToDir` with its worker threads (`pool`, of `n` workers; null: play in this thread). */
async function playWith(
  plan: RunPlan,
  jobs: readonly JobRequest[],
  out: string,
  pool: Pool | null,
  n: number,
  progress: boolean,
  format: TableFormat,
  staged: StagedFiles,
): Promise<{ episodes: EpisodeRow[]; trajectories: string | null; episodesPath: string }> {
  const { cfg, wc } = plan;
  if (format === 'arrow' && plan.compression === 'zstd') await zstdEncoder();
  if (format === 'parquet') await parquetWriters();
  makeDirs(out);
  const rolloutDir = wc.rollouts ? staged.stageFolder(join(out, 'rollouts'), isRolloutFile) : null;
  const trajPath = wc.trajectories ? join(out, `trajectories.${format}`) : null;
  const steps: StepSink | null = trajPath ? openStepSink(staged.stage(trajPath), format, plan.compression) : null;
  // Parquet compresses behind the writes: past this many queued episodes, playing waits for it.
  const maxBacklog = 8;
  const episodes: EpisodeRow[] = [];
  const pending = new Map<number, JobResult>();
  // Results are written in job order; `cursor` is the position in `jobs` of the next one to write.
  const position = new Map(jobs.map((j, k) => [j.index, k]));
  let cursor = 0;

  const showBar = progress && process.stderr.isTTY === true;
  const bar = showBar ? new cliProgress.SingleBar({ stream: process.stderr, format: 'episodes {bar} {value}/{total} | {eta_formatted} left | {policy} seed {seed}', hideCursor: true }, cliProgress.Presets.shades_classic) : null;
  bar?.start(jobs.length, 0, { policy: '', seed: '' });

  const write = (r: JobResult): void => {
    if (steps && r.body) steps.writeBody(r.body);
    else if (steps && r.steps) steps.writeBuffers(r.steps as TableBuffers);
    // Written (Arrow to the file, Parquet into the writer's own memory): a worker may reuse the buffers.
    r.release?.();
    if (r.rolloutJson !== null && rolloutDir !== null) writeFileSync(join(rolloutDir, rolloutFileName(wc.presetName, r.episode)), r.rolloutJson + '\n');
    episodes.push(r.episode);
    bar?.increment(1, { policy: r.episode.policy, seed: String(r.episode.seed) });
  };
  const accept = (r: JobResult): void => {
    const k = position.get(r.index);
    if (k === undefined) throw new Error(`result for job ${r.index}, which is not in this batch`);
    pending.set(k, r);
    for (let next = pending.get(cursor); next !== undefined; next = pending.get(cursor)) {
      pending.delete(cursor);
      write(next);
      cursor++;
    }
  };

  let failed = false;
  try {
    if (pool === null) {
      const builder = stepBuilder();
      for (const j of jobs) {
        const r = playJobRows(cfg, wc, j, builder, makePolicy);
        // Jobs play in order here, so `accept` writes the rows at once: straight from the builder's buffers (views).
        if (wc.trajectories) builder.consume((t) => accept({ ...r, steps: t }));
        else accept({ ...r, steps: null });
        if (pending.size > 0) throw new Error(`job ${j.index} played out of order`);
        if (steps && steps.backlog() > maxBacklog) await steps.drain();
        // A turn of the event loop between episodes: a signal's handler (Ctrl-C) runs, instead of waiting for the run's end.
        else await new Promise((r) => setImmediate(r));
      }
    } else {
      // Bound memory: a job may start only while it is within a window of the write cursor and the
      // writer keeps up.
      const window = 4 * n;
      await pool.run(
        [...jobs],
        (i) => (position.get(i) ?? 0) < cursor + window && (steps === null || steps.backlog() <= maxBacklog),
        (r) => {
          accept(r);
          if (steps && steps.backlog() > maxBacklog) void steps.drain().then(() => pool.poke());
          else pool.poke();
        },
      );
    }
  } catch (e) {
    failed = true;
    throw e;
  } finally {
    try {
      await steps?.close();
    } catch (e) {
      if (!failed) throw e;
    }
    bar?.stop();
  }
  const episodesPath = join(out, `episodes.${format}`);
  writeEpisodes(episodesPath, episodes, plan.compression, staged);
  return { episodes, trajectories: trajPath, episodesPath };
}

/**
 * Write episode rows (in the given order) as one record batch of an Arrow IPC file (compressed as given; `zstd` needs
 * `await zstdEncoder()` first), or as Parquet when `path` ends in `.parquet` (`await parquetWriters()` first); with
 * `staged`, to its staged path.
 */
export function writeEpisodes(path: string, episodes: readonly EpisodeRow[], compression: ArrowCompression = 'none', staged?: StagedFiles): void {
  const eb = episodeBuilder();
  for (const e of episodes) eb.append(e);
  const file = staged ? staged.stage(path) : path;
  if (path.endsWith('.parquet')) {
    loadedParquet().writeEpisodesParquet(file, eb.finish());
    return;
  }
  const es = episodeSink(file, compression);
  es.writeBuffers(eb.finish());
  es.close();
}

/**
 * Name on `staged` the files of an earlier run in `out` that this run's commit replaces: the tables of both formats
 * and the rollout files in DIR/rollouts/. Those it does not write itself are removed, so that a DIR never holds the
 * files of two runs (an earlier run's tables in the other format, its trajectories or rollouts when this run writes
 * none, its rollouts of other seeds).
 */
export function replacingRun(staged: StagedFiles, out: string): void {
  staged.replacing(TABLE_FORMATS.flatMap((f) => [join(out, `trajectories.${f}`), join(out, `episodes.${f}`)]));
  staged.replacingFolder(join(out, 'rollouts'), isRolloutFile);
}

/** Write DIR/summary.json of a run's episodes (to its staged path: `staged.commit()` moves it into place); returns the summary. */
export function writeSummary(out: string, episodes: readonly EpisodeRow[], policies: readonly string[], staged: StagedFiles): { summary: RunSummary; path: string } {
  const summary = summarize(episodes, policies);
  const path = join(out, 'summary.json');
  writeFileSync(staged.stage(path), JSON.stringify(summary, null, 2) + '\n');
  return { summary, path };
}

/** Run every (policy, seed) episode and write the output files. */
export async function runBulk(o: RunOptions): Promise<RunResult> {
  const t0 = performance.now();
  const plan = planRun(o);
  // The run's files replace those in place together, summary included (an earlier run's stay whole until then).
  const { played, summary, path } = await writeStaged(async (staged) => {
    replacingRun(staged, o.out);
    const played = await playToDir(plan, plan.jobs, o.out, o.workers, o.progress !== false, plan.format, staged);
    return { played, ...writeSummary(o.out, played.episodes, plan.policies, staged) };
  });
  return { summary, episodes: played.episodes, files: { trajectories: played.trajectories, episodes: played.episodesPath, summary: path }, seconds: (performance.now() - t0) / 1000 };
}

/** Parse `1-5`, `1,3,7` or `2` into a list of seeds (kept here for existing importers; see args.ts). */
export { parseSeedList };
