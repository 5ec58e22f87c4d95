/**
 * The one episode loop: a `Policy` plays an env-like object (the in-process `Env`, a `RemoteEnv`, anything with
 * `reset`/`step`) from `reset` until the env terminates or truncates it, or the policy stops. The env is the only
 * stepper (reward, the terminal rule and truncation are its answers, never recomputed here); the exporters and the
 * bench watch the steps through hooks.
 */
import type { Policy, PolicyObservation } from './policy.js';
import { type EnvLike, type ResetArgs, type ResetResult, simulationReason, type StepInfo, type StepOutcome, type StepResult } from './env.js';
import { isBankrupt } from '../sim/index.js';

/** One step of an episode as the loop saw it (action `A`, the env's answer `R`; command-level by default). */
export interface EpisodeStep<A = string, R = StepResult> {
  /** 1 for the first action. */
  readonly step: number;
  readonly action: A;
  readonly result: R;
}

/** Watchers of an episode (recorders, exporters); `F` is the reset's result. */
export interface EpisodeHooks<F = ResetResult, A = string, R = StepResult> {
  /** After `reset`, with its result (step 0). */
  onReset?(first: F): void;
  /** After every step; read what you need of the step during the call (the in-process env drops the rest). */
  onStep?(s: EpisodeStep<A, R>): void;
  /**
   * After every step, with its outcome and no observation (`runEpisode` alone): without an `onStep` hook an env with
   * `advance` (the in-process `Env`) builds none, so a watcher that reads the rest from the env itself (the
   * trajectory exporter) costs no status block a step.
   */
  onAdvance?(s: EpisodeStep<A, StepOutcome>): void;
}

/** Outcome of an episode. */
export interface EpisodeResult {
  readonly seed: number;
  readonly policy: string;
  /** Funds after the last step (`info.funds_cents`). */
  readonly finalFundsCents: number;
  /** Ended by the simulation's terminal rule (`bankruptcy`, `horizon_end`). */
  readonly terminated: boolean;
  /** Ended by anything else: the env's `max_steps`, or the policy stopped. */
  readonly truncated: boolean;
  /** `bankruptcy`, `horizon_end`, or `truncated` (the episode table's outcome). */
  readonly outcome: 'bankruptcy' | 'horizon_end' | 'truncated';
  readonly bankrupt: boolean;
  /** Number of actions taken. */
  readonly stepCount: number;
}

/** An env stepped synchronously (the in-process `Env`); `lastValue` is the typed value of the last output. */
export interface SyncEnvLike {
  reset(args: ResetArgs): ResetResult;
  step(action: string): StepResult;
  readonly lastValue?: unknown;
  /** A step without its observation (`Env.advance`), used when no hook watches the steps. */
  advance?(action: string): StepOutcome;
}

/**
 * The value a policy sees for an output that came as text (from a remote env): the JSON document, `{error}` for a
 * usage error's `Error: ...` line, null for help text. The in-process env hands the value over without text.
 */
export function outputValue(obs: { text: string; exit_code: number }): unknown {
  const t = obs.text;
  if (t.startsWith('{') || t.startsWith('[')) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      // not JSON: fall through
    }
  }
  const i = t.lastIndexOf('Error: ');
  return obs.exit_code !== 0 && i >= 0 ? { error: t.slice(i + 'Error: '.length) } : null;
}

/** The value of a step's output: the in-process env's typed value, else the output text decoded. */
function valueOf(env: object, r: StepResult): unknown {
  return 'lastValue' in env ? (env as { lastValue: unknown }).lastValue : outputValue(r.observation);
}

/**
 * An agent of any action space: it sees observations `O` and answers actions `A`, or null to stop. The command-level
 * `Policy` is an `Agent<PolicyObservation, string>`; the turn protocol's agents see a chat and answer whole turns
 * (src/turns/episode.ts). An asynchronous agent (a person at a terminal, an LLM) answers with a promise.
 */
export interface Agent<O, A> {
  readonly name: string;
  reset(seed: number): void;
  act(obs: O): A | null | Promise<A | null>;
}

/** What the loop needs of a step, whatever the env: the env's flags, funds and terminal reason. */
export interface StepView {
  readonly terminated: boolean;
  readonly truncated: boolean;
  readonly fundsCents: number;
  /** The simulation's terminal reason when it has one (`bankruptcy`, `horizon_end`), else null. */
  readonly reason: 'bankruptcy' | 'horizon_end' | null;
}

// The env's (its steps take their flags from it); exported here too, where the loop's users have found it.
export { simulationReason };

/**
 * The loop's bookkeeping, shared by every driver (synchronous, asynchronous, command-level, turn-level): it asks the
 * agent for actions until the env says the episode is over or the agent stops, and sums up the episode.
 */
export class EpisodeLoop<O, A> {
  private steps = 0;
  private done: boolean;
  private terminated = false;
  private funds: number;
  private reason: 'bankruptcy' | 'horizon_end' | null;

  constructor(
    private readonly agent: Agent<O, A>,
    private readonly seed: number,
    private obs: O,
    first: StepView,
  ) {
    agent.reset(seed);
    this.reason = first.reason;
    this.done = first.terminated || first.truncated || this.reason !== null;
    this.funds = first.fundsCents;
  }

