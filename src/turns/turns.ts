/**
 * The paper's turn protocol as an environment (`TurnEnv`): one step is one agent turn (one LLM call in the
 * reference) with any number of commands. It reproduces the reference harness (`agent/loop.py`,
 * `agent/runtime/litellm_runtime.py`, `runner/main.py`) message for message: the system prompt with the
 * scratchpad, the initial and per-turn user messages, tool results, resume detection, auto-advance, history
 * truncation, `max_turns`, terminal reasons and restarts after bankruptcy. `messages()` is exactly what the
 * reference sends to the LLM on the next call. Reference quirks are kept by default; `TurnOptions.fixes`
 * holds the named corrections (docs/turn-protocol.md).
 */
import { presetConfig } from '../config/load.js';
import { type CommandValue, companyFigures, type ExperimentConfig, isoformat, isVerb, type Out, parseTyped, PyFloat, pyJsonDumps, runBounds, type SimOptions, type SimSnapshot, Simulation, type TerminalReason } from '../sim/index.js';
import { EnvUsageError } from '../env/env.js';
import { ToolResult as ToolResultSchema, TurnAction as TurnActionSchema, TurnResetRequest } from '../env/local-validators.generated.js';
import { resetRequestProblem, schemaProblem } from '../env/schema-errors.js';
import { notRun, runCommand, type ExecutedCommand, type ToolResult } from './executor.js';
import {
  buildInitialUserPrompt,
  buildTurnContext,
  pyStr,
  pyTruthy,
  SYSTEM_PROMPT,
  systemPromptWith,
  truncationMarker,
  type StateSnapshot,
} from './prompts.js';
import { RUN_COMMAND_TOOL, toolCallToCommand, verbOfTool, type FunctionTool } from './tools.js';

export type { ToolResult } from './executor.js';

/** Named corrections of reference quirks. Every switch defaults to false (the reference's behaviour). */
export interface TurnFixes {
  /**
   * Reference: the scratchpad in the system prompt is read at the start of turns that show a fresh context; a
   * turn that follows a `sim resume` reuses the previous reading (stale). Fix: read it at the start of every turn.
   */
  fresh_scratchpad: boolean;
  /** Reference: the context shown after a resume is headed with the previous turn's number. Fix: the current one. */
  resume_turn_label: boolean;
  /** Reference: the memory note says the window holds 20 turns whatever `history_keep_rounds` is. Fix: the real value. */
  memory_note_rounds: boolean;
  /**
   * Reference (`runner/main.py`): after a bankruptcy the next episode goes through the crash-recovery path, which
   * restores the whole chat from the session file and continues the turn count, so the "Episode N — Restarting
   * After Bankruptcy" prompt is never shown. Fix: the intended restart (chat cleared, turn 1, episode prompt).
   */
  episode_restart: boolean;
}

/** Names of the turn-protocol fixes. */
export const TURN_FIX_NAMES: readonly (keyof TurnFixes)[] = ['fresh_scratchpad', 'resume_turn_label', 'memory_note_rounds', 'episode_restart'];

/** Options of `TurnEnv.reset` (defaults from the preset, as the reference runner takes them). */
export interface TurnOptions {
  fixes?: Partial<TurnFixes>;
  /** Turns without a resume before the harness resumes itself (default `loop.auto_advance_after_turns`). */
  auto_advance_after_turns?: number;
  /** Turns per run before it ends as an error (default `loop.max_turns`; null for no limit). */
  max_turns?: number | null;
  /** Rounds kept in the chat (default `agent.history_keep_rounds`). */
  history_keep_rounds?: number;
  /** System prompt override (default `agent.system_prompt`; null or empty for the built-in prompt). */
  system_prompt?: string | null;
  /** Episodes per run: a bankruptcy starts a fresh world with the same seed while episodes remain (default 1). */
  max_episodes?: number;
  /** Run commands that lack the `yc-bench` prefix (the reference rejects them with exit code 2). Default false. */
  accept_unprefixed?: boolean;
  start_date?: string;
  company_name?: string;
  horizon_years?: number;
}

/** Arguments of `TurnEnv.reset`. */
export interface TurnResetArgs {
  seed: number;
  /** Preset name or path, or a loaded config (default `"default"`). */
  preset?: string | ExperimentConfig;
  options?: TurnOptions;
}

/** One tool call of an assistant message (OpenAI format; `arguments` is a JSON string). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Chat messages as the reference sends them to the LLM. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
      reasoning_content?: string;
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/**
 * One agent turn. `commands` is shorthand for `run_command` tool calls with ids `call_{n}_{i}` (n counts LLM
 * calls in the run, i the call's position). `tool_calls` gives the model's calls verbatim (`run_command` or the
 * per-verb tools of `tools.ts`). `content` is the assistant text (null with tool calls, '' without, by default).
 * `reasoning_content`, when given, is kept on the assistant message as the reference does for thinking models.
 */
