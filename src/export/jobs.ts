/**
 * One bulk-run job (an episode of a policy on a seed), shared by the in-process path and the worker threads.
 */
import type { Policy } from '../env/policy.js';
import type { ExperimentConfig } from '../sim/index.js';
import type { PackedTable, TableBuffers, TableBuilder } from './table-builder.js';
import { rollout } from './rollout.js';
import { toRolloutJson } from './rollout-json.js';
import type { EpisodeRow, StepRow } from './columns.js';
import type { RecordBatchBody } from './ipc-body.js';

/** Settings shared by every job of a run. */
export interface WorkerConfig {
  /** Preset name or path (loaded once per worker). */
  preset: string;
  /** Preset name as written into the tables. */
  presetName: string;
  runId: string;
  maxSteps: number | null;
  trajectories: boolean;
  rollouts: boolean;
  /** Shared slots per worker thread for step rows (default `DEFAULT_SLOTS`; more than 1 lets a worker run ahead of the writer). */
  slots?: number;
  /**
   * Worker threads only: how a worker hands over an episode's step rows. `'zstd'` or `'none'`: as the body of the
   * episode's Arrow IPC record batch (./ipc-body.ts), its buffers compressed by the worker with that codec (the file's
   * `--compression`), so the writer only writes bytes; absent or null: the rows' raw buffers (Parquet, whose writer
   * encodes them itself).
   */
  body?: 'zstd' | 'none' | null;
}

/** Default of `WorkerConfig.slots`: the episodes the main thread lets a worker run ahead of the writer (run.ts). */
export const DEFAULT_SLOTS = 4;

/** One episode to play. */
export interface JobRequest {
  index: number;
  policy: string;
  seed: number;
}

/** A played episode. */
export interface JobResult {
  index: number;
  episode: EpisodeRow;
  steps: TableBuffers | null;
  /** The step rows as an Arrow IPC record batch body instead (`WorkerConfig.body`), `steps` then null. */
  body?: RecordBatchBody | null;
  /** Reference rollout JSON (`yc_bench_result_*.json`), when requested. */
  rolloutJson: string | null;
  /** Called once `steps` is written (their buffers may then be reused: a worker's shared slot). */
  release?: () => void;
}

/**
 * What a bulk-run worker thread posts for a played job: the result without its step rows, which lie in the worker's
 * shared slot `slot` (`sab`: the slot's SharedArrayBuffer when the main thread does not hold it yet, else null),
 * either packed (`packed.layout`) or as a record batch body (`body`: its bytes are the slot's first `byteLength`).
 * The main thread posts `{ free: slot }` back once it has written them.
 */
export type WorkerMessage = Omit<JobResult, 'steps' | 'body'> & {
  steps: null;
  packed: { slot: number; layout: PackedTable; sab: SharedArrayBuffer | null } | null;
  body: ({ slot: number; sab: SharedArrayBuffer | null } & Omit<RecordBatchBody, 'chunks'>) | null;
};

/**
 * Play one job and leave its step rows in `builder` (when the run keeps trajectories; the builder is left as it was
 * otherwise): the result but its steps, which the caller takes straight from the builder (`TableBuilder.pack` into a
 * worker's slot, or `TableBuilder.consume`: a record batch body, or the in-process writer).
 */
export function playJobRows(cfg: ExperimentConfig, wc: WorkerConfig, job: JobRequest, builder: TableBuilder<StepRow>, make: (name: string) => Policy): Omit<JobResult, 'steps' | 'body'> {
  const policy = make(job.policy);
  const meta = { runId: wc.runId, episodeId: job.index, policy: job.policy, preset: wc.presetName, seed: job.seed };
  const opts = wc.maxSteps !== null ? { maxSteps: wc.maxSteps, steps: wc.trajectories ? builder : null } : { steps: wc.trajectories ? builder : null };
  const r = rollout(cfg, policy, meta, opts);
  const rolloutJson = wc.rollouts ? JSON.stringify(toRolloutJson(r.sim, job.policy, job.seed, r.episode.steps), null, 2) : null;
  return { index: job.index, episode: r.episode, rolloutJson };
}
