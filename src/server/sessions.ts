/**
 * The session table of the server: session id -> environment, with a cap on live sessions (in all and per
 * client), idle reaping and ids that are deterministic by default (`s1`, `s2`, ... in creation order, never reused;
 * with an instance tag `s1.<tag>`, ...) or drawn by `idFactory` (the server draws 128 random bits per id).
 * Every session belongs to the client that created it (`owner`, an opaque string: the server uses the request's
 * ZeroMQ routing envelope); a request of another client on it fails exactly like a request on a session that does
 * not exist (`unknown_session`), so nothing leaks. Every failure is a `SessionError` carrying a protocol error
 * code; an unexpected exception from an environment closes that session.
 *
 * Sessions are of two kinds, fixed for the life of an id: `Env` sessions (reset/step/step_batch/snapshot/restore)
 * and turn-protocol sessions (a `TurnEnv`: turn_reset/turn_step/turn_messages/turn_snapshot/turn_restore/
 * turn_time_series). An op of one kind naming a session of the other is `invalid_request`; `close`, the
 * session limit and idle reaping cover both. The hooks observe `Env` sessions only (`onClose` is called for both).
 */
import { PresetError } from '../config/load.js';
import { Env, EnvUsageError, type EnvSnapshot, type ResetOptions, type ResetResult, type StepResult, type WireStepResult, type WireStepResultWithoutStatus } from '../env/env.js';
import type { ChatMessage, TurnOptions, TurnSnapshot } from '../turns/turns.js';
import type { Simulation } from '../sim/index.js';
import { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, MAX_SESSION_ID_TAG_CHARS } from '../protocol/limits.js';
import type { ErrorCode, RecordingNote, SessionResetResult, ToolsChoice, TurnResetReply, TurnRestoreReply, TurnStepReply, WireTurnAction } from '../protocol/ops.js';
import { toolList, TurnSession, type TurnStart } from './turn-session.js';

/** The synchronous environment API the session table drives (`Env` implements it). */
export interface SessionEnv {
  reset(args: { seed: number; preset: string; options?: ResetOptions }): ResetResult;
  step(action: string | number): StepResult;
  /**
   * `step` without the observation's status block, its output text an `OutputText` when `wire` (`Env.stepWithoutStatus`);
   * absent in test doubles (`step` is used).
   */
  stepWithoutStatus?(action: string | number, wire: boolean): WireStepResultWithoutStatus;
  /** `step` with the output text left to the reply's writer (`Env.stepForWire`); absent in test doubles (`step` is used). */
  stepForWire?(action: string | number): WireStepResult;
  snapshot(): EnvSnapshot;
  restore(snap: EnvSnapshot): ResetResult;
  close(): void;
  /** The live world, for observers (`Env.simulation`); absent in test doubles. */
  readonly simulation?: Simulation | null;
  /** The action mode (`Env.actionMode`); absent in test doubles (text). */
  readonly actionMode?: 'text' | 'discrete';
  /** The Discrete frame's spec (`Env.discreteSpec`); absent in test doubles. */
  readonly discreteSpec?: { obs_size: number; n_actions: number } | null;
}

/** Why a session ended. */
export type CloseReason = 'close' | 'idle' | 'internal' | 'shutdown';

/**
 * Observation points for a recorder (hooks must not throw: an exception is treated like an environment bug). `sim`
 * is the session's live world (null for an environment without one): observers read it, never change it.
 */
export interface SessionHooks {
  /** After a successful reset (a new episode starts in `session`). */
  onReset?(e: { session: string; client: string; seed: number; preset: string; options: ResetOptions; result: ResetResult; sim: Simulation | null }): void;
  /** After a successful restore (the episode continues from a snapshot in `session`). */
  onRestore?(e: { session: string; snapshot: EnvSnapshot; result: ResetResult; sim: Simulation | null }): void;
  /** After every successful step; `action` is the command line executed (for a Discrete action, the command it stood for). */
  onStep?(e: { session: string; action: string; result: StepResult; sim: Simulation | null }): void;
  /**
   * After `onReset`, `onRestore` and `onStep`: what to add to that result of `session` (the server's recording telling
   * the session, once, that it stopped), or undefined.
   */
  noteFor?(session: string): RecordingNote | undefined;
  /** When a session is removed (its environment is already closed); exceptions are ignored. */
  onClose?(e: { session: string; reason: CloseReason }): void;
}

