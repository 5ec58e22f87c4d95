/**
 * The op table of protocol v1 (docs/protocol.md): every op with its request and result types, the name of
 * its JSON Schema definitions (schema/protocol.schema.json, `<Def>Request` and `<Def>Reply`), the kind of
 * session it acts on, and the error codes. Servers implement `OpHandlers` (one handler per op, typed from
 * this table); clients type their calls with `OpParams`/`OpResult`; scripts/gen renders the Python types and
 * docs/protocol.md's table from `OP_TABLE`. Types only, plus the one runtime table: no I/O, no schema compiling.
 */
import type { SeedRange, SplitName } from '../config/splits.js';
import type { EnvSnapshot, Observation, PresetDescription, ResetOptions, ResetResult, Status, StepInfo, StepResult } from '../env/env.js';
import type { ToolResult } from '../turns/executor.js';
import type { FunctionTool } from '../turns/tools.js';
import type { ChatMessage, ToolCall, TurnInfo, TurnOptions, TurnSnapshot } from '../turns/turns.js';

// The types of the environments that travel on the wire, re-exported so that a client needs only this module.
export type { ChatMessage, EnvSnapshot, FunctionTool, Observation, PresetDescription, ResetOptions, ResetResult, Status, StepInfo, StepResult, ToolCall, ToolResult, TurnInfo, TurnOptions, TurnSnapshot };

// ---------------------------------------------------------------------------------------------------------
// Errors

/** Every error code of the protocol. */
export const ERROR_CODES = [
  'bad_json',
  'bad_frames',
  'message_too_large',
  'unsupported_version',
  'invalid_request',
  'unknown_op',
  'unknown_session',
  'session_limit',
  'episode_over',
  'bad_preset',
  'bad_snapshot',
  'capacity',
  'record_limit',
  'internal',
] as const;

/** A protocol error code (string literal). */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** What each error code means (docs/protocol.md renders this table). */
export const ERROR_MEANINGS: { readonly [C in ErrorCode]: string } = {
  bad_json: 'The payload is not strict UTF-8 or not JSON.',
  bad_frames: 'The message does not have exactly one payload frame after its routing envelope.',
  message_too_large: 'The payload exceeds `max_message_bytes`, or a `step_batch` entry was not run because the reply reached its cap.',
  unsupported_version: 'The request has no `v` or a `v` other than 1.',
  invalid_request: 'The request breaks its schema (the message names the JSON pointer), or the environment refuses an option, or the session is of the other kind.',
  unknown_op: 'The `op` is not one of the ops of this table.',
  unknown_session: 'The session id names no live session of this client (closed, reaped, never created, or created by another client: the same answer, so nothing leaks; to its owner a session reaped as idle says so, with its idle time and the timeout).',
  session_limit: 'Creating a session would exceed `max_sessions`, or this client\'s `max_sessions_per_client`.',
  episode_over: '`step` after `terminated`/`truncated` without a reset, or `turn_step` after `done`.',
  bad_preset: 'The preset is not a built-in preset name, or it fails to load.',
  bad_snapshot: 'The snapshot does not have the snapshot shape, or cannot be restored to a valid state.',
  capacity: 'The server is over its memory budget (`serve --max-memory`, or the heap near its limit) and refuses requests that create sessions or bulk output; or this client has too many requests waiting, or too many reply bytes it may not have read (`serve --max-unread-mib`), or every connection together has (`serve --max-unread-total-mib`: from 3/4 of that budget the connections holding the most, at it those holding some, beyond it and a quarter more every connection); or more connections are open than the server serves at once and this one is new (`serve --max-connections`). The request was not handled. Retry later.',
  record_limit:
    'A `reset` asks to record beyond a recording limit: the record directory\'s byte budget (`serve --record-max-mib`) or this client\'s share of it (`--record-client-mib`) cannot hold another recording, or this client has `--record-max-per-client` recordings in progress.',
  internal: 'A bug: the environment threw, or the reply could not be encoded; the server stays up and closes the session named by the request.',
};

/** The error part of an error reply (and of a failed `step_batch` entry). */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
}

/** A client-chosen request id (string of at most `MAX_REQUEST_ID_CHARS` characters or a safe integer). */
export type RequestId = string | number;

// ---------------------------------------------------------------------------------------------------------
// Wire types of the ops

