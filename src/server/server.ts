/**
 * The ZeroMQ server: one ROUTER socket, one request at a time in arrival order (ZeroMQ fair-queues peers),
 * replies sent without waiting (a ROUTER never blocks on send). Bad input of any kind is answered, never
 * fatal; the session table and the protocol logic live in sessions.ts and protocol.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Router } from 'zeromq';
import type { ResetResult } from '../env/env.js';
import { listPresets, packageRoot } from '../config/load.js';
import { errorReply, ProtocolHandler, schemaValidator, type Reply } from './protocol.js';
import { assertBindAllowed, resolveCurveKeys } from './security.js';
import { SessionManager, type SessionEnv, type SessionHooks } from './sessions.js';

/** Structured log sink (the CLI writes JSON lines to stderr; the library default discards). */
export type Logger = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** Options of `startServer`. */
export interface ServerOptions {
  /** Bind endpoint (default `tcp://127.0.0.1:5555`; `tcp://127.0.0.1:0` picks a free port). */
  endpoint?: string;
  /** Maximum live sessions (default 1024). */
  maxSessions?: number;
  /** Maximum payload frame size in bytes (default 1 MiB); ZeroMQ drops frames above 4x this. */
  maxMessageBytes?: number;
  /** Close sessions idle for this many milliseconds (default 600000; 0 never). */
  idleTimeoutMs?: number;
  /** CURVE server keys (Z85); required to bind a non-loopback TCP address. The public key is derived when absent. */
  curve?: { secretKey: string; publicKey?: string };
  logger?: Logger;
  /** Observation hooks for a recorder. */
  hooks?: SessionHooks;
  /** Validate every reply against the protocol schema (tests). */
  validateReplies?: boolean;
  /** Environment constructor (tests). */
  envFactory?: () => SessionEnv;
}

const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5555';
const DEFAULT_MAX_MESSAGE_BYTES = 1 << 20;
/** Upper bound on routing frames echoed back (a REQ behind a few brokers needs far fewer). */
const MAX_ENVELOPE_FRAMES = 64;

let cachedVersion: string | undefined;
function packageVersion(): string {
  if (cachedVersion === undefined) {
    const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
    cachedVersion = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  }
  return cachedVersion;
}

/** Schema check of a restored environment's first observation (catches snapshots with wrongly typed state). */
function restoredChecker(): (r: ResetResult) => string | null {
  const obs = schemaValidator('Observation');
  const info = schemaValidator('StepInfo');
  return (r) => {
    const o = obs(r.observation);
    if (o !== null) return `/observation${o}`;
    const i = info(r.info);
    return i === null ? null : `/info${i}`;
  };
}

/** Split a ROUTER message into routing envelope and payload frames (docs/protocol.md, Transport). */
export function splitFrames(frames: readonly Buffer[]): { envelope: Buffer[]; payload: Buffer[] } {
  let cut = 1;
  for (let i = 1; i < frames.length; i++) {
    if ((frames[i] as Buffer).length === 0) {
      cut = i + 1;
      break;
    }
  }
  return { envelope: frames.slice(0, cut), payload: frames.slice(cut) };
}

/** A running protocol server. */
export class Server {
  /** The bound endpoint (with the OS-assigned port when bound to port 0). */
  readonly endpoint: string;
  /** The CURVE public key clients need, or null when CURVE is off. */
  readonly publicKey: string | null;
  readonly sessions: SessionManager;
  private readonly handler: ProtocolHandler;
  private readonly maxMessageBytes: number;
  private readonly log: Logger;
  private readonly reaper: NodeJS.Timeout | null;
  private readonly loopDone: Promise<void>;
  private closing = false;

  private constructor(
    private readonly socket: Router,
    endpoint: string,
    publicKey: string | null,
    sessions: SessionManager,
    handler: ProtocolHandler,
    maxMessageBytes: number,
    log: Logger,
  ) {
    this.endpoint = endpoint;
    this.publicKey = publicKey;
    this.sessions = sessions;
    this.handler = handler;
    this.maxMessageBytes = maxMessageBytes;
    this.log = log;
    const idle = sessions.idleTimeoutMs;
    if (idle > 0) {
      // Check often enough that a session lives at most ~1.25x the timeout.
      const every = Math.min(Math.max(Math.floor(idle / 4), 10), 60_000);
      this.reaper = setInterval(() => this.reap(), every);
      this.reaper.unref();
    } else {
      this.reaper = null;
    }
    this.loopDone = this.loop();
  }