/** Options of the session table. */
export interface SessionManagerOptions {
  /** Maximum number of live sessions (default 1024). */
  maxSessions?: number;
  /** Maximum number of live sessions of one owner (default 256, at most `maxSessions`). */
  maxSessionsPerClient?: number;
  /**
   * Draws the id of a new session (default: `s1`, `s2`, ... with the `idTag` suffix). It must not return the id
   * of a live session (the server draws 128 random bits).
   */
  idFactory?: () => string;
  /** Close sessions untouched for this many milliseconds; 0 disables reaping (default 600000). */
  idleTimeoutMs?: number;
  /**
   * How many of the sessions last reaped as idle to remember (id, owner, idle time; default `maxSessions`), so that a
   * request naming one says it was reaped, and after how long, instead of the plain `unknown_session` message.
   */
  rememberReaped?: number;
  /** Names of the presets clients may use (default: none; the server passes `listPresets()`). */
  presets?: readonly string[];
  /** Millisecond clock (default `Date.now`); injectable for tests. */
  now?: () => number;
  /** Environment constructor (default `new Env()`); injectable for tests. */
  envFactory?: () => SessionEnv;
  /** Turn-protocol session constructor (default `new TurnSession()`); injectable for tests. */
  turnFactory?: () => TurnSession;
  hooks?: SessionHooks;
  /**
   * Suffix of every session id (`s1.<tag>`, `s2.<tag>`, ...); default none (`s1`, `s2`, ...). The server uses a
   * random tag per instance, so ids are never reused across restarts either: a request still in flight for a
   * session of a previous instance gets `unknown_session` instead of reaching somebody else's session.
   */
  idTag?: string;
  /**
   * Check the result of a restore before the session is installed (the server checks it against the protocol
   * schema): a problem makes the restore fail with `bad_snapshot`, leaving the target session unchanged.
   */
  checkRestored?: (r: ResetResult) => string | null;
  /** The same check for `turn_restore` (the restored chat and info). */
  checkTurnRestored?: (r: TurnStart) => string | null;
}

/** A request the session table refuses; `code` is the protocol error code. */
export class SessionError extends Error {
  override readonly name = 'SessionError';
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A live session: an `Env` session or a turn-protocol session. */
type Session = ({ kind: 'env'; env: SessionEnv } | { kind: 'turns'; env: TurnSession }) & { lastUsed: number; owner: string };

/** The owner of sessions created in-process (tests, embedding), i.e. without a client identity. */
export const LOCAL_OWNER = '';

/** What `put` installs. */
type SessionValue = { kind: 'env'; env: SessionEnv } | { kind: 'turns'; env: TurnSession };

export type { SessionResetResult } from '../protocol/ops.js';

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Programming errors (as opposed to a refused argument) raised while starting an episode. */
function isBug(e: unknown): boolean {
  return e instanceof TypeError || e instanceof ReferenceError || e instanceof SyntaxError || !(e instanceof Error);
}

/** Live sessions of one server. */
export class SessionManager {
  readonly maxSessions: number;
  readonly maxSessionsPerClient: number;
  readonly idleTimeoutMs: number;
  private readonly presets: ReadonlySet<string>;
  private readonly presetList: string;
  private readonly now: () => number;
  private readonly envFactory: () => SessionEnv;
  private readonly turnFactory: () => TurnSession;
  private readonly hooks: SessionHooks;
  private readonly checkRestored: (r: ResetResult) => string | null;
  private readonly checkTurnRestored: (r: TurnStart) => string | null;
  private readonly sessions = new Map<string, Session>();
  /** Sessions reaped as idle, oldest first, at most `rememberReaped`: id -> owner and idle milliseconds. */
  private readonly reaped = new Map<string, { owner: string; idleMs: number }>();
  private readonly rememberReaped: number;
  /** Live sessions per owner (owners with none are absent). */
  private readonly owned = new Map<string, number>();
  private nextId = 1;
  private readonly idSuffix: string;
  private readonly idFactory: (() => string) | null;

