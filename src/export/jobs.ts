/**
 * One bulk-run job (an episode of a policy on a seed), shared by the in-process path and the worker threads.
 */
import type { Policy } from '../env/policy.js';
import type { ExperimentConfig } from '../sim/index.js';
import type { TableBuffers, TableBuilder } from './table-builder.js';
import { rollout } from './rollout.js';
import { toRolloutJson } from './rollout-json.js';
import type { EpisodeRow, StepRow } from './columns.js';

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
}

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
  /** Reference rollout JSON (`yc_bench_result_*.json`), when requested. */
  rolloutJson: string | null;
}

/** Play one job. */
export function playJob(cfg: ExperimentConfig, wc: WorkerConfig, job: JobRequest, builder: TableBuilder<StepRow>, make: (name: string) => Policy): JobResult {
  const policy = make(job.policy);
  const meta = { runId: wc.runId, episodeId: job.index, policy: job.policy, preset: wc.presetName, seed: job.seed };
  const opts = wc.maxSteps !== null ? { maxSteps: wc.maxSteps, steps: wc.trajectories ? builder : null } : { steps: wc.trajectories ? builder : null };
  const r = rollout(cfg, policy, meta, opts);
  const steps = wc.trajectories ? builder.finish() : null;
  const rolloutJson = wc.rollouts ? JSON.stringify(toRolloutJson(r.sim, job.policy, job.seed, r.episode.steps), null, 2) : null;
  return { index: job.index, episode: r.episode, steps, rolloutJson };
}
