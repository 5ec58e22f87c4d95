/**
 * The Gym-shaped environment: one step is one agent command (free text in, structured observation out).
 * Reward is the change in company funds caused by the step, in dollars (exact cents in `info`).
 */
import { loadPreset } from '../config/load.js';
import { companyFigures, DOMAINS, type ExperimentConfig, isoformat, type Out, outcome, type SimSnapshot, Simulation, toFloat } from '../sim/index.js';
import { validateSimSnapshot } from './snapshot.js';

/** Options of `reset`. */
export interface ResetOptions {
  /** Truncate the episode after this many steps (default: unlimited). */
  max_steps?: number;
  /** ISO start date (default: the preset's `sim.start_date`). */
  start_date?: string;
  company_name?: string;
  horizon_years?: number;
}

/** Arguments of `reset`. */
export interface ResetArgs {
  seed: number;
  /** Preset name or path, or an already loaded config (default `"default"`). */
  preset?: string | ExperimentConfig;
  options?: ResetOptions;
}

/** The typed status block of every observation. */
export interface Status {
  sim_time: string;
  horizon_end: string;
  funds_cents: number;
  monthly_payroll_cents: number;
  runway_months: number | null;
  prestige: Record<string, number>;
  trust: Record<string, number>;
  active_tasks: number;
  planned_tasks: number;
  completed_tasks: number;
  bankrupt: boolean;
  horizon_reached: boolean;
  events: unknown[];
}

/** What the agent sees after each step. */
export interface Observation {
  /** Exactly what the reference CLI prints for the command. */
  text: string;
  ok: boolean;
  exit_code: number;
  /** Recognised verb (`"task accept"`) or null. */
  command: string | null;
  status: Status;
}

/** Extra step information. */
export interface StepInfo {
  reward_cents: number;
  step: number;
  funds_cents: number;
  terminal_reason: 'bankruptcy' | 'horizon_end' | 'max_steps' | null;
  [k: string]: unknown;
}

/** Result of `reset`. */
export interface ResetResult {
  observation: Observation;
  info: StepInfo;
}

/** Result of `step`. */
export interface StepResult {
  observation: Observation;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

/** Exact, JSON-serialisable environment snapshot. */
export interface EnvSnapshot {
  format: 'ycgym-env';
  version: 1;
  sim: SimSnapshot;
  steps: number;
  max_steps: number | null;
  done: boolean;
}

/** Thrown when the API is misused (step before reset, step after the episode ended). */
export class EnvUsageError extends Error {
  constructor(
    readonly code: 'not_reset' | 'episode_over',
    message: string,
  ) {
    super(message);
  }
}

/** The common interface of the in-process env and the network client (they are interchangeable). */
export interface EnvLike {
  reset(args: ResetArgs): ResetResult | Promise<ResetResult>;
  step(action: string): StepResult | Promise<StepResult>;
  snapshot(): EnvSnapshot | Promise<EnvSnapshot>;
  restore(snap: EnvSnapshot): ResetResult | Promise<ResetResult>;
  close(): void | Promise<void>;
}

/** Build the status block of a simulation. */
export function statusOf(sim: Simulation, events: unknown[] = []): Status {
  const s = sim.state;
  const f = companyFigures(s);
  const prestige: Record<string, number> = {};
  for (const d of DOMAINS) prestige[d] = toFloat(s.prestige[d]);
  const trust: Record<string, number> = {};
  for (const c of [...s.clients].sort((a, b) => (a.name < b.name ? -1 : 1))) trust[c.name] = toFloat(c.trust);
  return {
    sim_time: isoformat(f.simTime),
    horizon_end: isoformat(f.horizonEnd),
    funds_cents: f.fundsCents,
    monthly_payroll_cents: f.monthlyPayrollCents,
    runway_months: f.runwayMonths,
    prestige,
    trust,
    active_tasks: f.tasks.active,
    planned_tasks: f.tasks.planned,
    completed_tasks: f.tasks.completed,
    bankrupt: f.bankrupt,
    horizon_reached: f.horizonReached,
    events,
  };
}

/** What a client needs to build fixed-size observation spaces for a preset. */
export interface PresetDescription {
  /** Client names, sorted (the order of `status.trust`). */
  clients: string[];
  num_employees: number;
  prestige_max: number;
  trust_max: number;
}

/** Describe a preset's observation-relevant facts (clients are the same for every seed). */
export function describePreset(preset: string | ExperimentConfig): PresetDescription {
  const cfg = resolvePreset(preset);
  const sim = Simulation.create(cfg, { seed: 1 });
  return {
    clients: sim.state.clients.map((c) => c.name).sort(),
    num_employees: sim.state.employees.length,
    prestige_max: cfg.world.prestige_max,
    trust_max: cfg.world.trust_max,
  };
}

function resolvePreset(p: string | ExperimentConfig | undefined): ExperimentConfig {
  if (p === undefined) return loadPreset('default');
  return typeof p === 'string' ? loadPreset(p) : p;
}

/** In-process YC-Bench environment. */
export class Env implements EnvLike {
  private sim: Simulation | null = null;
  private steps = 0;
  private maxSteps: number | null = null;
  private done = false;