  constructor(opts: SessionManagerOptions = {}) {
    this.maxSessions = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (!Number.isInteger(this.maxSessions) || this.maxSessions < 1) throw new RangeError('maxSessions must be a positive integer');
    this.maxSessionsPerClient = Math.min(opts.maxSessionsPerClient ?? DEFAULT_MAX_SESSIONS_PER_CLIENT, this.maxSessions);
    if (!Number.isInteger(this.maxSessionsPerClient) || this.maxSessionsPerClient < 1) throw new RangeError('maxSessionsPerClient must be a positive integer');
    this.idFactory = opts.idFactory ?? null;
    if (!Number.isFinite(this.idleTimeoutMs) || this.idleTimeoutMs < 0) throw new RangeError('idleTimeoutMs must be >= 0');
    this.rememberReaped = opts.rememberReaped ?? this.maxSessions;
    if (!Number.isInteger(this.rememberReaped) || this.rememberReaped < 0) throw new RangeError('rememberReaped must be a non-negative integer');
    this.presets = new Set(opts.presets ?? []);
    this.presetList = [...this.presets].sort().join(', ');
    this.now = opts.now ?? Date.now;
    this.envFactory = opts.envFactory ?? (() => new Env());
    this.turnFactory = opts.turnFactory ?? (() => new TurnSession());
    this.hooks = opts.hooks ?? {};
    this.checkRestored = opts.checkRestored ?? (() => null);
    this.checkTurnRestored = opts.checkTurnRestored ?? (() => null);
    const tag = opts.idTag ?? '';
    if (!new RegExp(`^[A-Za-z0-9_-]{0,${MAX_SESSION_ID_TAG_CHARS}}$`).test(tag)) throw new RangeError(`idTag must be at most ${MAX_SESSION_ID_TAG_CHARS} characters of [A-Za-z0-9_-]`);
    this.idSuffix = tag === '' ? '' : `.${tag}`;
  }

  /** Number of live sessions. */
  get size(): number {
    return this.sessions.size;
  }

  /** Ids of the live sessions, in creation order. */
  ids(): string[] {
    return [...this.sessions.keys()];
  }

  /** Live sessions of `owner`. */
  sessionsOf(owner: string): number {
    return this.owned.get(owner) ?? 0;
  }

  /** A live session of `owner`; another owner's session is `unknown_session`, word for word as a missing one. */
  private get(id: string, owner: string): Session {
    const s = this.sessions.get(id);
    if (s === undefined || s.owner !== owner) throw new SessionError('unknown_session', this.unknownMessage(id, owner));
    s.lastUsed = this.now();
    return s;
  }

  /** Why `id` is no session of `owner`: reaped as idle (when remembered), else the plain message (which tells no
   * client whether another client's session exists). */
  private unknownMessage(id: string, owner: string): string {
    const r = this.reaped.get(id);
    if (r === undefined || r.owner !== owner || this.sessions.has(id)) return `unknown session ${JSON.stringify(id)} (closed, reaped or never created)`;
    return (
      `session ${JSON.stringify(id)} was closed by the server after ${r.idleMs / 1000} s without a request (its idle timeout is ` +
      `${this.idleTimeoutMs / 1000} s: \`ycgym serve --idle-timeout SECONDS\`, 0 for never); its episode is gone: reset to start another`
    );
  }

  /** An `Env` session (`invalid_request` for a turn-protocol session). */
  private getEnv(id: string, owner: string): SessionEnv {
    const s = this.get(id, owner);
    if (s.kind !== 'env') {
      throw new SessionError(
        'invalid_request',
        `session ${id} is a turn-protocol session (TurnEnv): use turn_step, turn_messages, turn_snapshot, turn_restore, turn_time_series or close`,
      );
    }
    return s.env;
  }

  /** A turn-protocol session (`invalid_request` for an `Env` session). */
  private getTurns(id: string, owner: string): TurnSession {
    const s = this.get(id, owner);
    if (s.kind !== 'turns') {
      throw new SessionError('invalid_request', `session ${id} is an Env session: turn_* ops need a turn-protocol session (turn_reset without session creates one)`);
    }
    return s.env;
  }

  private checkCapacity(owner: string): void {
    if (this.sessions.size >= this.maxSessions) {
      throw new SessionError('session_limit', `session limit reached (${this.maxSessions} live sessions); close one first`);
    }
    if (this.sessionsOf(owner) >= this.maxSessionsPerClient) {
      throw new SessionError('session_limit', `session limit of this client reached (${this.maxSessionsPerClient} live sessions per client); close one first`);
    }
  }

  private newId(): string {
    if (this.idFactory === null) return `s${this.nextId++}${this.idSuffix}`;
    for (;;) {
      const id = this.idFactory();
      if (!this.sessions.has(id)) return id;
    }
  }