export interface TurnAction {
  commands?: readonly string[];
  tool_calls?: readonly ToolCall[];
  content?: string | null;
  reasoning_content?: string;
}

export type TurnTerminalReason = 'bankruptcy' | 'horizon_end' | 'error';

/** Run-level information after reset or a step. */
export interface TurnInfo {
  /** Turns completed (the reference's `turn_count`; it continues across episodes unless `episode_restart`). */
  turn: number;
  /** LLM calls (steps) so far in the run. */
  calls: number;
  episode: number;
  turns_since_resume: number;
  /** The agent's own `sim resume` produced a JSON payload this turn (a blocked resume counts). */
  resumed: boolean;
  /** The harness resumed by itself after this turn (its result is in `auto_resume`, not shown to the agent). */
  auto_advanced: boolean;
  auto_resume: ToolResult | null;
  /** Change of funds during the step (cents), before any episode restart. */
  reward_cents: number;
  funds_cents: number;
  sim_time: string;
  terminal_reason: TurnTerminalReason | null;
  terminal_detail: string | null;
  /** Set when the step ended an episode (the run may go on with the next one). */
  episode_end: { episode: number; terminal_reason: TurnTerminalReason; terminal_detail: string; turns_completed: number } | null;
}

/** Result of `TurnEnv.reset`. */
export interface TurnResetResult {
  /** System prompt and the first user message. */
  messages: ChatMessage[];
  info: TurnInfo;
}

/** Result of `TurnEnv.step`. */
export interface TurnStepResult {
  /** One result per tool call, in order; each is also in the chat as a `tool` message (its JSON text). */
  toolResults: ToolResult[];
  /** The user message that opens the next turn (null when the run is over). */
  nextUserMessage: string | null;
  done: boolean;
  terminalReason: TurnTerminalReason | null;
  info: TurnInfo;
}

/** Exact, JSON-serialisable snapshot of a turn environment. */
export interface TurnSnapshot {
  format: 'ycgym-turns';
  version: 1;
  sim: SimSnapshot;
  seed: number;
  sim_options: SimOptions;
  settings: TurnSettings;
  state: TurnState;
}

/** The options of a run after defaults were filled in from the preset. */
export interface TurnSettings {
  fixes: TurnFixes;
  auto_advance_after_turns: number;
  max_turns: number | null;
  history_keep_rounds: number;
  system_prompt: string;
  max_episodes: number;
  accept_unprefixed: boolean;
}

/** A turn whose tool calls have started (`call`/`run`) and that `endTurn` has not closed yet. */
interface OpenTurn {
  funds_before: number;
  /** Index of the turn's assistant message in the session, once it has a tool call. */
  assistant: number | null;
  calls: number;
  /** stdout of the last `sim resume` call whose output is a JSON object (the last one wins). */
  resume_stdout: string | null;
}

interface TurnState {
  turn: number;
  calls: number;
  episode: number;
  turns_since_resume: number;
  /** The runtime session: the chat without the system prompt. */
  session: ChatMessage[];
  /** Scratchpad of the last state reading that the loop's `snapshot` variable holds. */
  prompt_scratchpad: string | null;
  terminal_reason: TurnTerminalReason | null;
  terminal_detail: string | null;
  done: boolean;
  last_info: TurnInfo;
  open: OpenTurn | null;
}

/** `action` as a turn action (a list of commands is `{commands}`), checked by the protocol schema's `TurnAction`. */
function turnActionOf(action: unknown): TurnAction {
  const act = Array.isArray(action) ? { commands: action } : action;
  if (typeof act !== 'object' || act === null) {
    const got = act === null ? 'null' : typeof act;
    throw new EnvUsageError('invalid_action', `the turn action must be a list of command strings or an object (commands, tool_calls, content, reasoning_content), got ${got}`);
  }
  const problem = schemaProblem(TurnActionSchema, act);
  if (problem !== null) throw new EnvUsageError('invalid_action', problem);
  return act as TurnAction;
}

function checkInt(name: string, v: number, min: number): number {
  if (!Number.isInteger(v) || v < min) throw new RangeError(`${name} must be an integer >= ${min}`);
  return v;
}