  /** The agent's next action, or null when the episode is over (use `nextAsync` for an asynchronous agent). */
  next(): A | null {
    if (this.done) return null;
    const a = this.agent.act(this.obs);
    if (a instanceof Promise) throw new TypeError(`agent ${this.agent.name} answered with a promise: drive it with an asynchronous loop`);
    return this.took(a);
  }

  /** `next` for an agent that may answer with a promise. */
  async nextAsync(): Promise<A | null> {
    if (this.done) return null;
    return this.took(await this.agent.act(this.obs));
  }

  private took(a: A | null): A | null {
    if (a === null) this.done = true;
    return a;
  }

  /** Note a step: what the env answered and what the agent observes next. */
  record(view: StepView, obs: O): void {
    this.recordFields(view.terminated, view.truncated, view.fundsCents, view.reason, obs);
  }

  /** `record` of a view given by its fields (the command-level drivers': no `StepView` object a step). */
  recordFields(terminated: boolean, truncated: boolean, fundsCents: number, reason: StepView['reason'], obs: O): void {
    this.steps++;
    this.obs = obs;
    this.funds = fundsCents;
    this.terminated = terminated;
    this.reason = reason;
    this.done = terminated || truncated;
  }

  /** Number of steps recorded so far. */
  get stepCount(): number {
    return this.steps;
  }

  result(): EpisodeResult {
    const ended = this.terminated || this.reason !== null;
    return {
      seed: this.seed,
      policy: this.agent.name,
      finalFundsCents: this.funds,
      terminated: ended,
      truncated: !ended,
      outcome: this.reason ?? 'truncated',
      bankrupt: isBankrupt({ fundsCents: this.funds }),
      stepCount: this.steps,
    };
  }
}

const START: PolicyObservation = { lastCommand: null, lastExit: 0, lastOutput: null };

function firstView(first: ResetResult): StepView {
  return { terminated: false, truncated: false, fundsCents: first.info.funds_cents, reason: simulationReason(first.info.terminal_reason) };
}

/** The loop of a command-level policy's episode from its reset (for drivers of their own, e.g. batched ones). */
export function startCommandEpisode(policy: Policy, seed: number, first: ResetResult): EpisodeLoop<PolicyObservation, string> {
  return new EpisodeLoop<PolicyObservation, string>(policy, seed, START, firstView(first));
}

/** Note a step of `startCommandEpisode`'s loop; `value` is the output's typed value (default: decoded from its text). */
export function recordCommandStep(loop: EpisodeLoop<PolicyObservation, string>, action: string, r: StepResult, value: unknown = outputValue(r.observation)): void {
  recordOutcome(loop, action, r, r.observation.exit_code, value);
}

/** Note a step (a `StepResult` or `Env.advance`'s `StepOutcome`) of a command-level loop: its view, and what the policy sees. */
function recordOutcome(loop: EpisodeLoop<PolicyObservation, string>, action: string, step: { terminated: boolean; truncated: boolean; info: StepInfo }, exitCode: number, value: unknown): void {
  loop.recordFields(step.terminated, step.truncated, step.info.funds_cents, simulationReason(step.info.terminal_reason), { lastCommand: action, lastExit: exitCode, lastOutput: value });
}

/** A step's result without its observation (what `Env.advance` returns for it); `value`: the output's typed value. */
function outcomeOfStep(r: StepResult, value: unknown): StepOutcome {
  return { exit_code: r.observation.exit_code, value: value as StepOutcome['value'], reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
}

/**
 * Play `policy` on `env` for one episode (from `env.reset(args)`); `args.options.max_steps` truncates it. Without an
 * `onStep` hook an env with `advance` (the in-process `Env`) skips building observations nobody reads (`onAdvance`
 * watches those steps).
 */
export function runEpisode(env: SyncEnvLike, policy: Policy, args: ResetArgs, hooks: EpisodeHooks = {}): EpisodeResult {
  const first = env.reset(args);
  const loop = startCommandEpisode(policy, args.seed, first);
  hooks.onReset?.(first);
  const advance = hooks.onStep === undefined && env.advance !== undefined ? env.advance.bind(env) : null;
  for (let a = loop.next(); a !== null; a = loop.next()) {
    if (advance !== null) {
      const o = advance(a);
      recordOutcome(loop, a, o, o.exit_code, o.value);
      hooks.onAdvance?.({ step: loop.stepCount, action: a, result: o });
    } else {
      const r = env.step(a);
      const value = valueOf(env, r);
      recordCommandStep(loop, a, r, value);
      hooks.onStep?.({ step: loop.stepCount, action: a, result: r });
      hooks.onAdvance?.({ step: loop.stepCount, action: a, result: outcomeOfStep(r, value) });
    }
  }
  return loop.result();
}

/** `runEpisode` over an asynchronous env (a `RemoteEnv`, or any `EnvLike`). */
export async function runEpisodeAsync(env: EnvLike, policy: Policy, args: ResetArgs, hooks: EpisodeHooks = {}): Promise<EpisodeResult> {
  const first = await env.reset(args);
  const loop = startCommandEpisode(policy, args.seed, first);
  hooks.onReset?.(first);
  for (let a = await loop.nextAsync(); a !== null; a = await loop.nextAsync()) {
    const r = await env.step(a);
    const value = valueOf(env, r);
    recordCommandStep(loop, a, r, value);
    hooks.onStep?.({ step: loop.stepCount, action: a, result: r });
    hooks.onAdvance?.({ step: loop.stepCount, action: a, result: outcomeOfStep(r, value) });
  }
  return loop.result();
}
