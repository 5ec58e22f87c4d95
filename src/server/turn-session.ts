/**
 * A turn-protocol session of the server: a `TurnEnv` (src/turns/turns.ts) plus what the wire adds on top of
 * it: the tool list chosen at `turn_reset`, checked snapshots, and the optional `detail` of a step (the
 * status block after every tool call, the recognised verbs, the time series of an episode that ended),
 * which a recorder needs and the chat does not carry. The chat and the tool results are exactly the
 * in-process `TurnEnv`'s: a step runs `call`/`run` for each tool call and then `endTurn`, as `step` does.
 */
import { statusOf, wakeEventsOf, type Status } from '../env/env.js';
import { policyError, pyShlexSplit, type ExecutedCommand } from '../turns/executor.js';
import { toolSchemas, type FunctionTool } from '../turns/tools.js';
import type { CallDetail, ToolsChoice, TurnStepReply, WireTurnAction } from '../protocol/ops.js';
import {
  TurnEnv,
  type ChatMessage,
  type TurnInfo,
  type TurnOptions,
  type TurnSnapshot,
} from '../turns/turns.js';
import { extractTimeSeries } from '../export/rollout-json.js';
import { DEFAULT_LIMITS, parseArgv, type Simulation } from '../sim/index.js';
import { validateSimSnapshot } from '../env/snapshot.js';

export type { CallDetail, ToolsChoice, TurnResetReply, TurnRestoreReply, TurnStepDetail, TurnStepReply, WireTurnAction } from '../protocol/ops.js';

/** The tool list of a `ToolsChoice`. */
export function toolList(choice: ToolsChoice = 'run_command'): FunctionTool[] {
  const t = toolSchemas();
  if (choice === 'verbs') return t.verbs;
  if (choice === 'all') return [...t.reference, ...t.verbs];
  return t.reference;
}

/** The chat, info and world status after `reset` or `restore` (`status` is sent as `detail.status` on request). */
export interface TurnStart {
  messages: ChatMessage[];
  info: TurnInfo;
  status: Status;
}

/** The verb a command line is recognised as (`Observation.command`): null for refused, help and usage lines. */
export function commandVerb(command: string, acceptUnprefixed: boolean): string | null {
  if (policyError(command, acceptUnprefixed) !== null || command.length > DEFAULT_LIMITS.maxCommandChars) return null;
  let argv = pyShlexSplit(command);
  if (argv === null) return null;
  if (argv[0] === 'yc-bench') argv = argv.slice(1);
  const p = parseArgv(argv);
  return p.kind === 'command' ? `${p.spec.group} ${p.spec.name}` : null;
}

/** One live turn-protocol session. */
export class TurnSession {
  readonly env: TurnEnv;

  constructor(env: TurnEnv = new TurnEnv()) {
    this.env = env;
  }

  private get sim(): Simulation {
    const s = this.env.simulation;
    if (s === null) throw new Error('turn session without a simulation');
    return s;
  }

  /** Start a run (throws `PresetError` for a bad preset and `RangeError` for refused options); with the world's status. */
  reset(seed: number, preset: string, options: TurnOptions): TurnStart {
    const r = this.env.reset({ seed, preset, options });
    return { messages: r.messages, info: r.info, status: statusOf(this.sim) };
  }

  /** Play one turn (throws `EnvUsageError` `episode_over` when the run is over). */
  step(action: WireTurnAction, detail: boolean): TurnStepReply {
    const env = this.env;
    const calls: CallDetail[] = [];
    const record = (ex: ExecutedCommand): void => {
      if (detail) calls.push({ command: ex.verb, status: statusOf(this.sim, wakeEventsOf(ex)) });
    };
    // As `TurnEnv.step`: the chat's room checked, tool calls verbatim, else the commands as run_command calls; then
    // close the turn.
    env.checkRoom(action);
    if (action.tool_calls !== undefined) for (const tc of action.tool_calls) record(env.callTyped({ id: tc.id, name: tc.name, arguments: tc.arguments }));
    else for (const c of action.commands ?? []) record(env.runTyped(c));
    const reply: { content?: string | null; reasoning_content?: string } = {};
    if (action.content !== undefined) reply.content = action.content;
    if (action.reasoning_content !== undefined) reply.reasoning_content = action.reasoning_content;
    const world = env.simulation;
    const r = env.endTurn(reply);
    const out: TurnStepReply = { tool_results: r.toolResults, next_user_message: r.nextUserMessage, done: r.done, terminal_reason: r.terminalReason, info: r.info };
    if (detail && world !== null) {
      const auto = env.lastAutoResume;
      const autoDetail: CallDetail | null = auto === null ? null : { command: auto.verb, status: statusOf(world, wakeEventsOf(auto)) };
      out.detail = {
        calls,
        auto_resume: autoDetail,
        status: statusOf(this.sim),
        episode_time_series: r.info.episode_end !== null ? extractTimeSeries(world) : null,
      };
    }
    return out;
  }

  /** The chat for the next LLM call. */
  messages(): ChatMessage[] {
    return this.env.messages();
  }

  /** Exact snapshot (`format: "ycgym-turns"`). */
  snapshot(): TurnSnapshot {
    return this.env.snapshot();
  }

  /**
   * Continue from a snapshot whose shape the protocol schema already checked: its world is validated like an
   * `Env` snapshot's (throws on anything that cannot be restored).
   */
  restore(snap: TurnSnapshot): TurnStart {
    const checked: TurnSnapshot = { ...snap, sim: validateSimSnapshot(snap.sim) };
    const r = this.env.restore(checked);
    return { messages: r.messages, info: r.info, status: statusOf(this.sim) };
  }

  /** `extract_time_series` of the current world. */
  timeSeries(): Record<string, unknown> {
    return extractTimeSeries(this.sim);
  }

  close(): void {
    this.env.close();
  }
}