  /** Install an environment under `id` (a new session of `owner` when null) and return the id. */
  private put(id: string | null, owner: string, v: SessionValue): string {
    const sid = id ?? this.newId();
    const old = this.sessions.get(sid);
    if (old !== undefined && old.env !== v.env) safeClose(old.env);
    if (old === undefined) this.owned.set(owner, this.sessionsOf(owner) + 1);
    this.sessions.set(sid, { ...v, lastUsed: this.now(), owner } as Session);
    return sid;
  }

  /** Remove a session after an environment bug and build the `internal` error. */
  private internal(id: string, what: string, e: unknown): SessionError {
    this.remove(id, 'internal');
    return new SessionError('internal', `internal error during ${what} in session ${id} (the session was closed): ${errorText(e)}`);
  }

  /**
   * The one wrapper of every call into a live session (its environment or a hook): an exception is an
   * environment bug that closes the session (`internal`), except the end of an episode when `over` says what
   * to answer (`episode_over`).
   */
  private guarded<T>(session: string, what: string, fn: () => T, over?: string): T {
    try {
      return fn();
    } catch (e) {
      if (over !== undefined && e instanceof EnvUsageError && e.code === 'episode_over') throw new SessionError('episode_over', `session ${session}: ${over}`);
      // A Discrete index out of range, or an action of the wrong kind for the session: refused, no step happened.
      if (e instanceof EnvUsageError && e.code === 'invalid_action') throw new SessionError('invalid_request', `/action: ${e.message}`);
      throw this.internal(session, what, e);
    }
  }

  /**
   * Start an episode (`reset`, `turn_reset`) in a fresh environment, in `target` (replaced) or a new session.
   * Nothing changes on failure: a bad preset is `bad_preset`, a refused option `invalid_request`, a bug `internal`.
   */
  private start<E extends { close(): void }, R>(what: string, preset: string, target: string | undefined, make: () => E, begin: (env: E) => R): { env: E; r: R } {
    this.checkPreset(preset);
    const env = make();
    try {
      return { env, r: begin(env) };
    } catch (e) {
      safeClose(env);
      if (e instanceof PresetError) throw new SessionError('bad_preset', e.message);
      if (isBug(e)) {
        if (target !== undefined) throw this.internal(target, what, e);
        throw new SessionError('internal', `internal error during ${what}: ${errorText(e)}`);
      }
      // A schema violation names its own path (`/options/max_turns: ...`, `/seed: ...`); other refusals are the options'.
      const m = errorText(e);
      throw new SessionError('invalid_request', m.startsWith('/') ? m : `/options: ${m}`);
    }
  }

  /**
   * Restore a snapshot (`restore`, `turn_restore`) into a fresh environment and check the result; any failure is
   * `bad_snapshot` and changes nothing. `what` names the snapshot in messages (`snapshot`, `turn snapshot`).
   */
  private revive<E extends { close(): void }, R>(what: string, make: () => E, restore: (env: E) => R, check: (r: R) => string | null): { env: E; r: R } {
    const env = make();
    let r: R;
    let problem: string | null;
    try {
      r = restore(env);
      problem = check(r);
    } catch (e) {
      safeClose(env);
      throw new SessionError('bad_snapshot', `cannot restore this ${what}: ${errorText(e)}`);
    }
    if (problem !== null) {
      safeClose(env);
      throw new SessionError('bad_snapshot', `this ${what} restores to an invalid state: ${problem}`);
    }
    return { env, r };
  }

  /** Check that a new session may be created, or that `target` is a live session of the right kind. */
  private target(session: string | undefined, kind: 'env' | 'turns', owner: string): void {
    if (session === undefined) this.checkCapacity(owner);
    else if (kind === 'env') this.getEnv(session, owner);
    else this.getTurns(session, owner);
  }

  private remove(id: string, reason: CloseReason): void {
    const s = this.sessions.get(id);
    if (s === undefined) return;
    this.sessions.delete(id);
    const n = this.sessionsOf(s.owner) - 1;
    if (n > 0) this.owned.set(s.owner, n);
    else this.owned.delete(s.owner);
    safeClose(s.env);
    try {
      this.hooks.onClose?.({ session: id, reason });
    } catch {
      // A failing observer must not take the server down.
    }
  }

