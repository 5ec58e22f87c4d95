/**
 * The one episode loop: a `Policy` plays an env-like object (the in-process `Env`, a `RemoteEnv`, anything with
 * `reset`/`step`) from `reset` until the env terminates or truncates it, or the policy stops. The env is the only
 * stepper (reward, the terminal rule and truncation are its answers, never recomputed here); the exporters and the
 * bench watch the steps through hooks.
 */
import type { Policy, PolicyObservation } from './policy.js';
import type { EnvLike, ResetArgs, ResetResult, StepInfo, StepOutcome, StepResult } from './env.js';

/** One step of an episode as the loop saw it. */
export interface EpisodeStep {
  /** 1 for the first action. */
  readonly step: number;
  readonly action: string;
  readonly result: StepResult;
}

/** Watchers of an episode (recorders, exporters). */
export interface EpisodeHooks {
  /** After `reset`, with its result (step 0). */
  onReset?(first: ResetResult): void;
  /** After every step; read what you need of the step during the call (the in-process env drops the rest). */
  onStep?(s: EpisodeStep): void;
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

/** The loop's bookkeeping, shared by the synchronous and the asynchronous driver. */
class EpisodeLoop {
  private obs: PolicyObservation = { lastCommand: null, lastExit: 0, lastOutput: null };
  private steps = 0;
  private done: boolean;
  private terminated = false;
  private funds: number;
  private reason: 'bankruptcy' | 'horizon_end' | null;

  constructor(
    private readonly policy: Policy,
    private readonly seed: number,
    first: ResetResult,
    private readonly hooks: EpisodeHooks,
  ) {
    policy.reset(seed);
    hooks.onReset?.(first);
    const r = first.info.terminal_reason;
    this.reason = r === 'bankruptcy' || r === 'horizon_end' ? r : null;
    this.done = this.reason !== null;
    this.funds = first.info.funds_cents;
  }

  /** The policy's next action, or null when the episode is over. */
  next(): string | null {
    if (this.done) return null;
    const a = this.policy.act(this.obs);
    if (a === null) this.done = true;
    return a;
  }

  /** Note a step: its action, exit code, flags, info and output value (the hooks see `result` when there is one). */
  record(action: string, step: { exit_code: number; terminated: boolean; truncated: boolean; info: StepInfo }, value: unknown, result: StepResult | null): void {
    this.steps++;
    this.obs = { lastCommand: action, lastExit: step.exit_code, lastOutput: value };
    this.funds = step.info.funds_cents;
    this.terminated = step.terminated;
    const r = step.info.terminal_reason;
    this.reason = r === 'bankruptcy' || r === 'horizon_end' ? r : null;
    this.done = step.terminated || step.truncated;
    if (result !== null) this.hooks.onStep?.({ step: this.steps, action, result });
  }

  result(): EpisodeResult {
    const ended = this.terminated || this.reason !== null;
    return {
      seed: this.seed,
      policy: this.policy.name,
      finalFundsCents: this.funds,
      terminated: ended,
      truncated: !ended,
      outcome: this.reason ?? 'truncated',
      bankrupt: this.funds < 0,
      stepCount: this.steps,
    };
  }
}

/**
 * Play `policy` on `env` for one episode (from `env.reset(args)`); `args.options.max_steps` truncates it. Without an
 * `onStep` hook an env with `advance` (the in-process `Env`) skips building observations nobody reads.
 */
export function runEpisode(env: SyncEnvLike, policy: Policy, args: ResetArgs, hooks: EpisodeHooks = {}): EpisodeResult {
  const loop = new EpisodeLoop(policy, args.seed, env.reset(args), hooks);
  const advance = hooks.onStep === undefined && env.advance !== undefined ? env.advance.bind(env) : null;
  for (let a = loop.next(); a !== null; a = loop.next()) {
    if (advance !== null) {
      const o = advance(a);
      loop.record(a, { exit_code: o.exit_code, terminated: o.terminated, truncated: o.truncated, info: o.info }, o.value, null);
    } else {
      const r = env.step(a);
      loop.record(a, flags(r), valueOf(env, r), r);
    }
  }
  return loop.result();
}

/** `runEpisode` over an asynchronous env (a `RemoteEnv`, or any `EnvLike`). */
export async function runEpisodeAsync(env: EnvLike, policy: Policy, args: ResetArgs, hooks: EpisodeHooks = {}): Promise<EpisodeResult> {
  const loop = new EpisodeLoop(policy, args.seed, await env.reset(args), hooks);
  for (let a = loop.next(); a !== null; a = loop.next()) {
    const r = await env.step(a);
    loop.record(a, flags(r), valueOf(env, r), r);
  }
  return loop.result();
}

function flags(r: StepResult): { exit_code: number; terminated: boolean; truncated: boolean; info: StepInfo } {
  return { exit_code: r.observation.exit_code, terminated: r.terminated, truncated: r.truncated, info: r.info };
}