/** The state the reference reads before a message (`_snapshot_state`). */
export function readState(sim: Simulation): StateSnapshot {
  const s = sim.state;
  const f = companyFigures(s);
  return {
    sim_time: isoformat(f.simTime),
    horizon_end: isoformat(f.horizonEnd),
    funds_cents: f.fundsCents,
    active_tasks: f.tasks.active,
    planned_tasks: f.tasks.planned,
    employee_count: f.employees,
    monthly_payroll_cents: f.monthlyPayrollCents,
    bankrupt: f.bankrupt,
    scratchpad: s.scratchpad ? s.scratchpad : null,
  };
}

/** The JSON text of a tool result as the reference puts it in the chat (`json.dumps(result.__dict__)`). */
export function toolResultText(r: ToolResult): string {
  return pyJsonDumps({ ok: r.ok, exit_code: r.exit_code, stdout: r.stdout, stderr: r.stderr, sim_time: null, command: r.command }, null);
}

function isObject(v: Out): v is { [k: string]: Out } {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof PyFloat);
}

/** What the harness reads of a resume payload: the wake events of the next turn's context, and the end of the run. */
interface ResumeReading {
  events: readonly Out[];
  reason: TerminalReason | null;
}

/**
 * The payload of a `sim resume` the harness ran, when its output is a JSON object (the reference parses the stdout:
 * an `{"error": ...}` of exit code 1 counts too, without events; help and usage errors print none), else null.
 */
function resumeValue(ex: ExecutedCommand): ResumeReading | null {
  if (ex.result.exit_code === 2 || ex.value === null) return null;
  return isVerb(ex, 'sim resume') ? { events: ex.value.wake_events, reason: ex.value.terminal_reason } : { events: [], reason: null };
}

/** The same payload decoded from a stored stdout (a restored snapshot's open turn: input, not our own output). */
function resumePayload(stdout: string): ResumeReading | null {
  const t = stdout.trim();
  if (!t) return null;
  let v: Out;
  try {
    v = parseTyped(t);
  } catch {
    return null;
  }
  if (!isObject(v)) return null;
  const wake = v['wake_events'];
  const reason = v['terminal_reason'];
  return { events: pyTruthy(wake) && Array.isArray(wake) ? wake : [], reason: reason === 'bankruptcy' || reason === 'horizon_end' ? reason : null };
}

/**
 * What makes a snapshot's open turn one that `call`/`run` could not have left, or null: its assistant message (when it
 * has one) is an assistant message of the chat with one tool call per call made, followed by exactly their tool
 * messages, in order, each holding a tool result (the snapshot is input: `restore` decodes them).
 */
function openTurnProblem(st: TurnState): string | null {
  const open = st.open;
  if (open === null) return null;
  if (open.assistant === null) return open.calls === 0 && open.resume_stdout === null ? null : '/state/open: a turn with calls has an assistant message';
  const a = open.assistant;
  const msg = st.session[a];
  if (msg?.role !== 'assistant') return `/state/open/assistant: ${a} is not the index of an assistant message of the chat`;
  const calls = msg.tool_calls ?? [];
  const tools = st.session.slice(a + 1);
  if (calls.length !== open.calls || tools.length !== open.calls) {
    return `/state/open: ${open.calls} calls, but the assistant message has ${calls.length} tool calls and ${tools.length} messages follow it`;
  }
  for (const [i, m] of tools.entries()) {
    const at = `/state/session/${a + 1 + i}`;
    if (m.role !== 'tool' || m.tool_call_id !== calls[i]?.id) return `${at}: must be the tool message of the open turn's call ${i}`;
    let v: unknown;
    try {
      v = JSON.parse(m.content);
    } catch {
      return `${at}/content: must be a tool result (JSON)`;
    }
    const problem = schemaProblem(ToolResultSchema, v);
    if (problem !== null) return `${at}/content${problem.startsWith('/:') ? problem.slice(1) : problem}`;
  }
  return null;
}

/** Run information of the current state (`reward` in cents); `st` null gives the state before turn 1. */
function infoOf(st: TurnState | null, sim: Simulation, reward: number): TurnInfo {
  return {
    turn: st?.turn ?? 0,
    calls: st?.calls ?? 0,
    episode: st?.episode ?? 1,
    turns_since_resume: st?.turns_since_resume ?? 0,
    resumed: false,
    auto_advanced: false,
    auto_resume: null,
    reward_cents: reward,
    funds_cents: sim.state.fundsCents,
    sim_time: isoformat(sim.state.simTime),
    terminal_reason: st?.terminal_reason ?? null,
    terminal_detail: st?.terminal_detail ?? null,
    episode_end: null,
  };
}

