/**
 * `RemoteEnv`: the `EnvLike` contract over the network. One server session per instance; results are the
 * very objects the in-process `Env` returns (after a JSON round trip, which is exact for them).
 */
import { EnvUsageError, type EnvLike, type EnvSnapshot, type ResetArgs, type ResetResult, type StepResult } from '../env/env.js';
import { argsProblem, Client, ProtocolError, type ClientOptions, type SessionResetResult } from './client.js';

function strip(r: SessionResetResult): ResetResult {
  return { observation: r.observation, info: r.info };
}

/** An environment living in a ycgym server. Errors from the server are `ProtocolError`s (`episode_over`, ...). */
export class RemoteEnv implements EnvLike {
  readonly client: Client;
  private readonly ownsClient: boolean;
  private sessionId: string | null = null;

  /** Use an existing `Client` (shared, left open by `close()`), or connect a new one (closed by `close()`). */
  constructor(target: Client | ClientOptions | string) {
    if (target instanceof Client) {
      this.client = target;
      this.ownsClient = false;
    } else {
      this.client = new Client(target);
      this.ownsClient = true;
    }
  }

  /** The server session id (null before the first `reset`/`restore`). */
  get session(): string | null {
    return this.sessionId;
  }

  /** Start a new episode (in this instance's session; a session the server reaped is replaced by a new one). */
  async reset(args: ResetArgs): Promise<ResetResult> {
    const problem = argsProblem(args, 'reset takes an object { seed, preset?, options? }');
    if (problem !== null) throw problem;
    if (args.preset !== undefined && typeof args.preset !== 'string') {
      throw new TypeError('RemoteEnv.reset: preset must be the name of a built-in preset (configs cannot be sent to a server)');
    }
    const base = { seed: args.seed, ...(args.preset !== undefined ? { preset: args.preset } : {}), ...(args.options !== undefined ? { options: args.options } : {}) };
    let r: SessionResetResult;
    if (this.sessionId !== null) {
      try {
        r = await this.client.reset({ ...base, session: this.sessionId });
      } catch (e) {
        if (!(e instanceof ProtocolError && e.code === 'unknown_session')) throw e;
        this.sessionId = null;
        r = await this.client.reset(base);
      }
    } else {
      r = await this.client.reset(base);
    }
    this.sessionId = r.session;
    return strip(r);
  }

  private requireSession(what: string): string {
    if (this.sessionId === null) throw new EnvUsageError('not_reset', `call reset() before ${what}()`);
    return this.sessionId;
  }

  /** Execute one agent command. */
  async step(action: string): Promise<StepResult> {
    return this.client.step(this.requireSession('step'), action);
  }

  /** Exact snapshot of the environment. */
  async snapshot(): Promise<EnvSnapshot> {
    return this.client.snapshot(this.requireSession('snapshot'));
  }

  /** Continue from a snapshot exactly (in this instance's session, or a new one). */
  async restore(snap: EnvSnapshot): Promise<ResetResult> {
    let r: SessionResetResult;
    if (this.sessionId !== null) {
      try {
        r = await this.client.restore(snap, this.sessionId);
      } catch (e) {
        if (!(e instanceof ProtocolError && e.code === 'unknown_session')) throw e;
        this.sessionId = null;
        r = await this.client.restore(snap);
      }
    } else {
      r = await this.client.restore(snap);
    }
    this.sessionId = r.session;
    return strip(r);
  }

  /** Close the server session, and the client when this instance created it. */
  async close(): Promise<void> {
    const sid = this.sessionId;
    this.sessionId = null;
    try {
      if (sid !== null) await this.client.closeSession(sid);
    } catch (e) {
      // Already gone (reaped, closed after an internal error) or the client is closed: nothing left to release.
      if (!(e instanceof ProtocolError && (e.code === 'unknown_session' || e.code === 'closed'))) throw e;
    } finally {
      if (this.ownsClient) await this.client.close();
    }
  }
}