  /** Start an episode in a new session, or in `session` (replacing its episode; unchanged on failure). */
  reset(args: { seed: number; preset?: string; session?: string; options?: ResetOptions }, owner = LOCAL_OWNER): SessionResetResult {
    const preset = args.preset ?? 'default';
    const options = args.options ?? {};
    this.target(args.session, 'env', owner);
    const { env, r: result } = this.start('reset', preset, args.session, this.envFactory, (e) => e.reset({ seed: args.seed, preset, options }));
    const session = this.put(args.session ?? null, owner, { kind: 'env', env });
    const note = this.guarded(session, 'reset', () => {
      this.hooks.onReset?.({ session, client: owner, seed: args.seed, preset, options, result, sim: env.simulation ?? null });
      return this.hooks.noteFor?.(session);
    });
    return note?.recording_stopped !== undefined ? { session, ...result, recording_stopped: note.recording_stopped } : { session, ...result };
  }

  /**
   * The shape of the Discrete frame a step of `session` returns (features, actions), or null in text mode; fails as
   * `step` would on a session that is not this owner's live `Env` session. Nothing runs.
   */
  frameShape(session: string, owner = LOCAL_OWNER): { obs: number; actions: number } | null {
    const env = this.getEnv(session, owner);
    const spec = env.actionMode === 'discrete' ? env.discreteSpec : null;
    return spec === null || spec === undefined ? null : { obs: spec.obs_size, actions: spec.n_actions };
  }

  /** Execute one agent command in a session. */
  step(session: string, action: string | number, owner = LOCAL_OWNER): StepResult & RecordingNote {
    const env = this.getEnv(session, owner);
    const result = this.guarded(session, 'step', () => env.step(action), 'the episode is over (terminated or truncated); send reset');
    const text = typeof action === 'string' ? action : (result.info.action_text ?? String(action));
    const note = this.guarded(session, 'step', () => {
      this.hooks.onStep?.({ session, action: text, result, sim: env.simulation ?? null });
      return this.hooks.noteFor?.(session);
    });
    if (note?.recording_stopped !== undefined) (result as StepResult & RecordingNote).recording_stopped = note.recording_stopped;
    return result;
  }

  /**
   * `step` for a reply without the status block (a binary `step_batch`), serialised at once: the output text is an
   * `OutputText` (`Env.stepWithoutStatus(action, true)`: written into the reply from the command's value before the
   * session steps again). The status block is not built unless an `onStep` hook observes the step (hooks get the full
   * result, its text a string). `wire` false: the text is a string (for callers that keep the results).
   */
  stepWithoutStatus(session: string, action: string | number, owner = LOCAL_OWNER, wire = true): WireStepResultWithoutStatus {
    if (this.hooks.onStep !== undefined) return this.step(session, action, owner);
    const env = this.getEnv(session, owner);
    return this.guarded(session, 'step', () => (env.stepWithoutStatus !== undefined ? env.stepWithoutStatus(action, wire) : env.step(action)), 'the episode is over (terminated or truncated); send reset');
  }

  /**
   * `step` for a reply serialised at once (`Env.stepForWire`: the output text is written into the reply from the
   * command's value); the plain `step` when an `onStep` hook observes the step (hooks get the full result).
   */
  stepForWire(session: string, action: string | number, owner = LOCAL_OWNER): WireStepResult {
    if (this.hooks.onStep !== undefined) return this.step(session, action, owner);
    const env = this.getEnv(session, owner);
    return this.guarded(session, 'step', () => (env.stepForWire !== undefined ? env.stepForWire(action) : env.step(action)), 'the episode is over (terminated or truncated); send reset');
  }

  /** Exact snapshot of a session's environment. */
  snapshot(session: string, owner = LOCAL_OWNER): EnvSnapshot {
    const env = this.getEnv(session, owner);
    return this.guarded(session, 'snapshot', () => env.snapshot());
  }

  /** Continue from a snapshot in a new session, or in `session` (unchanged on failure). */
  restore(snapshot: EnvSnapshot, session?: string, owner = LOCAL_OWNER): SessionResetResult {
    this.target(session, 'env', owner);
    const { env, r: result } = this.revive('snapshot', this.envFactory, (e) => e.restore(snapshot), this.checkRestored);
    const sid = this.put(session ?? null, owner, { kind: 'env', env });
    const note = this.guarded(sid, 'restore', () => {
      this.hooks.onRestore?.({ session: sid, snapshot, result, sim: env.simulation ?? null });
      return this.hooks.noteFor?.(sid);
    });
    return note?.recording_stopped !== undefined ? { session: sid, ...result, recording_stopped: note.recording_stopped } : { session: sid, ...result };
  }