/**
 * Default cap on the tool output of one turn, in characters of tool messages (not part of the reference): calls
 * of a turn whose tool messages reached it are not executed and answer an error instead. A full scratchpad read is
 * about 262 K characters; the reference's harness would hand the model whatever a turn printed, so one request of
 * 256 reads used to make 67 MB per turn and, kept in the history, exhaust the server's memory (issue 12, F1).
 */
export const DEFAULT_MAX_TURN_OUTPUT_CHARS = 1 << 20;

/**
 * Default cap on the chat a run keeps (its history, the system prompt aside), in characters of its messages' texts
 * (`chatChars`; not part of the reference). 16 Mi characters is several times the context of any LLM; a run keeping
 * the reference's 20 rounds stays far below it. Without it a client could keep every round (`history_keep_rounds`
 * huge, `max_turns: null`) of turns carrying megabytes of assistant text and exhaust a shared server's memory.
 */
export const DEFAULT_MAX_CHAT_CHARS = 1 << 24;

/** Limits of a `TurnEnv` that protect a shared server (not part of the reference). */
export interface TurnLimits {
  /** Characters of tool messages one turn may produce before further calls are refused (default 1 Mi). */
  maxTurnOutputChars: number;
  /**
   * Characters the kept chat may hold before a turn's assistant message is added (default 16 Mi): `step` refuses a
   * turn that would pass it, before anything runs. The turn's tool output (capped by `maxTurnOutputChars`) and the
   * next user message come on top, so the chat stays within this plus one turn.
   */
  maxChatChars: number;
}

/** Characters of the texts a chat message carries (content, reasoning, tool call ids, names and arguments). */
function messageChars(m: ChatMessage): number {
  let n = m.content?.length ?? 0;
  if (m.role === 'assistant') {
    n += m.reasoning_content?.length ?? 0;
    for (const tc of m.tool_calls ?? []) n += tc.id.length + tc.function.name.length + tc.function.arguments.length;
  } else if (m.role === 'tool') {
    n += m.tool_call_id.length;
  }
  return n;
}

/** Characters a turn's action adds to its assistant message (a command adds what its `run_command` arguments hold). */
function actionChars(act: TurnAction): number {
  let n = (act.content?.length ?? 0) + (act.reasoning_content?.length ?? 0);
  if (act.tool_calls !== undefined) for (const tc of act.tool_calls) n += tc.id.length + tc.name.length + tc.arguments.length;
  else for (const c of act.commands ?? []) n += c.length;
  return n;
}

/** The paper's turn protocol over one simulated company. */
interface OpenTyped {
  results: ToolResult[];
  values: (CommandValue | undefined)[];
  resume: ResumeReading | null;
  chars: number;
}

function emptyOpenTyped(): OpenTyped {
  return { results: [], values: [], resume: null, chars: 0 };
}

export class TurnEnv {
  private readonly limits: TurnLimits;
  /** The open turn's tool results and resume payload, typed (the state keeps their text for snapshots). */
  /**
   * The open turn's tool results, their typed values (undefined for a call restored from a mid-turn snapshot: only
   * its text is known), resume reading and tool-message characters so far (derived; not in snapshots).
   */
  private openTyped: OpenTyped = emptyOpenTyped();
  private turnValues: readonly (CommandValue | undefined)[] = [];
  /** The harness's own `sim resume` after the last turn, if it ran one. */
  private autoResumeRun: ExecutedCommand | null = null;
  private sim: Simulation | null = null;
  private cfg: ExperimentConfig | null = null;
  private seed = 0;
  private simOptions: SimOptions = { seed: 0 };
  private settings: TurnSettings | null = null;
  private st: TurnState | null = null;

  constructor(limits: Partial<TurnLimits> = {}) {
    const max = limits.maxTurnOutputChars ?? DEFAULT_MAX_TURN_OUTPUT_CHARS;
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError('maxTurnOutputChars must be a positive integer');
    const chat = limits.maxChatChars ?? DEFAULT_MAX_CHAT_CHARS;
    if (!Number.isSafeInteger(chat) || chat < 1) throw new RangeError('maxChatChars must be a positive integer');
    this.limits = { maxTurnOutputChars: max, maxChatChars: chat };
  }

  /** The underlying simulation (null before `reset`). */
  get simulation(): Simulation | null {
    return this.sim;
  }

  /** The run's options with the preset's defaults filled in (null before `reset`). */
  resolvedOptions(): TurnSettings | null {
    return this.settings === null ? null : structuredClone(this.settings);
  }

  /** The tools the reference offers the LLM (`[run_command]`, with `tool_choice: "auto"`). */
  tools(): FunctionTool[] {
    return [structuredClone(RUN_COMMAND_TOOL)];
  }

