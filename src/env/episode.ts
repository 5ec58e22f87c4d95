/**
 * Run a command-level policy for one episode against an in-process simulation.
 */
import type { Policy } from './policy.js';
import { type ExperimentConfig, isBankrupt, Simulation } from '../sim/index.js';

/** One executed step of an episode. */
export interface EpisodeStep {
  readonly cmd: string;
  readonly exit: number;
  readonly text: string;
}

/** Outcome of an episode. */
export interface EpisodeResult {
  readonly seed: number;
  readonly policy: string;
  readonly finalFundsCents: number;
  readonly bankrupt: boolean;
  /** Number of commands executed (also when steps are not recorded). */
  readonly stepCount: number;
  readonly steps: EpisodeStep[];
  readonly sim: Simulation;
}

/** Play `policy` on a fresh world until it stops (or `maxSteps`). */
export function runEpisode(cfg: ExperimentConfig, seed: number, policy: Policy, opts: { maxSteps?: number; record?: boolean } = {}): EpisodeResult {
  const sim = Simulation.create(cfg, { seed });
  policy.reset(seed);
  const steps: EpisodeStep[] = [];
  let lastCommand: string | null = null;
  let lastExit = 0;
  let lastOutput: unknown = null;
  const max = opts.maxSteps ?? 100_000;
  let stepCount = 0;
  for (let i = 0; i < max; i++) {
    const cmd = policy.act({ lastCommand, lastExit, lastOutput });
    if (cmd === null) break;
    const r = sim.execute(cmd);
    stepCount++;
    if (opts.record !== false) steps.push({ cmd, exit: r.exit, text: r.text });
    lastCommand = cmd;
    lastExit = r.exit;
    lastOutput = r.value;
  }
  return { seed, policy: policy.name, finalFundsCents: sim.state.fundsCents, bankrupt: isBankrupt(sim.state), stepCount, steps, sim };
}