/** The `limits` block of `hello`. */
export interface Limits {
  max_message_bytes: number;
  max_sessions: number;
  max_sessions_per_client: number;
  idle_timeout_ms: number;
  max_batch: number;
  /**
   * Bytes of large replies ZeroMQ may still hold for one connection (`serve --max-unread-mib`): while they reach it, the
   * connection's requests are refused with `capacity`, unhandled; null over the pipe transport (its output buffer is
   * bounded by the transport itself).
   */
  max_unread_reply_bytes: number | null;
  /**
   * Bytes of large replies ZeroMQ may still hold for every connection together (`serve --max-unread-total-mib`): from
   * 3/4 of it the requests of the connections holding the most are refused with `capacity`, at it those of every
   * connection holding some, and beyond it and its headroom (a quarter of it) every connection's; null over the pipe
   * transport.
   */
  max_unread_total_bytes: number | null;
  /**
   * The headroom above `max_unread_total_bytes` (a quarter of it, `UNREAD_TOTAL_HEADROOM_DIVISOR`): a connection holding no
   * large unread reply is refused for the total only once every connection's unread replies reach the budget plus this;
   * null over the pipe transport.
   */
  unread_total_headroom_bytes: number | null;
  /**
   * Connections served at once (`serve --max-connections`): while more are open, the requests of a connection not
   * served before are refused with `capacity`, unhandled; null over the pipe transport (its one client is the parent).
   */
  max_connections: number | null;
  /** The recording limits (`serve --record-max-mib`, `--record-client-mib`, `--record-max-per-client`); null: the server does not record. */
  record: RecordLimitsWire | null;
}

/** A recording server's limits, as `hello` announces them (bytes; see `record_limit`). */
export interface RecordLimitsWire {
  /** Bytes of every recording this server starts, together. */
  max_bytes: number;
  /** Bytes of one client connection's recordings, together. */
  client_bytes: number;
  /** Recordings of one client in progress at once. */
  max_per_client: number;
}

/** Result of `hello`. */
export interface HelloResult {
  protocol: 1;
  server: string;
  presets: string[];
  limits: Limits;
  /** The seed splits (src/config/splits.ts). */
  splits: Record<SplitName, SeedRange>;
  spaces: {
    action: { type: 'text'; min_length: number; max_length: number };
    observation: { type: 'json'; schema: string };
    /** Per built-in preset: the facts fixed-size observation spaces need. */
    presets: Record<string, PresetDescription>;
  };
}

/** Server-side Arrow recording of a session (`reset` option; refused unless the server was started with a record dir). */
export interface RecordOptions {
  path: string;
}

/** Why the server stopped a recording (`RecordingStopped.reason`): the record directory's budget, or its client's share. */
export const RECORDING_STOP_REASONS = ['server_budget', 'client_budget'] as const;

/**
 * A recording the server stopped because its budget could not hold the next rows (`serve --record-max-mib`,
 * `--record-client-mib`): its files were completed with every row written before (an episode is written whole or not at
 * all), and its sessions go on unrecorded. Each session of the recording is told once, in its next `reset`, `restore`
 * or `step` result (a `step_batch` entry's; a binary `step_batch` lists them in `recording_stopped`).
 */
export interface RecordingStopped {
  /** The recording's file name (`options.record.path`). */
  path: string;
  reason: (typeof RECORDING_STOP_REASONS)[number];
  /** The limit, its value and its flag, in words. */
  message: string;
  /** Bytes of the recording's two files, complete. */
  bytes: number;
}

/** What a server adds to a `reset`, `restore` or `step` result of a session whose recording it stopped. */
export interface RecordingNote {
  recording_stopped?: RecordingStopped;
}

/** `options` of a `reset` request: the env's reset options plus the server-side recording. */
export interface WireResetOptions extends ResetOptions {
  record?: RecordOptions;
}

/** Result of `reset` and `restore`: the session id plus the environment's reset result. */
export type SessionResetResult = { session: string } & ResetResult & RecordingNote;

/** One entry of a `step_batch` request. */
export interface BatchStep {
  session: string;
  /** A command line, or an integer index in a Discrete session. */
  action: string | number;
}

/** One entry of a `step_batch` reply, in request order. */
export type BatchItem = { ok: true; result: ServerStepResult } | { ok: false; error: ErrorBody };

/** The result of a `step` (and of a JSON `step_batch` entry): the environment's, with the server's recording note. */
export type ServerStepResult = StepResult & RecordingNote;

/** Which tool schemas `turn_reset` hands out: the reference's `run_command`, one tool per verb, or both. */
export type ToolsChoice = 'run_command' | 'verbs' | 'all';