  private checkPreset(preset: string): void {
    if (!this.presets.has(preset)) {
      throw new SessionError('bad_preset', `unknown preset ${JSON.stringify(preset)} (available: ${this.presetList}); file paths are not accepted over the wire`);
    }
  }

  // ------------------------------------------------------------------------------------------- turn protocol

  /** Start a turn-protocol run in a new session, or in turn session `session` (replaced; unchanged on failure). */
  turnReset(args: { seed: number; preset?: string; session?: string; options?: TurnOptions; tools?: ToolsChoice; detail?: boolean }, owner = LOCAL_OWNER): TurnResetReply {
    const preset = args.preset ?? 'default';
    this.target(args.session, 'turns', owner);
    const { env, r } = this.start('turn_reset', preset, args.session, this.turnFactory, (ts) => ts.reset(args.seed, preset, args.options ?? {}));
    const session = this.put(args.session ?? null, owner, { kind: 'turns', env });
    const out: TurnResetReply = { session, messages: r.messages, tools: toolList(args.tools), tool_choice: 'auto', info: r.info };
    if (args.detail === true) out.detail = { status: r.status };
    return out;
  }

  /** Play one agent turn in a turn session. */
  turnStep(session: string, action: WireTurnAction, detail = false, owner = LOCAL_OWNER): TurnStepReply {
    const ts = this.getTurns(session, owner);
    return this.guarded(session, 'turn_step', () => ts.step(action, detail), 'the run is over; send turn_reset');
  }

  /** The chat a turn session sends to the LLM next. */
  turnMessages(session: string, owner = LOCAL_OWNER): ChatMessage[] {
    const ts = this.getTurns(session, owner);
    return this.guarded(session, 'turn_messages', () => ts.messages());
  }

  /** Exact snapshot of a turn session. */
  turnSnapshot(session: string, owner = LOCAL_OWNER): TurnSnapshot {
    const ts = this.getTurns(session, owner);
    return this.guarded(session, 'turn_snapshot', () => ts.snapshot());
  }

  /** Continue a turn run from a snapshot in a new session, or in turn session `session` (unchanged on failure). */
  turnRestore(snapshot: TurnSnapshot, session?: string, detail = false, owner = LOCAL_OWNER): TurnRestoreReply {
    this.target(session, 'turns', owner);
    const { env, r } = this.revive('turn snapshot', this.turnFactory, (ts) => ts.restore(snapshot), this.checkTurnRestored);
    const sid = this.put(session ?? null, owner, { kind: 'turns', env });
    const out: TurnRestoreReply = { session: sid, messages: r.messages, info: r.info };
    if (detail) out.detail = { status: r.status };
    return out;
  }

  /** `extract_time_series` of a turn session's current world. */
  turnTimeSeries(session: string, owner = LOCAL_OWNER): Record<string, unknown> {
    const ts = this.getTurns(session, owner);
    return this.guarded(session, 'turn_time_series', () => ts.timeSeries());
  }

  /** Close a session (of either kind). */
  close(session: string, owner = LOCAL_OWNER): void {
    this.get(session, owner);
    this.remove(session, 'close');
  }

  /** Close a session after a failure outside the environment (e.g. its reply could not be encoded); no-op when absent. */
  discard(session: string, reason: CloseReason = 'internal', owner = LOCAL_OWNER): void {
    if (this.sessions.get(session)?.owner !== owner) return;
    this.remove(session, reason);
  }

  /** Close every session idle for longer than the idle timeout; returns the closed ids. */
  reapIdle(now: number = this.now()): string[] {
    if (this.idleTimeoutMs === 0) return [];
    const idle: string[] = [];
    for (const [id, s] of this.sessions) {
      if (now - s.lastUsed < this.idleTimeoutMs) continue;
      idle.push(id);
      if (this.rememberReaped > 0) this.reaped.set(id, { owner: s.owner, idleMs: now - s.lastUsed });
    }
    for (const id of idle) this.remove(id, 'idle');
    // Forget the oldest beyond the bound (a Map iterates in insertion order).
    for (const id of this.reaped.keys()) {
      if (this.reaped.size <= this.rememberReaped) break;
      this.reaped.delete(id);
    }
    return idle;
  }

  /** Close every session (server shutdown). */
  closeAll(): void {
    for (const id of [...this.sessions.keys()]) this.remove(id, 'shutdown');
  }
}

function safeClose(env: { close(): void }): void {
  try {
    env.close();
  } catch {
    // Closing is best effort: the session is gone either way.
  }
}
