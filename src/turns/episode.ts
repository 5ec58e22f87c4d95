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
  /**
   * Their typed values when the env runs in process (`TurnEnv.lastTurnValues`; an entry is undefined where only the
   * text is known); null from an env that sends only text.
   */
  readonly values: readonly unknown[] | null;
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
  /** The typed values of the last turn's calls (the in-process `TurnEnv`). */
  readonly lastTurnValues?: readonly unknown[];
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
  const values = () => (env.lastTurnValues !== undefined ? env.lastTurnValues : null);
  const obs0: TurnObservation = { userMessage: firstUser?.content ?? null, info: first.info, toolResults: [], values: values(), messages };
  const loop = new EpisodeLoop<TurnObservation, TurnAction>(agent, args.seed, obs0, { terminated: false, truncated: false, fundsCents: first.info.funds_cents, reason: null });
  hooks.onReset?.(first);
  for (let a = await loop.nextAsync(); a !== null; a = await loop.nextAsync()) {
    const r = await env.step(a);
    loop.record(turnView(r), { userMessage: r.nextUserMessage, info: r.info, toolResults: r.toolResults, values: values(), messages });
    hooks.onStep?.({ step: loop.stepCount, action: a, result: r });
  }
  return loop.result();
}

/**
 * A command-level policy (a baseline) as a turn agent: one command per turn, seeing the last tool result as the
 * command env shows it (the output's typed value in process, else decoded from its text; its exit code). The harness's rules (auto-advance, `max_turns`, the
 * turn context) apply as to any agent, so a baseline can be scored under the paper's protocol.
 */
export function commandPolicyAgent(policy: Policy): TurnAgent {
  return {
    name: policy.name,
    reset: (seed) => policy.reset(seed),
    act(obs) {
      const t = obs.toolResults[0];
      // The typed value in process; the output decoded from its text only from an env that sends text.
      const value = obs.values?.[0];
      const seen: PolicyObservation =
        t === undefined
          ? { lastCommand: null, lastExit: 0, lastOutput: null }
          : { lastCommand: t.command.replace(/^yc-bench /, ''), lastExit: t.exit_code, lastOutput: value !== undefined ? value : outputValue({ text: t.stdout !== '' ? t.stdout : t.stderr, exit_code: t.exit_code }) };
      const c = policy.act(seen);
      return c === null ? null : { commands: [`yc-bench ${c}`] };
    },
  };
}