/** A turn as it comes over the wire: `commands` (run_command calls) or the model's `tool_calls`. */
export interface WireTurnAction {
  commands?: readonly string[];
  tool_calls?: readonly ToolCall[];
  content?: string | null;
  reasoning_content?: string;
}

/** Status after one executed command and the verb it was recognised as (the `Observation` fields a tool result lacks). */
export interface CallDetail {
  command: string | null;
  status: Status;
}

/** `detail` of `turn_step`. */
export interface TurnStepDetail {
  /** One entry per tool result, in order. */
  calls: CallDetail[];
  /** The harness's own `sim resume` after the turn (`info.auto_resume`), or null. */
  auto_resume: CallDetail | null;
  /** Status of the run's current world after the step (a fresh world when a bankruptcy started the next episode). */
  status: Status;
  /** `extract_time_series` of the world of the episode this step ended (`info.episode_end`), else null. */
  episode_time_series: Record<string, unknown> | null;
}

/** Result of `turn_reset`. */
export interface TurnResetReply {
  session: string;
  messages: ChatMessage[];
  tools: FunctionTool[];
  tool_choice: 'auto';
  info: TurnInfo;
  detail?: { status: Status };
}

/** Result of `turn_step`. */
export interface TurnStepReply {
  tool_results: ToolResult[];
  next_user_message: string | null;
  done: boolean;
  terminal_reason: TurnInfo['terminal_reason'];
  info: TurnInfo;
  detail?: TurnStepDetail;
}

/** Result of `turn_restore`. */
export interface TurnRestoreReply {
  session: string;
  messages: ChatMessage[];
  info: TurnInfo;
  detail?: { status: Status };
}

// Binary step_batch replies (layout and decoder: ./binary.ts)

/** Reply encodings of `step_batch` (`encoding` field of the request; default `"json"`). */
export const BATCH_ENCODINGS = ['json', 'binary'] as const;
/** A reply encoding of `step_batch`. */
export type BatchEncoding = (typeof BATCH_ENCODINGS)[number];

/** Dtypes of the arrays (numpy's notation): float64, float32, uint8, all little-endian. */
export type BinaryDtype = '<f8' | '<f4' | '|u1';

/** One array of a binary reply: its name, dtype and shape (`[n]` or `[n, width]`). */
export interface BinaryArrayDesc {
  name: string;
  dtype: BinaryDtype;
  shape: number[];
}

/** A failed entry of a binary reply. */
export interface BinaryBatchError {
  index: number;
  error: ErrorBody;
}

/**
 * The `result` of a binary `step_batch` reply (frame 0). The arrays follow as frames; what JSON replies carry as
 * strings is here, one entry per request entry (`""`/null for a failed entry). The status block is not sent (ask
 * for JSON when you need it).
 */
export interface BinaryBatchResult {
  encoding: 'binary';
  /** Entries of the request (rows of every array). */
  n: number;
  /** The arrays of frames 1..k, in order: `BINARY_COLUMNS`, then `obs` (`<f4`, `[n, obs_size]`) and `mask` (`|u1`, `[n, n_actions]`) in a Discrete batch. */
  arrays: BinaryArrayDesc[];
  /** The failed entries, in request order (their rows are zeros). */
  errors: BinaryBatchError[];
  /** Each entry's `observation.text`. */
  text: string[];
  /** Each entry's `observation.command`. */
  command: (string | null)[];
  /** Each entry's `info.action_text` (Discrete sessions), else null. */
  action_text: (string | null)[];
  /** Each entry's `info.admissible_commands`; present only when some entry has them. */
  admissible_commands?: (string[] | null)[];
  /** The meaning of the `terminal_reason` codes 1.. (code 0 is null). */
  terminal_reasons: string[];
  /** The entries whose session's recording the server stopped (`RecordingStopped`); present only when some are. */
  recording_stopped?: { index: number; recording: RecordingStopped }[];
}

// ---------------------------------------------------------------------------------------------------------
// The op table (types)

/** Fields of a request naming a session. */
export interface SessionParams {
  session: string;
}

