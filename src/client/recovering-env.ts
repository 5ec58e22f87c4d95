/**
 * `RecoveringEnv`: a `RemoteEnv` that survives a server restart (or its session being reaped) without
 * changing the trajectory, by the recovery recipe of docs/reliability.md:
 *
 * 1. keep a base to rebuild the episode from (the reset arguments, then the latest `snapshot`, taken every
 *    `snapshotEvery` steps) and the actions taken since that base;
 * 2. when a request fails with `timeout`, `closed` or `unknown_session`, drop the connection (a new socket:
 *    requests still queued in the old one must not reach the restarted server, whose session ids start again
 *    at `s1` and could name somebody else's session), reconnect, `restore` the base (or `reset` with the same
 *    arguments) into a new session and replay the actions since the base;
 * 3. retry the failed call.
 *
 * The simulation is deterministic, so the replayed steps reproduce exactly the lost ones and the episode
 * continues as if nothing had happened, whether or not the failed request had run before the crash.
 */
import { EnvUsageError, type EnvLike, type EnvSnapshot, type ResetArgs, type ResetResult, type StepResult } from '../env/env.js';
import { Client, ProtocolError, type ClientOptions, type SessionResetResult } from './client.js';

/** Options of a `RecoveringEnv`. */
export interface RecoveringEnvOptions extends ClientOptions {
  /** Take a snapshot every this many steps (default 32; 1 = after every step). Replays are at most this long. */
  snapshotEvery?: number;
  /** Give up when the server cannot be reached for this long during a recovery (default 60000 ms). */
  recoverWithinMs?: number;
  /** First wait between reconnection attempts (default 100 ms, doubling up to 2 s). */
  retryDelayMs?: number;
  /** Called after each successful recovery. */
  onRecover?: (e: { error: ProtocolError; replayed: number; session: string }) => void;
}

/** Error codes that mean "the session or the server is gone", so the episode is rebuilt and the call retried. */
const RECOVERABLE = new Set(['timeout', 'closed', 'unknown_session']);

function isRecoverable(e: unknown): e is ProtocolError {
  return e instanceof ProtocolError && RECOVERABLE.has(e.code);
}

type Base = { kind: 'reset'; args: ResetArgs } | { kind: 'snapshot'; snapshot: EnvSnapshot };

function strip(r: SessionResetResult): ResetResult {
  return { observation: r.observation, info: r.info };
}

/** An environment in a ycgym server that rebuilds its episode after a server restart. */
export class RecoveringEnv implements EnvLike {
  private client: Client;
  private readonly opts: RecoveringEnvOptions;
  private readonly snapshotEvery: number;
  private sessionId: string | null = null;
  private base: Base | null = null;
  private log: string[] = [];
  private closed = false;
  /** A recoverable failure was swallowed (a checkpoint): rebuild before the next call. */
  private broken: ProtocolError | null = null;
  /** Number of recoveries so far. */
  recoveries = 0;
  /** Steps replayed by recoveries so far. */
  replayedSteps = 0;

  constructor(opts: RecoveringEnvOptions) {
    this.opts = opts;
    this.snapshotEvery = Math.max(1, Math.floor(opts.snapshotEvery ?? 32));
    this.client = new Client(opts);
  }

  /** The current server session id (it changes after a recovery). */
  get session(): string | null {
    return this.sessionId;
  }

  /** Start a new episode. */
  async reset(args: ResetArgs): Promise<ResetResult> {
    if (args.preset !== undefined && typeof args.preset !== 'string') throw new TypeError('RecoveringEnv.reset: preset must be the name of a built-in preset');
    const r = await this.withRecovery(async () => this.doReset(args, this.sessionId));
    return r;
  }

  private async doReset(args: ResetArgs, session: string | null): Promise<ResetResult> {
    const fields = { seed: args.seed, ...(typeof args.preset === 'string' ? { preset: args.preset } : {}), ...(args.options !== undefined ? { options: args.options } : {}) };
    let r: SessionResetResult;
    try {
      r = await this.client.reset(session === null ? fields : { ...fields, session });
    } catch (e) {
      if (!(session !== null && e instanceof ProtocolError && e.code === 'unknown_session')) throw e;
      r = await this.client.reset(fields);
    }
    this.sessionId = r.session;
    this.base = { kind: 'reset', args };
    this.log = [];
    return strip(r);
  }

