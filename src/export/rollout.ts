/**
 * Play one episode of a command-level policy and record it as step rows: `runEpisode` over an in-process `Env`
 * (the env steps, rewards and ends the episode; the rows are built from its observations).
 */
import type { Policy } from '../env/policy.js';
import { type EpisodeHooks, runEpisode } from '../env/episode.js';
import { type ExperimentConfig, outcome, type Simulation } from '../sim/index.js';
import { Env, type Status, type StatusFigures, statusFigures, StatusObjects } from '../env/env.js';
import type { TableBuilder } from './table-builder.js';
import { daysBetween, isoToMicros, type EpisodeRow, type Outcome, type StepRow, type TextSource } from './columns.js';

/** Adversarial clients as the harness defines them (the policy never sees loyalty). */
export const ADVERSARIAL_LOYALTY = -0.3;

/** Identification of an episode in the tables. */
export interface EpisodeMeta {
  runId: string;
  episodeId: number;
  policy: string;
  preset: string;
  seed: number;
}

/** Options of `rollout`. */
export interface RolloutOptions {
  /** Truncate after this many actions (default 100000). */
  maxSteps?: number;
  /** Append the episode's N+1 step rows here (null: don't record steps). */
  steps?: TableBuilder<StepRow> | null;
}

/** Episode outcome with the numbers the summaries need. */
export interface RolloutResult {
  episode: EpisodeRow;
  sim: Simulation;
}

/**
 * A step row from an observation's status block and the step's fields; `startUs`: the episode's start instant,
 * `horizonUs`: its horizon end (default: parsed from the status block).
 */
export function stepRow(
  meta: EpisodeMeta,
  step: number,
  action: string | null,
  obs: { text: string; ok: boolean; exit_code: number; command: string | null; status: Status },
  simTimeUs: number,
  rewardCents: number,
  terminated: boolean,
  truncated: boolean,
  startUs: number,
  horizonUs: number = isoToMicros(obs.status.horizon_end),
): StepRow {
  return figuresRow(meta, step, action, obs, simTimeUs, rewardCents, terminated, truncated, startUs, horizonUs);
}

/** `stepRow` from the figures of the status block a row records (`statusFigures`), its text a string or a source. */
function figuresRow(
  meta: EpisodeMeta,
  step: number,
  action: string | null,
  obs: { text: string | TextSource; ok: boolean; exit_code: number; command: string | null; status: StatusFigures },
  simTimeUs: number,
  rewardCents: number,
  terminated: boolean,
  truncated: boolean,
  startUs: number,
  horizonUs: number,
): StepRow {
  const s = obs.status;
  return {
    run_id: meta.runId,
    episode_id: meta.episodeId,
    policy: meta.policy,
    preset: meta.preset,
    seed: meta.seed,
    step,
    action,
    observation_text: obs.text,
    ok: obs.ok,
    exit_code: obs.exit_code,
    command: obs.command,
    sim_time: simTimeUs,
    funds_cents: s.funds_cents,
    monthly_payroll_cents: s.monthly_payroll_cents,
    runway_months: s.runway_months,
    prestige_research: s.prestige['research'] ?? 0,
    prestige_inference: s.prestige['inference'] ?? 0,
    prestige_data_environment: s.prestige['data_environment'] ?? 0,
    prestige_training: s.prestige['training'] ?? 0,
    active_tasks: s.active_tasks,
    planned_tasks: s.planned_tasks,
    completed_tasks: s.completed_tasks,
    reward: rewardCents / 100,
    reward_cents: rewardCents,
    terminated,
    truncated,
    is_first: step === 0,
    is_last: false,
    sim_day: daysBetween(simTimeUs, startUs),
    days_left: daysBetween(horizonUs, simTimeUs),
    trust: s.trust,
  };
}

/** Task counts of a finished episode, from the simulation (harness knowledge). */
export function episodeCounts(sim: Simulation): Pick<EpisodeRow, 'tasks_succeeded' | 'tasks_failed' | 'accepted_from_adversarial' | 'accepted_total'> {
  const s = sim.state;
  let ok = 0;
  let fail = 0;
  let adv = 0;
  let total = 0;
  for (const t of s.tasks) {
    if (!t.owned) continue;
    total++;
    if (t.status === 'completed_success') ok++;
    else if (t.status === 'completed_fail') fail++;
    const c = t.clientId !== null ? s.clients[t.clientId] : undefined;
    if (c && c.loyalty < ADVERSARIAL_LOYALTY) adv++;
  }
  return { tasks_succeeded: ok, tasks_failed: fail, accepted_from_adversarial: adv, accepted_total: total };
}

/** Outcome of a simulation that stopped. */
export function outcomeOf(sim: Simulation): Outcome {
  return outcome(sim.state).reason ?? 'truncated';
}

/**
 * Play `policy` on a fresh world (through the one episode loop over an `Env`) and record its step rows. Rows are
 * appended as the steps happen, each output text rendered straight into the builder's bytes (the env runs with
 * `text: false` and `Env.appendLastText`); the last row is marked last (and truncated, when the episode did not
 * terminate) once the episode is over.
 */
export function rollout(cfg: ExperimentConfig, policy: Policy, meta: EpisodeMeta, opts: RolloutOptions = {}): RolloutResult {
  const env = new Env();
  const b = opts.steps ?? null;
  let sim: Simulation | null = null;
  let lastRow = -1;
  let lastTerminated = false;
  // The step's output text, rendered into the row builder's bytes as the row is appended.
  const lastText: TextSource = { appendText: (sink) => env.appendLastText(sink) };
  // What the rows' prestige and trust were last built from (unchanged values are not converted again).
  const figures = new StatusObjects();
  const append = (row: StepRow): void => {
    (b as TableBuilder<StepRow>).append(row);
    lastRow = (b as TableBuilder<StepRow>).length - 1;
    lastTerminated = row.terminated;
  };
  const hooks: EpisodeHooks = b
    ? {
        onReset: (first) => {
          const s = (sim = env.simulation as Simulation).state;
          append(stepRow(meta, 0, null, first.observation, s.simTime, 0, false, false, s.startTime, s.horizonEnd));
        },
        // From the env's last output and the simulation: the env builds no observation (no status block) for it.
        onAdvance: ({ step, action, result: o }) => {
          const simNow = sim as Simulation;
          const s = simNow.state;
          const out = env.lastOutput as NonNullable<Env['lastOutput']>;
          const obs = { text: lastText, ok: out.ok, exit_code: out.exit, command: out.verb, status: statusFigures(simNow, figures) };
          append(figuresRow(meta, step, action, obs, s.simTime, o.info.reward_cents, o.terminated, o.truncated, s.startTime, s.horizonEnd));
        },
      }
    : {};
  const options = { max_steps: opts.maxSteps ?? 100_000, stall_steps: 0, ...(b ? { text: false } : {}) };
  const r = runEpisode(env, policy, { seed: meta.seed, preset: cfg, options }, hooks);
  if (b && lastRow >= 0) {
    b.setBool(lastRow, 'is_last', true);
    // An episode that ends without terminating (max steps, or the policy stopped) is truncated at its last row.
    if (!lastTerminated) b.setBool(lastRow, 'truncated', true);
  }
  const final = env.simulation as Simulation;
  const episode: EpisodeRow = {
    run_id: meta.runId,
    episode_id: meta.episodeId,
    seed: meta.seed,
    policy: meta.policy,
    preset: meta.preset,
    final_funds_cents: r.finalFundsCents,
    outcome: r.outcome,
    steps: r.stepCount,
    ...episodeCounts(final),
  };
  return { episode, sim: final };
}