  /** Bind and start serving. Rejects on a refused endpoint (`SecurityError`), bad keys or a bind failure. */
  static async start(opts: ServerOptions = {}): Promise<Server> {
    const endpoint = opts.endpoint ?? DEFAULT_ENDPOINT;
    const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (!Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < 1) throw new RangeError('maxMessageBytes must be a positive integer');
    const keys = opts.curve ? resolveCurveKeys(opts.curve) : null;
    const where = assertBindAllowed(endpoint, keys !== null);
    const log: Logger = opts.logger ?? (() => undefined);
    const presets = listPresets();
    const sessionOpts: ConstructorParameters<typeof SessionManager>[0] = { presets, checkRestored: restoredChecker() };
    if (opts.maxSessions !== undefined) sessionOpts.maxSessions = opts.maxSessions;
    if (opts.idleTimeoutMs !== undefined) sessionOpts.idleTimeoutMs = opts.idleTimeoutMs;
    if (opts.hooks !== undefined) sessionOpts.hooks = opts.hooks;
    if (opts.envFactory !== undefined) sessionOpts.envFactory = opts.envFactory;
    const sessions = new SessionManager(sessionOpts);
    const handler = new ProtocolHandler(sessions, { version: packageVersion(), presets, maxMessageBytes }, { validateReplies: opts.validateReplies ?? false });

    const socket = new Router({
      linger: 0,
      // Frames above 4x the limit are dropped (and their peer disconnected) by ZeroMQ before reaching us.
      maxMessageSize: Math.min(maxMessageBytes * 4, Number.MAX_SAFE_INTEGER),
      ipv6: where.ipv6,
    });
    if (keys !== null) {
      socket.curveServer = true;
      socket.curveSecretKey = keys.secretKey;
      socket.curvePublicKey = keys.publicKey;
    }
    try {
      await socket.bind(endpoint);
    } catch (e) {
      socket.close();
      throw new Error(`cannot bind ${endpoint}: ${(e as Error).message}`);
    }
    const bound = socket.lastEndpoint ?? endpoint;
    log('info', 'listening', { endpoint: bound, curve: keys !== null });
    return new Server(socket, bound, keys?.publicKey ?? null, sessions, handler, maxMessageBytes, log);
  }

  /** Number of live sessions. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  private reap(): void {
    const gone = this.sessions.reapIdle();
    if (gone.length > 0) this.log('info', 'reaped idle sessions', { sessions: gone });
  }

  /** Build the reply frames for one received message (null: nothing to send). */
  private respond(frames: Buffer[]): Buffer[] | null {
    if (frames.length === 0) return null;
    const { envelope, payload } = splitFrames(frames);
    if (envelope.length > MAX_ENVELOPE_FRAMES) {
      const reply = errorReply('bad_frames', `too many routing frames (${envelope.length})`);
      return [frames[0] as Buffer, Buffer.from(JSON.stringify(reply))];
    }
    let reply: Reply;
    let text: string;
    if (payload.length !== 1) {
      reply = errorReply('bad_frames', `expected exactly one payload frame after the routing envelope, got ${payload.length}`);
      text = JSON.stringify(reply);
    } else {
      ({ reply, text } = this.handler.handlePayload(payload[0] as Buffer, this.maxMessageBytes));
    }
    if (!reply.ok && reply.error.code === 'internal') this.log('error', reply.error.message, { id: reply.id });
    return [...envelope, Buffer.from(text)];
  }

  private async loop(): Promise<void> {
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await this.socket.receive();
      } catch (e) {
        if (this.closing || this.socket.closed) return;
        this.log('error', `receive failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 10)); // never spin on a persistent failure
        continue;
      }
      let out: Buffer[] | null;
      try {
        out = this.respond(frames);
      } catch (e) {
        // respond() never throws by design; stay up if it does.
        this.log('error', `unexpected failure handling a message: ${(e as Error).message}`);
        out = frames.length > 0 ? [frames[0] as Buffer, Buffer.from(JSON.stringify(errorReply('internal', 'internal error')))] : null;
      }
      if (out === null) continue;
      try {
        await this.socket.send(out);
      } catch (e) {
        if (this.closing || this.socket.closed) return;
        this.log('warn', `send failed: ${(e as Error).message}`);
      }
    }
  }

  /** Stop serving: close the socket and every session. Idempotent. */
  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      if (this.reaper !== null) clearInterval(this.reaper);
      this.socket.close();
      this.sessions.closeAll();
      this.log('info', 'closed', { endpoint: this.endpoint });
    }
    await this.loopDone;
  }
}

/** Bind a server and start serving (see `ServerOptions`). */
export function startServer(opts: ServerOptions = {}): Promise<Server> {
  return Server.start(opts);
}