  /** Start a run: a fresh world, the system prompt and the first user message. */
  reset(args: TurnResetArgs): TurnResetResult {
    const problem = resetRequestProblem(TurnResetRequest, 'turn_reset', args);
    if (problem !== null) throw new RangeError(problem);
    const cfg = presetConfig(args.preset);
    const o = args.options ?? {};
    // The schema admits only the named fixes, as booleans.
    const fixes: TurnFixes = { fresh_scratchpad: false, resume_turn_label: false, memory_note_rounds: false, episode_restart: false, ...o.fixes };
    const maxTurns = o.max_turns !== undefined ? o.max_turns : cfg.loop.max_turns;
    this.settings = {
      fixes,
      auto_advance_after_turns: checkInt('auto_advance_after_turns', o.auto_advance_after_turns ?? cfg.loop.auto_advance_after_turns, 0),
      max_turns: maxTurns === null ? null : checkInt('max_turns', maxTurns, 1),
      history_keep_rounds: checkInt('history_keep_rounds', o.history_keep_rounds ?? cfg.agent.history_keep_rounds, 1),
      system_prompt: (o.system_prompt !== undefined ? o.system_prompt : cfg.agent.system_prompt) || SYSTEM_PROMPT,
      max_episodes: checkInt('max_episodes', o.max_episodes ?? 1, 1),
      accept_unprefixed: o.accept_unprefixed ?? false,
    };
    const simOptions: SimOptions = { seed: args.seed };
    if (o.start_date !== undefined) simOptions.startDate = o.start_date;
    if (o.company_name !== undefined) simOptions.companyName = o.company_name;
    if (o.horizon_years !== undefined) simOptions.horizonYears = o.horizon_years;
    this.cfg = cfg;
    this.seed = args.seed;
    this.simOptions = simOptions;
    const sim = Simulation.create(cfg, simOptions);
    this.sim = sim;
    const st: TurnState = {
      turn: 0,
      calls: 0,
      episode: 1,
      turns_since_resume: 0,
      session: [],
      prompt_scratchpad: null,
      terminal_reason: null,
      terminal_detail: null,
      done: false,
      last_info: infoOf(null, sim, 0),
      open: null,
    };
    this.st = st;
    this.openTyped = emptyOpenTyped();
    this.turnValues = [];
    this.autoResumeRun = null;
    this.startTurn(null);
    st.last_info = infoOf(st, sim, 0);
    return { messages: this.messages(), info: structuredClone(st.last_info) };
  }

  /**
   * Open the next turn as `run_agent_loop` + `run_turn` do: choose the user message (the pending post-resume
   * context, the episode's initial prompt, or a fresh context), read the scratchpad for the system prompt,
   * drop old rounds, append the message.
   */
  private startTurn(pending: string | null): string {
    const st = this.st as TurnState;
    const set = this.settings as TurnSettings;
    const sim = this.sim as Simulation;
    let user: string;
    if (st.turn === 0) {
      const snap = readState(sim);
      st.prompt_scratchpad = snap.scratchpad;
      user = buildInitialUserPrompt(snap, st.episode);
    } else if (pending !== null) {
      user = pending;
      if (set.fixes.fresh_scratchpad) st.prompt_scratchpad = readState(sim).scratchpad;
    } else {
      const snap = readState(sim);
      st.prompt_scratchpad = snap.scratchpad;
      user = buildTurnContext(st.turn + 1, snap, null, this.memoryRounds());
    }
    const keep = set.history_keep_rounds;
    const userIdx: number[] = [];
    st.session.forEach((m, i) => {
      if (m.role === 'user') userIdx.push(i);
    });
    if (userIdx.length > keep) {
      const cutoff = userIdx[userIdx.length - keep] as number;
      st.session = [{ role: 'user', content: truncationMarker(keep) }, ...st.session.slice(cutoff)];
    }
    st.session.push({ role: 'user', content: user });
    return user;
  }

  private memoryRounds(): number {
    const set = this.settings as TurnSettings;
    return set.fixes.memory_note_rounds ? set.history_keep_rounds : 20;
  }

  /** The chat the reference sends on the next LLM call: system prompt (with scratchpad) and the kept history. */
  messages(): ChatMessage[] {
    const st = this.st;
    const set = this.settings;
    if (st === null || set === null) throw new EnvUsageError('not_reset', 'call reset() before messages()');
    return [{ role: 'system', content: systemPromptWith(set.system_prompt, st.prompt_scratchpad) }, ...structuredClone(st.session)];
  }

  /** True when the run is over. */
  get done(): boolean {
    return this.st?.done ?? false;
  }