  /** Execute one agent command. */
  async step(action: string): Promise<StepResult> {
    if (this.base === null) throw new EnvUsageError('not_reset', 'call reset() before step()');
    const r = await this.withRecovery(() => this.client.step(this.sessionId as string, action));
    this.log.push(action);
    if (this.log.length >= this.snapshotEvery && !(r.terminated || r.truncated)) {
      try {
        const snapshot = await this.client.snapshot(this.sessionId as string);
        this.base = { kind: 'snapshot', snapshot };
        this.log = [];
      } catch (e) {
        // A failed checkpoint is not fatal. Refused for memory (`capacity`): the session is fine; keep the previous
        // base and the longer log and checkpoint at a later step. Lost: the next call first rebuilds from the previous
        // base and the longer log (it must not reuse this connection or session: the server may have restarted).
        if (e instanceof ProtocolError && e.code === 'capacity') return r;
        if (!isRecoverable(e)) throw e;
        this.broken = e;
      }
    }
    return r;
  }

  /** Exact snapshot of the environment (also becomes the recovery base). */
  async snapshot(): Promise<EnvSnapshot> {
    if (this.base === null) throw new EnvUsageError('not_reset', 'call reset() before snapshot()');
    const snapshot = await this.withRecovery(() => this.client.snapshot(this.sessionId as string));
    this.base = { kind: 'snapshot', snapshot };
    this.log = [];
    return snapshot;
  }

  /** Continue from a snapshot exactly. */
  async restore(snap: EnvSnapshot): Promise<ResetResult> {
    return this.withRecovery(async () => {
      const r = await this.client.restore(snap);
      const old = this.sessionId;
      this.sessionId = r.session;
      this.base = { kind: 'snapshot', snapshot: snap };
      this.log = [];
      if (old !== null && old !== r.session) await this.client.closeSession(old).catch(() => undefined);
      return strip(r);
    });
  }

  /** Run `call`; on a recoverable failure rebuild the episode and retry (bounded by `recoverWithinMs`). */
  private async withRecovery<T>(call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (this.opts.recoverWithinMs ?? 60_000);
    let delay = this.opts.retryDelayMs ?? 100;
    let failure: ProtocolError | null = this.broken;
    for (;;) {
      if (this.closed) throw new ProtocolError('closed', 'the environment is closed');
      if (failure !== null) {
        // Rebuild until it works or the deadline passes; then (re)try the call.
        try {
          await this.rebuild(failure);
          failure = null;
          this.broken = null;
        } catch (again) {
          if (!isRecoverable(again) || Date.now() > deadline) throw again;
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 2000);
          continue;
        }
      }
      try {
        return await call();
      } catch (e) {
        if (!isRecoverable(e) || Date.now() > deadline) throw e;
        failure = e;
      }
    }
  }

  /** New connection, new session from the base, replay of the actions since the base. */
  private async rebuild(error: ProtocolError): Promise<void> {
    await this.client.close();
    this.client = new Client(this.opts);
    const old = this.sessionId;
    this.sessionId = null;
    if (this.base === null) return; // nothing to rebuild (a failed first reset is simply retried)
    const log = this.log;
    if (this.base.kind === 'reset') await this.doReset(this.base.args, null);
    else {
      const r = await this.client.restore(this.base.snapshot);
      this.sessionId = r.session;
    }
    for (const action of log) await this.client.step(this.sessionId as string, action);
    this.log = log;
    // If the server merely was slow (it did not restart), release the abandoned session now rather than at
    // its idle timeout; after a restart it is simply unknown.
    if (old !== null && old !== this.sessionId) await this.client.closeSession(old).catch(() => undefined);
    this.recoveries++;
    this.replayedSteps += log.length;
    this.opts.onRecover?.({ error, replayed: log.length, session: this.sessionId as string });
  }

  /** Close the server session and the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const sid = this.sessionId;
    this.sessionId = null;
    try {
      if (sid !== null) await this.client.closeSession(sid);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
    } finally {
      await this.client.close();
    }
  }
}