/** Each op: the fields of its request (besides `v`, `id` and `op`) and the `result` of its successful reply. */
export interface OpSignatures {
  hello: { params: Record<never, never>; result: HelloResult };
  reset: { params: { seed: number; preset?: string; session?: string; options?: WireResetOptions }; result: SessionResetResult };
  step: { params: { session: string; action: string | number }; result: ServerStepResult };
  /** `encoding: "binary"`: the result is a `BinaryBatchResult` and the arrays follow as frames (./binary.ts). */
  step_batch: { params: { steps: BatchStep[]; encoding?: BatchEncoding }; result: { results: BatchItem[] } | BinaryBatchResult };
  snapshot: { params: SessionParams; result: { snapshot: EnvSnapshot } };
  restore: { params: { snapshot: EnvSnapshot; session?: string }; result: SessionResetResult };
  close: { params: SessionParams; result: { closed: true } };
  turn_reset: {
    params: { seed: number; preset?: string; session?: string; options?: TurnOptions; tools?: ToolsChoice; detail?: boolean };
    result: TurnResetReply;
  };
  turn_step: { params: { session: string; action: WireTurnAction; detail?: boolean }; result: TurnStepReply };
  turn_messages: { params: SessionParams; result: { messages: ChatMessage[] } };
  turn_snapshot: { params: SessionParams; result: { snapshot: TurnSnapshot } };
  turn_restore: { params: { snapshot: TurnSnapshot; session?: string; detail?: boolean }; result: TurnRestoreReply };
  turn_time_series: { params: SessionParams; result: { time_series: Record<string, unknown> } };
}

/** A protocol operation name. */
export type Op = keyof OpSignatures;
/** The fields of an op's request besides the envelope. */
export type OpParams<O extends Op> = OpSignatures[O]['params'];
/** The `result` of an op's successful reply. */
export type OpResult<O extends Op> = OpSignatures[O]['result'];
/** A whole request of an op, as validated against its schema. */
export type OpRequest<O extends Op> = { v: 1; id?: RequestId; op: O } & OpParams<O>;

/**
 * One handler per op, typed from the table: what a server implements (errors are thrown, mapped to codes once).
 * `client` identifies the connection the request came from (opaque; sessions belong to the client that created them).
 */
export type OpHandlers = { readonly [O in Op]: (req: OpRequest<O>, client: string) => OpResult<O> };

// ---------------------------------------------------------------------------------------------------------
// The op table (runtime)

/** Which sessions an op acts on: none (`hello`), `Env` sessions, turn-protocol sessions, or either (`close`). */
export type SessionKind = 'none' | 'env' | 'turns' | 'any';

/** The runtime facts of one op. */
export interface OpSpec {
  /** Stem of its schema definitions: `<def>Request`, `<def>Reply` (and `<def>Result` for most). */
  def: string;
  session: SessionKind;
  /** Whether a valid request may create a session (counts against `max_sessions`). */
  creates: boolean;
  /** One line for docs/protocol.md. */
  summary: string;
}

/** Every op of protocol v1, in the order of docs/protocol.md. */
export const OP_TABLE: { readonly [O in Op]: OpSpec } = {
  hello: { def: 'Hello', session: 'none', creates: false, summary: 'Server facts: protocol version, presets, limits, observation spaces.' },
  reset: { def: 'Reset', session: 'env', creates: true, summary: 'Start an episode in a new session (or replace the episode of `session`).' },
  step: { def: 'Step', session: 'env', creates: false, summary: 'Execute one agent command; the observation, reward and end flags.' },
  step_batch: { def: 'StepBatch', session: 'env', creates: false, summary: 'Many steps in one round trip, in order, each failing alone.' },
  snapshot: { def: 'Snapshot', session: 'env', creates: false, summary: 'Exact snapshot of a session.' },
  restore: { def: 'Restore', session: 'env', creates: true, summary: 'Continue from a snapshot in a new session (or in `session`).' },
  close: { def: 'Close', session: 'any', creates: false, summary: 'Close a session of either kind.' },
  turn_reset: { def: 'TurnReset', session: 'turns', creates: true, summary: "Start a run of the paper's turn protocol: the chat, the tools, the info." },
  turn_step: { def: 'TurnStep', session: 'turns', creates: false, summary: 'Play one agent turn (commands or tool calls); tool results and the next user message.' },
  turn_messages: { def: 'TurnMessages', session: 'turns', creates: false, summary: 'The chat to send to the LLM next.' },
  turn_snapshot: { def: 'TurnSnapshot', session: 'turns', creates: false, summary: 'Exact snapshot of a turn session.' },
  turn_restore: { def: 'TurnRestore', session: 'turns', creates: true, summary: 'Continue a turn run from a snapshot in a new session (or in `session`).' },
  turn_time_series: { def: 'TurnTimeSeries', session: 'turns', creates: false, summary: "The reference's extract_time_series of a turn session's world." },
};

/** The operations of protocol v1 (the keys of `OP_TABLE`, in order). */
export const OPS = Object.keys(OP_TABLE) as readonly Op[];