  private toolCommand(tc: ToolCall): { command: string; error: string | null } {
    if (verbOfTool(tc.name)) {
      try {
        return { command: toolCallToCommand(tc.name, tc.arguments), error: null };
      } catch (e) {
        return { command: '', error: (e as Error).message };
      }
    }
    // The reference runs `args.get("command", "")` whatever the tool's name; unparsable arguments give "".
    let args: unknown;
    try {
      args = JSON.parse(tc.arguments);
    } catch {
      return { command: '', error: null };
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) return { command: '', error: null };
    const c = (args as Record<string, unknown>)['command'];
    if (c === undefined) return { command: '', error: null };
    // Deterministic choice where the reference would crash (`command.startswith` on a non-string).
    return typeof c === 'string' ? { command: c, error: null } : { command: pyStr(c as Out), error: 'command must be a non-empty string' };
  }

  private live(): { sim: Simulation; st: TurnState; set: TurnSettings } {
    const sim = this.sim;
    const st = this.st;
    const set = this.settings;
    if (sim === null || st === null || set === null) throw new EnvUsageError('not_reset', 'call reset() before step()');
    if (st.done) throw new EnvUsageError('episode_over', 'the run is over; call reset()');
    return { sim, st, set };
  }

  /** The turn in progress, opened by its first tool call (one LLM call in the reference). */
  private openTurn(st: TurnState, sim: Simulation): OpenTurn {
    if (st.open === null) {
      st.calls++;
      st.open = { funds_before: sim.state.fundsCents, assistant: null, calls: 0, resume_stdout: null };
      this.openTyped = emptyOpenTyped();
    }
    return st.open;
  }

  /**
   * Run one tool call as part of the current turn (the turn opens with its first call and ends with
   * `endTurn`). Returns the result the agent sees; the chat gets the call and its tool message.
   */
  call(tc: ToolCall): ToolResult {
    return this.callTyped(tc).result;
  }

  /** `call`, with what the command was recognised as and its typed output. */
  callTyped(tc: ToolCall): ExecutedCommand {
    const { sim, st, set } = this.live();
    const open = this.openTurn(st, sim);
    if (open.assistant === null) {
      open.assistant = st.session.length;
      st.session.push({ role: 'assistant', content: null, tool_calls: [] });
    }
    const msg = st.session[open.assistant];
    if (msg?.role === 'assistant') (msg.tool_calls ??= []).push({ id: tc.id, type: 'function', function: { name: tc.name, arguments: tc.arguments } });
    open.calls++;
    const { command, error } = this.toolCommand(tc);
    const spent = this.openTyped.chars;
    const cap = this.limits.maxTurnOutputChars;
    const refusal = spent >= cap ? `not executed: the tool output of this turn reached ${spent} characters (limit ${cap}); end the turn and go on in the next one` : error;
    const ex = refusal !== null ? notRun(command, refusal) : runCommand(sim, command, set.accept_unprefixed);
    const r = ex.result;
    // The reference's rule on the command line the agent sent (`startswith("yc-bench sim resume")`), then its output.
    const detect = set.accept_unprefixed && !/^yc-bench(\s|$)/.test(command.trimStart()) ? `yc-bench ${command.trimStart()}` : command;
    const resume = error === null && detect.startsWith('yc-bench sim resume') ? resumeValue(ex) : null;
    if (resume !== null) {
      open.resume_stdout = r.stdout;
      this.openTyped.resume = resume;
    }
    const content = toolResultText(r);
    st.session.push({ role: 'tool', tool_call_id: tc.id, content });
    this.openTyped.results.push(r);
    this.openTyped.values.push(ex.value);
    this.openTyped.chars += content.length;
    return ex;
  }

  /** Run one command of the current turn as a `run_command` call with id `call_{n}_{i}`. */
  run(command: string): ToolResult {
    return this.runTyped(command).result;
  }

  /** `run`, with what the command was recognised as and its typed output. */
  runTyped(command: string): ExecutedCommand {
    const { sim, st } = this.live();
    const open = this.openTurn(st, sim);
    return this.callTyped({ id: `call_${st.calls}_${open.calls}`, name: 'run_command', arguments: pyJsonDumps({ command }, null) });
  }

  /** The open turn has had a `sim resume` whose output is a JSON object (the harness's rule: the agent resumed). */
  get resumedThisTurn(): boolean {
    const open = this.st?.open ?? null;
    return open !== null && open.resume_stdout !== null;
  }

  /**
   * The typed values of the last completed turn's calls, in order (what their tool results render; undefined for a
   * call restored from a snapshot taken mid-turn). Read only.
   */
  get lastTurnValues(): readonly (CommandValue | undefined)[] {
    return this.turnValues;
  }