  /** The underlying simulation (null before `reset`). */
  get simulation(): Simulation | null {
    return this.sim;
  }

  /** Start a new episode. */
  reset(args: ResetArgs): ResetResult {
    const cfg = resolvePreset(args.preset);
    const o = args.options ?? {};
    if (o.max_steps !== undefined && (!Number.isInteger(o.max_steps) || o.max_steps < 1)) throw new RangeError('max_steps must be a positive integer');
    const simOpts: { seed: number; startDate?: string; companyName?: string; horizonYears?: number } = { seed: args.seed };
    if (o.start_date !== undefined) simOpts.startDate = o.start_date;
    if (o.company_name !== undefined) simOpts.companyName = o.company_name;
    if (o.horizon_years !== undefined) simOpts.horizonYears = o.horizon_years;
    this.sim = Simulation.create(cfg, simOpts);
    this.steps = 0;
    this.maxSteps = o.max_steps ?? null;
    this.done = false;
    return this.initial();
  }

  private initial(): ResetResult {
    const sim = this.sim as Simulation;
    const observation: Observation = { text: '', ok: true, exit_code: 0, command: null, status: statusOf(sim) };
    return { observation, info: this.info(0) };
  }

  private terminalReason(): StepInfo['terminal_reason'] {
    const end = outcome((this.sim as Simulation).state);
    if (end.reason !== null) return end.reason;
    if (this.maxSteps !== null && this.steps >= this.maxSteps) return 'max_steps';
    return null;
  }

  private info(rewardCents: number): StepInfo {
    const s = (this.sim as Simulation).state;
    return { reward_cents: rewardCents, step: this.steps, funds_cents: s.fundsCents, terminal_reason: this.terminalReason() };
  }

  /** Execute one agent command. Invalid commands are ordinary steps with an error observation and zero reward. */
  step(action: string): StepResult {
    const sim = this.sim;
    if (sim === null) throw new EnvUsageError('not_reset', 'call reset() before step()');
    if (this.done) throw new EnvUsageError('episode_over', 'the episode is over (terminated or truncated); call reset()');
    const before = sim.state.fundsCents;
    const r = sim.execute(typeof action === 'string' ? action : String(action));
    this.steps++;
    const events = r.ok && r.verb === 'sim resume' ? ((r.value as { [k: string]: Out })['wake_events'] as unknown[]) : [];
    const rewardCents = sim.state.fundsCents - before;
    const terminated = outcome(sim.state).terminated;
    const truncated = !terminated && this.maxSteps !== null && this.steps >= this.maxSteps;
    this.done = terminated || truncated;
    return {
      observation: { text: r.text, ok: r.ok, exit_code: r.exit, command: r.verb, status: statusOf(sim, events) },
      reward: rewardCents / 100,
      terminated,
      truncated,
      info: this.info(rewardCents),
    };
  }

  /** Exact snapshot of the whole environment. */
  snapshot(): EnvSnapshot {
    if (this.sim === null) throw new EnvUsageError('not_reset', 'call reset() before snapshot()');
    return { format: 'ycgym-env', version: 1, sim: this.sim.snapshot(), steps: this.steps, max_steps: this.maxSteps, done: this.done };
  }

  /** Continue from a snapshot exactly. */
  restore(snap: EnvSnapshot): ResetResult {
    if (!snap || snap.format !== 'ycgym-env' || snap.version !== 1) throw new RangeError('not a ycgym env snapshot (format ycgym-env, version 1)');
    if (!Number.isSafeInteger(snap.steps) || snap.steps < 0) throw new RangeError('invalid env snapshot: steps');
    if (snap.max_steps !== null && (!Number.isSafeInteger(snap.max_steps) || snap.max_steps < 1)) throw new RangeError('invalid env snapshot: max_steps');
    if (typeof snap.done !== 'boolean') throw new RangeError('invalid env snapshot: done');
    this.sim = Simulation.restore(validateSimSnapshot(snap.sim));
    this.steps = snap.steps;
    this.maxSteps = snap.max_steps;
    this.done = snap.done;
    return this.initial();
  }

  /** An independent copy of this environment. */
  clone(): Env {
    const e = new Env();
    if (this.sim !== null) e.restore(this.snapshot());
    return e;
  }

  /** Release resources (nothing to release in-process). */
  close(): void {
    this.sim = null;
  }
}
