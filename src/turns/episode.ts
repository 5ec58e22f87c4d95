/**
 * The turn protocol through the one episode loop: an agent that answers whole turns (the paper's LLM agent, a person
 * at `ycgym play`) plays a `TurnEnv` (or anything with its `reset`/`step`/`messages`) with the same `EpisodeLoop` as
 * the command-level policies. The run's end is the env's (`done`, its terminal reason); nothing is recomputed here.
 */
import { type Agent, type EpisodeHooks, EpisodeLoop, type EpisodeResult, type EpisodeStep, outputValue, simulationReason, type StepView } from '../env/episode.js';
import type { Policy, PolicyObservation } from '../env/policy.js';
import type { ChatMessage, TurnAction, TurnInfo, TurnResetArgs, TurnResetResult, TurnStepResult } from './turns.js';
import type { ToolResult } from './executor.js';

/** What a turn-level agent sees before each turn. */
export interface TurnObservation {
  /** The user message that opens this turn (the turn context; the first user message after reset). */
  readonly userMessage: string | null;
  /** Run-level information after the reset or the last turn. */
  readonly info: TurnInfo;
  /** The tool results of the last turn (empty before the first). */
  readonly toolResults: readonly ToolResult[];
  /** The chat the reference would send to the model now (system prompt and kept history). */
  messages(): ChatMessage[] | Promise<ChatMessage[]>;
}

/** An agent of the turn protocol: one whole turn (tool calls or commands, and the assistant text) per step. */
export type TurnAgent = Agent<TurnObservation, TurnAction>;

/** A turn environment, in process (`TurnEnv`) or behind a transport. */
export interface TurnEnvLike {
  reset(args: TurnResetArgs): TurnResetResult | Promise<TurnResetResult>;
  step(action: TurnAction): TurnStepResult | Promise<TurnStepResult>;
  messages(): ChatMessage[] | Promise<ChatMessage[]>;
}

/** One turn as the loop saw it. */
export type TurnEpisodeStep = EpisodeStep<TurnAction, TurnStepResult>;

/** Watchers of a run of the turn protocol (`onStep` after every turn). */
export type TurnEpisodeHooks = EpisodeHooks<TurnResetResult, TurnAction, TurnStepResult>;

/** The loop's view of a turn: the run is terminated by the simulation's reasons, truncated by `max_turns` (`error`). */
export function turnView(r: { done: boolean; info: TurnInfo }): StepView {
  const reason = r.done ? simulationReason(r.info.terminal_reason) : null;
  return { terminated: reason !== null, truncated: r.done && reason === null, fundsCents: r.info.funds_cents, reason };
}

/**
 * Play one run of the turn protocol (up to its `max_episodes` episodes) with `agent`, from `env.reset(args)` until
 * the env says the run is over or the agent stops (answers null). One step of the loop is one turn.
 */
export async function runTurnEpisode(env: TurnEnvLike, agent: TurnAgent, args: TurnResetArgs, hooks: TurnEpisodeHooks = {}): Promise<EpisodeResult> {
  const first = await env.reset(args);
  const messages = () => env.messages();
  const firstUser = first.messages.find((m) => m.role === 'user');
  const obs0: TurnObservation = { userMessage: firstUser?.content ?? null, info: first.info, toolResults: [], messages };
  const loop = new EpisodeLoop<TurnObservation, TurnAction>(agent, args.seed, obs0, { terminated: false, truncated: false, fundsCents: first.info.funds_cents, reason: null });
  hooks.onReset?.(first);
  for (let a = await loop.nextAsync(); a !== null; a = await loop.nextAsync()) {
    const r = await env.step(a);
    loop.record(turnView(r), { userMessage: r.nextUserMessage, info: r.info, toolResults: r.toolResults, messages });
    hooks.onStep?.({ step: loop.stepCount, action: a, result: r });
  }
  return loop.result();
}

/**
 * A command-level policy (a baseline) as a turn agent: one command per turn, seeing the last tool result as the
 * command env shows it (the output's value, its exit code). The harness's rules (auto-advance, `max_turns`, the
 * turn context) apply as to any agent, so a baseline can be scored under the paper's protocol.
 */
export function commandPolicyAgent(policy: Policy): TurnAgent {
  return {
    name: policy.name,
    reset: (seed) => policy.reset(seed),
    act(obs) {
      const t = obs.toolResults[0];
      const seen: PolicyObservation =
        t === undefined
          ? { lastCommand: null, lastExit: 0, lastOutput: null }
          : { lastCommand: t.command.replace(/^yc-bench /, ''), lastExit: t.exit_code, lastOutput: outputValue({ text: t.stdout !== '' ? t.stdout : t.stderr, exit_code: t.exit_code }) };
      const c = policy.act(seen);
      return c === null ? null : { commands: [`yc-bench ${c}`] };
    },
  };
}