  /** The harness's own `sim resume` at the end of the last turn (auto-advance), typed; null when it ran none. */
  get lastAutoResume(): ExecutedCommand | null {
    return this.autoResumeRun;
  }

  /**
   * End the current turn: the assistant text (`content`: null by default after tool calls, '' for a turn without
   * any), then the harness's bookkeeping (resume, auto-advance, max_turns, terminal state, next episode) and the
   * next turn's user message.
   */
  endTurn(reply: { content?: string | null; reasoning_content?: string } = {}): TurnStepResult {
    const { sim: sim0, st, set } = this.live();
    const open = this.openTurn(st, sim0);
    st.open = null;
    this.autoResumeRun = null;
    const typed = this.openTyped;
    this.openTyped = emptyOpenTyped();
    const results: ToolResult[] = [];
    if (open.assistant !== null) {
      const msg = st.session[open.assistant];
      if (msg?.role === 'assistant') {
        if (reply.content !== undefined) msg.content = reply.content;
        if (reply.reasoning_content !== undefined) msg.reasoning_content = reply.reasoning_content;
      }
      results.push(...typed.results);
    } else {
      const msg: ChatMessage = { role: 'assistant', content: reply.content ?? '' };
      if (reply.reasoning_content !== undefined) msg.reasoning_content = reply.reasoning_content;
      st.session.push(msg);
    }
    this.turnValues = typed.values;
    let payload = open.resume_stdout !== null ? typed.resume : null;

    // `run_agent_loop` after the turn.
    const resumed = payload !== null;
    let autoResume: ToolResult | null = null;
    if (resumed) st.turns_since_resume = 0;
    else {
      st.turns_since_resume++;
      if (st.turns_since_resume >= set.auto_advance_after_turns) {
        const ex = runCommand(sim0, 'yc-bench sim resume');
        this.autoResumeRun = ex;
        autoResume = ex.result;
        const p = resumeValue(ex);
        if (p !== null) {
          payload = p;
          st.turns_since_resume = 0;
        }
      }
    }
    let pending: string | null = null;
    if (payload !== null) {
      const label = set.fixes.resume_turn_label ? st.turn + 2 : st.turn + 1;
      pending = buildTurnContext(label, readState(sim0), payload.events, this.memoryRounds());
      if (payload.reason !== null) {
        st.terminal_reason = payload.reason;
        st.terminal_detail = payload.reason;
      }
    }
    st.turn++;
    const reward = sim0.state.fundsCents - open.funds_before;

    // Top of the loop: max_turns, end of episode, next episode.
    if (st.terminal_reason === null && set.max_turns !== null && st.turn >= set.max_turns) {
      st.terminal_reason = 'error';
      st.terminal_detail = `max_turns=${set.max_turns} reached`;
    }
    let episodeEnd: TurnInfo['episode_end'] = null;
    if (st.terminal_reason !== null) {
      episodeEnd = { episode: st.episode, terminal_reason: st.terminal_reason, terminal_detail: st.terminal_detail ?? '', turns_completed: st.turn };
      if (st.terminal_reason === 'bankruptcy' && st.episode < set.max_episodes) {
        this.nextEpisode();
        pending = null;
        if (set.max_turns !== null && st.turn >= set.max_turns) {
          st.terminal_reason = 'error';
          st.terminal_detail = `max_turns=${set.max_turns} reached`;
        }
      }
    }
    let nextUser: string | null = null;
    if (st.terminal_reason !== null) st.done = true;
    else nextUser = this.startTurn(pending);

    const info = infoOf(st, this.sim as Simulation, reward);
    info.resumed = resumed;
    info.auto_advanced = autoResume !== null;
    info.auto_resume = autoResume;
    info.episode_end = episodeEnd;
    st.last_info = info;
    return { toolResults: results, nextUserMessage: nextUser, done: st.done, terminalReason: st.terminal_reason, info: structuredClone(info) };
  }

  /**
   * Play one whole agent turn: its tool calls (or `commands`, as `run_command` calls) in order, then `endTurn`.
   * Calls already made with `call`/`run` in the same turn come first.
   */
  step(action: readonly string[] | TurnAction): TurnStepResult {
    this.live();
    const act = turnActionOf(action);
    this.checkRoom(act);
    if (act.tool_calls) for (const tc of act.tool_calls) this.call({ id: tc.id, name: tc.name, arguments: tc.arguments });
    else for (const c of act.commands ?? []) this.run(c);
    const reply: { content?: string | null; reasoning_content?: string } = {};
    if (act.content !== undefined) reply.content = act.content;
    if (act.reasoning_content !== undefined) reply.reasoning_content = act.reasoning_content;
    return this.endTurn(reply);
  }

  /**
   * Refuse a whole turn (`step`, the server's `turn_step`) whose assistant message would take the kept chat past
   * `maxChatChars`: `EnvUsageError` `invalid_action`, before anything runs (`episode_over` first when the run is over).
   */
  checkRoom(act: TurnAction): void {
    const { st } = this.live();
    const adds = actionChars(act);
    const cap = this.limits.maxChatChars;
    let held = 0;
    for (const m of st.session) held += messageChars(m);
    if (held + adds > cap) {
      throw new EnvUsageError(
        'invalid_action',
        `not executed: the chat of this turn session holds ${held} characters and this turn's assistant message adds ${adds} (limit ${cap}); ` +
          'start a new run (turn_reset), keep fewer rounds (history_keep_rounds) or send shorter turns',
      );
    }
  }

  /** A new episode after a bankruptcy (`run_benchmark`'s episode loop): same seed, scratchpad carried over. */
  private nextEpisode(): void {
    const st = this.st as TurnState;
    const set = this.settings as TurnSettings;
    const carried = (this.sim as Simulation).state.scratchpad;
    this.sim = Simulation.create(this.cfg as ExperimentConfig, this.simOptions);
    if (carried) this.sim.state.scratchpad = carried;
    st.episode++;
    st.turns_since_resume = 0;
    st.terminal_reason = null;
    st.terminal_detail = null;
    if (set.fixes.episode_restart) {
      st.session = [];
      st.turn = 0;
    }
    // Reference: the session file restores the chat as it was after the last turn and the turn count goes on.
  }

  /** Exact snapshot of the run (simulation, chat, counters). */
  snapshot(): TurnSnapshot {
    if (this.sim === null || this.st === null || this.settings === null) throw new EnvUsageError('not_reset', 'call reset() before snapshot()');
    return {
      format: 'ycgym-turns',
      version: 1,
      sim: this.sim.snapshot(),
      seed: this.seed,
      sim_options: { ...this.simOptions },
      settings: structuredClone(this.settings),
      state: structuredClone(this.st),
    };
  }

  /** Continue from a snapshot exactly; returns the current chat and the last step's info. */
  restore(snap: TurnSnapshot): TurnResetResult {
    if (!snap || snap.format !== 'ycgym-turns' || snap.version !== 1) throw new RangeError('not a ycgym turn snapshot (format ycgym-turns, version 1)');
    const openProblem = openTurnProblem(snap.state);
    if (openProblem !== null) throw new RangeError(`not a turn this environment could have opened: ${openProblem}`);
    const sim = Simulation.restore(snap.sim);
    // The restart after a bankruptcy creates the run again from these: refuse now what it would refuse then.
    const so = snap.sim_options;
    try {
      runBounds(so.startDate ?? sim.cfg.sim.start_date, so.horizonYears ?? sim.cfg.sim.horizon_years);
    } catch (err) {
      if (err instanceof RangeError) throw new RangeError(`/sim_options: ${err.message}`);
      throw err;
    }
    this.sim = sim;
    // The validated, frozen config the simulation runs on (not the caller's snapshot object, which the restart after a
    // bankruptcy would otherwise read as it is then).
    this.cfg = sim.cfg;
    this.seed = snap.seed;
    this.simOptions = { ...snap.sim_options };
    this.settings = structuredClone(snap.settings);
    this.st = structuredClone(snap.state);
    this.autoResumeRun = null;
    // A snapshot taken mid-turn: decode its open turn's tool results and resume payload (the snapshot is input).
    const open = this.st.open;
    const results: ToolResult[] = [];
    let chars = 0;
    if (open !== null && open.assistant !== null) {
      for (const m of this.st.session.slice(open.assistant + 1)) {
        if (m.role !== 'tool') continue;
        results.push(JSON.parse(m.content) as ToolResult);
        chars += m.content.length;
      }
    }
    this.openTyped = { results, values: results.map(() => undefined), resume: open !== null && open.resume_stdout !== null ? resumePayload(open.resume_stdout) : null, chars };
    this.turnValues = [];
    return { messages: this.messages(), info: structuredClone(this.st.last_info) };
  }

  /** An independent copy continuing identically. */
  clone(): TurnEnv {
    const e = new TurnEnv(this.limits);
    if (this.sim !== null) e.restore(this.snapshot());
    return e;
  }

  /** Release the simulation. */
  close(): void {
    this.sim = null;
    this.st = null;
    this.settings = null;
  }
}
