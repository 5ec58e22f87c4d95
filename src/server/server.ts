/**
 * The ZeroMQ server: one ROUTER socket, one request at a time in arrival order (ZeroMQ fair-queues peers),
 * replies sent without waiting (a ROUTER never blocks on send). Bad input of any kind is answered, never
 * fatal; the session table and the protocol logic live in sessions.ts and protocol.ts.
 */
import { makeDirs } from '../export/dirs.js';
import { recordProblem, RecordQuota, SessionRecording } from './session-recording.js';
import { arrowCompression, type ArrowCompression } from '../export/compression.js';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { ResetResult } from '../env/env.js';
import { listPresets, packageRoot } from '../config/load.js';
import { BatchJob, ProtocolHandler, type Handled, type ServerFacts } from './protocol-handler.js';
import { decodePayload, DEFAULT_MAX_MESSAGE_BYTES, errorReply, schemaValidator, tooLargeReply, validRequestId } from '../protocol/protocol.js';
import type { RecordingNote, RequestId } from '../protocol/ops.js';
import type { Router } from 'zeromq';
import type { RecordMemory } from './recorder.js';
import { assertBindAllowed, resolveCurveKeys, SecurityError } from './security.js';
import { parseAllowList, ZapHandler } from './zap.js';
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_UNREAD_REPLY_BYTES, DEFAULT_MAX_UNREAD_TOTAL_BYTES, MAX_CLIENT_QUEUED_BYTES, MAX_CLIENT_QUEUED_REQUESTS, SESSION_ID_RANDOM_BYTES, unreadTotalHeadroom } from '../protocol/limits.js';
import { SessionManager, type SessionEnv, type SessionHooks } from './sessions.js';
import type { TurnStart } from './turn-session.js';
import { PipeRouter, skippedPayloadBytes, type PipeEnd } from './pipe.js';

/** What the server needs of its socket: a zeromq.js ROUTER, or the pipe transport's stand-in for one. */
interface Transport {
  receive(): Promise<Buffer[]>;
  send(frames: (Buffer | string)[]): Promise<void>;
  /**
   * `send` for a transport that knows at once whether it took the message (the pipe): returns, or throws what `send`
   * would reject with. The loop then hands a reply over without waiting for a promise.
   */
  sendNow?(frames: (Buffer | string)[]): void;
  readonly closed: boolean;
  readonly readable: boolean;
  unbindSync(endpoint: string): void;
  close(): void;
}

/** Structured log sink (the CLI writes JSON lines to stderr; the library default discards). */
export type Logger = (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;

/** Options of `startServer`. */
export interface ServerOptions {
  /** Bind endpoint (default `tcp://127.0.0.1:5555`; `tcp://127.0.0.1:0` picks a free port). */
  endpoint?: string;
  /**
   * Serve over two inherited pipe file descriptors instead of a ZeroMQ endpoint (src/server/pipe.ts: the transport
   * of a server that is its client's child process). `endpoint` and the CURVE options do not apply. The server stops
   * serving when the client closes its end (`Server.stopped` resolves).
   */
  pipe?: {
    input: number;
    output: number;
    /** After a reply, how long a wait for the next request polls the input pipe first, in µs (0, the default: never; `PipeRouter`). */
    spinUs?: number;
  };
  /** Maximum live sessions (default 1024). */
  maxSessions?: number;
  /** Maximum live sessions of one client connection (default 256). */
  maxSessionsPerClient?: number;
  /** Maximum payload frame size in bytes (default 1 MiB); ZeroMQ drops frames above 4x this. */
  maxMessageBytes?: number;
  /** Close sessions idle for this many milliseconds (default 600000; 0 never). */
  idleTimeoutMs?: number;
  /** CURVE server keys (Z85); required to bind a non-loopback TCP address. The public key is derived when absent. */
  curve?: { secretKey: string; publicKey?: string };
  /**
   * CURVE client allow-list (Z85 public keys; needs `curve`): only these clients complete the handshake. Without
   * it any client that knows the server's public key may connect.
   */
  curveAllow?: readonly string[];
  logger?: Logger;
  /** Observation hooks for a recorder. */
  hooks?: SessionHooks;
  /**
   * Directory for per-session recordings: a `reset` with `options.record = {path: "name.arrow"}` records that
   * session into DIR/name.arrow (Arrow, docs/trajectories.md). Without it, `options.record` is refused.
   */
  recordDir?: string;
  /** Body compression of those recordings (default `'zstd'`; `'none'`: plain Arrow IPC, no compression on the server's thread). */
  recordCompression?: ArrowCompression;
  /**
   * Byte budget of the recordings this server starts, together (`serve --record-max-mib`; default
   * `DEFAULT_RECORD_MAX_BYTES`, 16 GiB): a recording whose next rows it cannot hold is completed with the rows written so
   * far and its sessions go on unrecorded (`recording_stopped` in their next result); a reset asking to record once it
   * cannot hold another recording is `record_limit`.
   */
  recordMaxBytes?: number;
  /** The share of that budget one client's recordings may take together (`--record-client-mib`; default 2 GiB, at most `recordMaxBytes`). */
  recordClientBytes?: number;
  /** Recordings of one client in progress at once (`--record-max-per-client`; default 16); beyond it a new one is `record_limit`. */
  recordMaxPerClient?: number;
  /** The bound on the step rows every recording holds in memory together (`RecordMemory`; tests; default 64 MiB). */
  recordMemoryBytes?: number;
  /** Validate every reply against the protocol schema (tests). */
  validateReplies?: boolean;
  /** Cap on one `step_batch` reply in bytes (default 64 MiB; later entries fail with `message_too_large`). */
  maxBatchReplyBytes?: number;
  /** Longest stretch a `step_batch` runs before other clients get a turn, in ms (default 5). */
  batchSliceMs?: number;
  /**
   * Bytes of `step_batch` replies being assembled across all clients (default 256 MiB). Beyond it only the
   * oldest batch in progress advances (the others wait, their results unchanged), so many clients sending
   * large batches at once cannot multiply the per-batch cap.
   */
  maxBatchBytesInFlight?: number;
  /**
   * Memory budget in bytes (`serve --max-memory`): while the resident set size is above it, requests that create
   * sessions or bulk output (reset, restore, turn_reset, turn_restore, step_batch) are refused with `capacity`.
   * Independently, they are refused while the V8 heap is above 85% of its limit. Default: no RSS budget.
   */
  maxMemoryBytes?: number;
  /** A client whose reply ZeroMQ could not take for this long (ms) stopped reading: its work is dropped (default 10000). */
  stallTimeoutMs?: number;
  /**
   * Budget of one ZeroMQ connection's unread replies, in bytes (`serve --max-unread-mib`; default 256 MiB): while the
   * large replies ZeroMQ may still hold for it reach this (`UnreadReplies`), its requests are answered `capacity`,
   * unhandled. Does not apply to the pipe transport, whose output buffer is bounded in bytes itself.
   */
  maxUnreadReplyBytes?: number;
  /**
   * Budget of every ZeroMQ connection's unread replies together, in bytes (`serve --max-unread-total-mib`; default
   * 1 GiB): one process may open many connections, each with its own `maxUnreadReplyBytes`. From 3/4 of it the requests
   * of the connections holding the most are answered `capacity`, at it those of every connection holding some, and
   * beyond it and its headroom (`UNREAD_TOTAL_HEADROOM_DIVISOR`) every connection's (`Server.unreadRefusal`).
   * Does not apply to the pipe transport.
   */
  maxUnreadTotalBytes?: number;
  /**
   * ZeroMQ connections served at once (`serve --max-connections`; default 512): while more are open, the requests of a
   * connection not served before are answered `capacity`, unhandled (`Server.connectionRefusal`). Does not apply to the
   * pipe transport.
   */
  maxConnections?: number;
  /**
   * Sequential session ids with this tag (`s1.<tag>`, `s2.<tag>`, ...; `''` gives plain `s1`, `s2`: tests).
   * Default: every id is `s` and 128 random bits (22 base64url characters), so ids are unguessable and never
   * reused across restarts.
   */
  sessionIdTag?: string;
  /** Environment constructor (tests). */
  envFactory?: () => SessionEnv;
}

/** The default bind endpoint: loopback only. */
export const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5555';
const DEFAULT_BATCH_SLICE_MS = 5;
/**
 * A slice of a batch also ends once it has encoded this many reply bytes (after the entry that crossed it), so the
 * memory of replies in flight is bounded by bytes, not by how much output the engine can produce in `sliceMs`.
 */
export const BATCH_SLICE_BYTES = 1 << 19;
/** Requests read from ZeroMQ but not yet handled (beyond either bound the server stops reading; ZeroMQ queues). */
const MAX_QUEUED_MESSAGES = 4096;
const MAX_QUEUED_BYTES = 64 * 2 ** 20;
/** Messages read in one go while other work is pending (ZeroMQ hands them out fair-queued across peers). */
const READ_BURST = 64;
/** Under sustained load, let timers (idle reaping) run at least this often. */
const YIELD_EVERY_MS = 20;
/** Upper bound on routing frames echoed back (a REQ behind a few brokers needs far fewer). */
const MAX_ENVELOPE_FRAMES = 64;
/**
 * Replies ZeroMQ may hold for one peer (its send high-water mark). A reading client takes replies into its own
 * receive queue (1,000 by default) as fast as they come. When a reply does not fit (ROUTER_MANDATORY reports
 * it), it waits in the peer's outbox (one reply) and the peer gets no more work until it is taken; a peer whose
 * outbox has waited `STALL_MS` stopped reading: its reply and queued requests are dropped. What ZeroMQ holds stays
 * while the connection is open (the server cannot take it back), so this is small: a connection that never reads
 * holds at most this many replies plus its outbox (`step` replies, never refused, are up to ~1.7 MB). It was 64
 * (~110 MB a connection). Lower costs a pipelining client throughput: tiny replies come faster than ZeroMQ's I/O
 * thread moves them, and each time its queue is full the peer waits a retry (measured on 2 busy cores, Python
 * client, 2,000 pipelined `hello`s or 20 rounds of 64 pipelined steps: at 16 about as fast as at 64, at 8 ~1.2-1.4x
 * slower, and ~2x with the 2 ms retry alone).
 */
const SEND_HWM = 16;
const STALL_MS = 10_000;
/**
 * Replies of one connection ZeroMQ may still hold: its send queue (`SEND_HWM`; ROUTER_MANDATORY refuses a reply beyond
 * it, counting a reply as taken only once its I/O thread has taken it) and the one its I/O thread is writing to the
 * socket. ZeroMQ sends a connection's replies in order, so it holds at most the last this many handed to it.
 */
const UNREAD_WINDOW = SEND_HWM + 1;
/** Connections served that `Server.served` keeps, per connection of the cap (`maxConnections`). */
const SERVED_KEPT_PER_CONNECTION = 4;
/** Connections `UnreadReplies` counts at most (~150 bytes each). */
const MAX_TRACKED_UNREAD = 4096;
/**
 * How often waiting replies are offered again while nothing else happens (ms); sooner (`FIRST_RETRY_MS`) right after a
 * queue filled or a waiting reply was taken: a reading client's queue usually has room again by then.
 */
const RETRY_MS = 2;
const FIRST_RETRY_MS = 1;
/** Requests of one peer read but not yet handled; beyond either bound its requests are refused (`capacity`). */
const MAX_PEER_QUEUED_MESSAGES = MAX_CLIENT_QUEUED_REQUESTS;
const MAX_PEER_QUEUED_BYTES = MAX_CLIENT_QUEUED_BYTES;
/**
 * A refused request waits in line for its `capacity` reply as its id alone (its payload is not kept), read from its
 * payload when that is at most this size (a larger one is answered with a null id: reading it costs what refusing saves).
 */
const REFUSED_ID_READ_BYTES = 64 * 2 ** 10;
/**
 * What one peer's refused requests may hold while they wait for their replies (`refusalCost`: 16 bytes an id, plus two a
 * character of a string id). Beyond it, a client that sends without reading: its requests are dropped unanswered.
 */
const MAX_PEER_REFUSED_BYTES = 2 ** 20;
const CAPACITY_MESSAGE = `too many requests from this client waiting to be handled (limit ${MAX_PEER_QUEUED_MESSAGES} requests, ${MAX_PEER_QUEUED_BYTES} bytes); wait for replies before sending more`;
const DEFAULT_BATCH_BYTES_IN_FLIGHT = 256 * 2 ** 20;
/** Fraction of V8's heap limit above which bulk work is refused (`capacity`). */
const HEAP_GUARD = 0.85;
/** Memory is sampled at most this often (ms). */
const MEMORY_SAMPLE_MS = 10;
/**
 * Fraction of the total unread budget from which the reply Buffers handed to ZeroMQ are watched (`HeldReplyBuffers`):
 * below it their count bounds them (`UnreadReplies.unwatched`), so what connections that read and went quiet keep
 * counted from then is at most this fraction of the budget and one reply, below the budget and its headroom.
 */
const WATCH_FROM = 0.25;
/** `Server.heldBuffers` collects at most once every this many times the last collection's cost (CPU time). */
const COLLECT_EVERY = 20;

/**
 * V8's full collection: `globalThis.gc` under `node --expose-gc`, else exposed through V8's flag (read by contexts made
 * after it is set: the function is taken from a new one).
 */
function exposedGc(): () => void {
  const g = (globalThis as { gc?: unknown }).gc;
  if (typeof g === 'function') return g as () => void;
  setFlagsFromString('--expose_gc');
  return runInNewContext('gc') as () => void;
}

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

/** Schema check of a restored turn session (its chat, info and world status). */
function turnRestoredChecker(): (r: TurnStart) => string | null {
  const messages = schemaValidator('TurnMessagesResult');
  const info = schemaValidator('TurnInfo');
  const status = schemaValidator('Status');
  return (r) => {
    const m = messages({ messages: r.messages });
    if (m !== null) return m;
    const i = info(r.info);
    if (i !== null) return `/info${i}`;
    const s = status(r.status);
    return s === null ? null : `/status${s}`;
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

/** Server counters (`Server.stats()`). */
export interface ServerStats {
  /** Messages read from the socket. */
  received: number;
  /** Replies handed to ZeroMQ. */
  replied: number;
  /** Successful replies. */
  ok: number;
  /** Error replies by code (`errors.bad_json`, ...). */
  errors: Record<string, number>;
  /** Replies ZeroMQ refused (the peer is gone, or its queue is full because it does not read): dropped. */
  send_failures: number;
  /** Queued requests and batches in progress discarded because their peer stopped reading or left. */
  dropped_requests: number;
  /**
   * Most bytes of `step_batch` replies being assembled at once (bounded by `maxBatchBytesInFlight` + one batch cap +
   * one slice: `BATCH_SLICE_BYTES` and the entry that crossed it).
   */
  peak_batch_bytes: number;
  /** step_batch requests that ran in more than one slice. */
  sliced_batches: number;
  /** Longest uninterrupted piece of work (one request, or one slice of a batch), in ms. */
  max_unit_ms: number;
  /** Requests read but not yet handled, now. */
  queued: number;
}

/**
 * The frames of a reply: the routing envelope (Buffers), then the payload: the JSON text as a string (zeromq.js copies
 * it into the message; see `Handled.body`) or bytes, and a binary reply's array frames.
 */
type Frames = (Buffer | string)[];

/**
 * The large replies (`HELD_BODY_CHARS` and more) among the last `UNREAD_WINDOW` handed to ZeroMQ for each connection: an
 * upper bound of the reply bytes ZeroMQ still holds for it. The server cannot see whether a client read a reply ZeroMQ
 * took (no acknowledgement crosses the socket), only that ZeroMQ holds at most the last `UNREAD_WINDOW` in order; so a
 * reply leaves the count when `UNREAD_WINDOW` later ones were handed over, and a connection over its budget is answered
 * `capacity` (small replies, which move the window on) until its large replies leave the count. A client that reads
 * therefore gets at most `UNREAD_WINDOW` refusals in a row; one that does not makes the server hold at most the budget
 * and one more reply (the request admitted just below it), plus one in its outbox when ZeroMQ's queue for it is full
 * (under load ZeroMQ's I/O thread was once seen holding one more than the window counts: the one it encodes and the
 * next it took; test/integration/unread-replies.test.ts allows for it).
 * Small replies are not counted (at most `UNREAD_WINDOW` x 64 KiB, ~1 MiB, a connection; the connections served at once
 * are capped instead, `Server.connectionRefusal`), so a connection with none has no entry.
 */
export class UnreadReplies {
  private readonly byKey = new Map<string, { sent: number; at: number[]; bytes: number[]; watched: boolean[]; sum: number; unwatched: number }>();
  /** The sum of the counted connections' bytes. */
  private trackedSum = 0;
  /** The sum of their counted replies that no `HeldReplyBuffers` watches (`sent`'s `watched`). */
  private unwatchedSum = 0;

  /**
   * @param maxTracked connections counted at most: a connection that left with large replies in its window keeps its
   *   entry (nothing tells the server it left), so without a cap many short connections would grow the map without
   *   bound. Past it the connection counted longest ago is forgotten (the map keeps insertion order; a connection that
   *   sends again is moved to the end), with its bytes: they leave `total` too. Kept there, the bytes of connections
   *   that left (nothing tells the server) grew the count for good, and past the budget only the buffers the process
   *   holds, sessions' among them, decided (`unreadVerdict`). What a forgotten connection may still hold (its last 17
   *   replies) is then counted nowhere: the connections counted since may be ones that left, so a client that keeps a
   *   few connections open without reading while more than `maxTracked` others take large replies and leave can make
   *   the server hold that much beyond the total budget (for at most the connections served at once, the connection
   *   cap and the owners of live sessions; docs/protocol.md).
   */
  constructor(private readonly maxTracked = MAX_TRACKED_UNREAD) {}

  /** Bytes of `key`'s counted replies. */
  bytes(key: string): number {
    return this.byKey.get(key)?.sum ?? 0;
  }

  /** Connections with counted replies. */
  get size(): number {
    return this.byKey.size;
  }

  /** Bytes of the counted connections' replies together (their average is `tracked / size`). */
  get tracked(): number {
    return this.trackedSum;
  }

  /** The reply bytes ZeroMQ may hold for every counted connection (`tracked`; a connection forgotten past the cap left it). */
  get total(): number {
    return this.trackedSum;
  }

  /**
   * Bytes of the counted replies whose Buffers no `HeldReplyBuffers` watches: for those the count is the only bound
   * (`Server.heldBuffers`).
   */
  get unwatched(): number {
    return this.unwatchedSum;
  }

  /** ZeroMQ took a reply of `size` bytes for `key`; `watched`: a `HeldReplyBuffers` watches its Buffers. */
  sent(key: string, size: number, watched = false): void {
    let u = this.byKey.get(key);
    if (u === undefined) {
      if (size < HELD_BODY_CHARS) return;
      u = { sent: 0, at: [], bytes: [], watched: [], sum: 0, unwatched: 0 };
      if (this.byKey.size >= this.maxTracked) {
        const [oldest, entry] = this.byKey.entries().next().value as [string, { sum: number; unwatched: number }];
        this.byKey.delete(oldest);
        this.trackedSum -= entry.sum;
        this.unwatchedSum -= entry.unwatched;
      }
    } else {
      this.byKey.delete(key); // moved to the end: the most recently counted
    }
    this.byKey.set(key, u);
    u.sent++;
    while (u.at.length > 0 && (u.at[0] as number) <= u.sent - UNREAD_WINDOW) {
      u.at.shift();
      const left = u.bytes.shift() as number;
      u.sum -= left;
      this.trackedSum -= left;
      if (u.watched.shift() !== true) {
        u.unwatched -= left;
        this.unwatchedSum -= left;
      }
    }
    if (size >= HELD_BODY_CHARS) {
      u.at.push(u.sent);
      u.bytes.push(size);
      u.watched.push(watched);
      u.sum += size;
      this.trackedSum += size;
      if (!watched) {
        u.unwatched += size;
        this.unwatchedSum += size;
      }
    } else if (u.at.length === 0) {
      this.byKey.delete(key);
    }
  }

  /** The connection is gone (ZeroMQ refused a reply to it): what it held went with it. */
  forget(key: string): void {
    const u = this.byKey.get(key);
    if (u === undefined) return;
    this.trackedSum -= u.sum;
    this.unwatchedSum -= u.unwatched;
    this.byKey.delete(key);
  }
}

/** Bytes above which zeromq.js hands a Buffer frame to ZeroMQ by reference, without a copy (its zero-copy threshold). */
const ZERO_COPY_BYTES = 128;

/**
 * The reply Buffers handed to ZeroMQ that may still be alive, and their bytes, in all and per connection (`Server`'s
 * total unread budget). zeromq.js holds a Buffer frame of more than `ZERO_COPY_BYTES` by reference until ZeroMQ has
 * written it out (to the kernel's socket buffers), then lets it go; so a Buffer still alive after a full collection is
 * one ZeroMQ still holds, whether it waits in a connection's queue or in the I/O thread's hands. `bytes` is an upper
 * bound of the reply bytes ZeroMQ holds (a Buffer it let go stays counted until V8 collects it and its finalization
 * callback runs), exact right after a full collection and `prune`.
 * The server watches the Buffers of the replies it hands over from `WATCH_FROM` of the budget on (`Server.noteSent`).
 * It used to take `process.memoryUsage().arrayBuffers` instead, which counts every buffer of the process: 13 connections
 * that had read their ~1.7 MB replies and gone quiet (counted at 21.8 MB) beside 24 MiB of other buffers made it refuse
 * a client holding nothing under a 16 MiB budget for as long as they stayed quiet (test/integration/unread-replies.test.ts).
 */
export class HeldReplyBuffers {
  private readonly live = new Map<number, { ref: WeakRef<Buffer>; bytes: number; key: string }>();
  private readonly perKey = new Map<string, number>();
  private sum = 0;
  private nextId = 0;
  private readonly registry = new FinalizationRegistry<number>((id) => this.drop(id));

  /** ZeroMQ took `frames` for the connection `key`: count its Buffer frames held by reference. */
  add(key: string, frames: readonly (Buffer | string)[]): void {
    for (const f of frames) {
      if (typeof f === 'string' || f.length <= ZERO_COPY_BYTES) continue;
      const id = this.nextId++;
      this.live.set(id, { ref: new WeakRef(f), bytes: f.length, key });
      this.registry.register(f, id);
      this.sum += f.length;
      this.perKey.set(key, (this.perKey.get(key) ?? 0) + f.length);
    }
  }

  /** Bytes of the Buffers that may still be alive. */
  get bytes(): number {
    return this.sum;
  }

  /** Bytes of `key`'s Buffers that may still be alive. */
  bytesOf(key: string): number {
    return this.perKey.get(key) ?? 0;
  }

  /** Buffers counted. */
  get size(): number {
    return this.live.size;
  }

  /** Right after a full collection: forget the Buffers V8 collected (their finalization callbacks run later, if at all). */
  prune(): void {
    for (const [id, e] of this.live) if (e.ref.deref() === undefined) this.drop(id);
  }

  private drop(id: number): void {
    const e = this.live.get(id);
    if (e === undefined) return;
    this.live.delete(id);
    this.sum -= e.bytes;
    const left = (this.perKey.get(e.key) ?? 0) - e.bytes;
    if (left > 0) this.perKey.set(e.key, left);
    else this.perKey.delete(e.key);
  }
}

/** Why a connection's request is refused for unread replies (`unreadVerdict`): the bytes it holds, and every connection. */
export interface UnreadVerdict {
  /** `connection`: its own budget; `total`: the total budget; `share`: 3/4 of the total, and it holds the most. */
  kind: 'connection' | 'total' | 'share';
  mine: number;
  /** The bytes compared with the total budget (0 when not looked at). */
  held: number;
  /**
   * The bound that refused it: `connection`, its own budget; `share`, 3/4 of the total budget; `total`, the total budget
   * (it holds something counted) or the budget plus its headroom (it holds nothing counted; `UNREAD_TOTAL_HEADROOM_DIVISOR`).
   */
  bound: number;
}

/**
 * Whether the next request of the connection `key` is refused for the replies ZeroMQ may still hold (`Server`'s
 * `unreadRefusal`; null: it is handled). `outboxBytes` are replies waiting in the server's outboxes; `buffers` gives
 * the reply bytes ZeroMQ may still hold and those in outboxes (`HeldReplyBuffers`), looked at only from 3/4 of
 * `maxTotal`, and again `afterCollection` when the lesser of them and the count would refuse: Buffers a client has
 * taken, released by ZeroMQ but not yet collected, are not held replies.
 * A connection holding nothing, counted (`unread.bytes(key) === 0`) or alive (`heldBy(key) === 0`: its reply Buffers
 * ZeroMQ may still hold, exact after a collection), is refused for the total only from `maxTotal` plus its headroom
 * (`unreadTotalHeadroom(maxTotal)`: `maxTotal / UNREAD_TOTAL_HEADROOM_DIVISOR`); one holding something, from `maxTotal`
 * (and from 3/4 of it when it holds at least the average counted).
 */
export function unreadVerdict(
  unread: UnreadReplies,
  key: string,
  outboxBytes: number,
  maxConnection: number,
  maxTotal: number,
  buffers: (afterCollection: boolean) => number,
  heldBy: (key: string) => number = () => 0,
): UnreadVerdict | null {
  const mine = unread.bytes(key);
  if (mine >= maxConnection) return { kind: 'connection', mine, held: 0, bound: maxConnection };
  const shareFrom = (maxTotal / 4) * 3;
  const counted = unread.total + outboxBytes;
  if (counted < shareFrom) return null;
  // At least the average of the counted connections (`tracked / size`), without dividing.
  const most = mine > 0 && mine * unread.size >= unread.tracked;
  // A connection holding nothing (a lockstep client whose replies are small, one that read what it took) takes at most
  // one large reply from the headroom before it holds something, and its count leaves only once ZeroMQ took 17 later
  // replies for it: connections that never read and hold the budget do not lock it out. Nothing counted is not enough:
  // a reply ZeroMQ's I/O thread still writes (the client does not read, the socket buffers are full) has left the count
  // once 17 later ones (refusals) were taken, and its Buffer is still alive (`heldBy`, exact after a collection).
  const own = (): number => Math.max(mine, heldBy(key));
  const headroom = unreadTotalHeadroom(maxTotal);
  let holds = own();
  let held = Math.min(counted, buffers(false));
  if (held >= (holds > 0 ? maxTotal : maxTotal + headroom) || (held >= shareFrom && most)) {
    held = Math.min(counted, buffers(true));
    holds = own();
  }
  const refuseFrom = holds > 0 ? maxTotal : maxTotal + headroom;
  if (held >= refuseFrom) return { kind: 'total', mine: holds, held, bound: refuseFrom };
  if (held >= shareFrom && most) return { kind: 'share', mine, held, bound: shareFrom };
  return null;
}

/** Bytes in MiB, to two decimals at most (a budget's headroom is a quarter of it). */
function mibExact(n: number): string {
  return `${Number((n / 2 ** 20).toFixed(2))} MiB`;
}

/**
 * The message of the `capacity` reply to a request refused for unread replies (`unreadVerdict`'s `v`; `maxConnection`
 * and `maxTotal` the two budgets). A refusal for the total names the bound that refused it: the budget (the connection
 * holds something counted) or the budget plus its headroom (it holds nothing counted), in bytes and MiB.
 */
export function unreadRefusalMessage(v: UnreadVerdict, maxConnection: number, maxTotal: number): string {
  if (v.kind === 'connection') {
    return (
      `this connection's unread replies hold ${v.mine} bytes, its budget is ${maxConnection} ` +
      `(\`ycgym serve --max-unread-mib\`): the request was not handled; read the replies before sending more`
    );
  }
  const held = `the unread replies of every connection together hold ${v.held} bytes`;
  if (v.kind === 'share') {
    return (
      `${held}, their budget is ${maxTotal} (\`ycgym serve --max-unread-total-mib\`), and this connection's (${v.mine} bytes) ` +
      `are among the most: the request was not handled; read the replies before sending more`
    );
  }
  if (v.bound > maxTotal) {
    return (
      `${held}, their budget plus its headroom is ${v.bound} (${mibExact(v.bound)}: the budget ${maxTotal} of ` +
      `\`ycgym serve --max-unread-total-mib\` and a quarter of it, ${v.bound - maxTotal}, which serves only connections holding no ` +
      `large unread reply, as this one): the request was not handled; retry later`
    );
  }
  return (
    `${held}, their budget is ${maxTotal} (${mibExact(maxTotal)}; \`ycgym serve --max-unread-total-mib\`) and ` +
    `this connection holds ${v.mine} bytes of them: the request was not handled; retry later`
  );
}

/** Bytes of a reply's frames (a string frame counted in UTF-16 units: small ones only stay strings). */
function frameBytes(frames: Frames): number {
  let n = 0;
  for (const f of frames) n += f.length;
  return n;
}

/** A `step_batch` in progress and the envelope of its reply. */
interface Job {
  envelope: Buffer[];
  batch: BatchJob;
}

/** Requests of one peer (ROUTER identity) waiting their turn, and its batch in progress. */
interface Peer {
  /** Requests in order, and runs of refused ones (`Server.refusedRuns`), which hold no payload. */
  queue: Buffer[][];
  /** Bytes of the frames of the requests in `queue`. */
  queuedBytes: number;
  /** `refusalCost` of the refused requests in `queue`, and whether some were dropped beyond the bound (logged once). */
  refusedBytes: number;
  refusalsDropped: boolean;
  job: Job | null;
  /** A reply ZeroMQ could not take yet (the peer's queue is full), and since when it waits. */
  outbox: Frames | null;
  stalledSince: number;
}

function newPeer(): Peer {
  return { queue: [], queuedBytes: 0, refusedBytes: 0, refusalsDropped: false, job: null, outbox: null, stalledSince: 0 };
}

/** Requests of one envelope refused beyond their peer's quota, one after another: their ids, answered in turn from `next`. */
interface RefusedRun {
  ids: (RequestId | null)[];
  next: number;
}

/** What a refused request's id holds while it waits (`MAX_PEER_REFUSED_BYTES`). */
function refusalCost(id: RequestId | null): number {
  return 16 + (typeof id === 'string' ? 2 * id.length : 0);
}

/** The request id in a payload, when it is small enough to read (`REFUSED_ID_READ_BYTES`) and has a valid one. */
function payloadRequestId(payload: Buffer | undefined): RequestId | null {
  if (payload === undefined || payload.length > REFUSED_ID_READ_BYTES) return null;
  const d = decodePayload(payload, REFUSED_ID_READ_BYTES);
  return d.ok && typeof d.value === 'object' && d.value !== null && !Array.isArray(d.value) ? validRequestId((d.value as { id?: unknown }).id) : null;
}

function sameFrames(a: readonly Buffer[], b: readonly Buffer[]): boolean {
  return a.length === b.length && a.every((f, i) => f.equals(b[i] as Buffer));
}

/**
 * Characters above which a reply's JSON text is handed to ZeroMQ as a Buffer rather than a string. zeromq.js copies a
 * string into memory of its own, which no guard sees; it takes a Buffer without a copy and holds it until the client
 * has taken the reply, so that replies waiting for a client that does not read count in `process.memoryUsage()`
 * (`memoryGuard`). Small replies stay strings (a Buffer reply costs a lockstep client's server ~20-30 µs of CPU more; see `Handled`).
 */
const HELD_BODY_CHARS = 1 << 16;

/** The body frame of a reply as the server hands it over (see `HELD_BODY_CHARS`). */
function heldBody(h: Handled): string | Buffer {
  return typeof h.body === 'string' && h.body.length > HELD_BODY_CHARS ? h.frame : h.body;
}

/** Why bulk work should be refused now (memory over budget), or null. */
export type MemoryGuard = () => string | null;

function mib(n: number): string {
  return `${(n / 2 ** 20).toFixed(0)} MiB`;
}

/**
 * Admission control from `process.memoryUsage()`: the V8 heap against `HEAP_GUARD` of its limit, then the heap and
 * the buffers it holds together against the same bound, and the resident set against `maxMemoryBytes` when given.
 * Sampled at most every `MEMORY_SAMPLE_MS`. The buffers count because they live outside the heap: a `step_batch`
 * reply (up to 64 MiB) is handed to ZeroMQ without a copy and held until its client takes it, so a client that never
 * reads kept gigabytes queued with the heap nearly empty.
 */
export function memoryGuard(maxMemoryBytes: number | undefined, sample: () => NodeJS.MemoryUsage = () => process.memoryUsage()): MemoryGuard {
  const heapLimit = getHeapStatistics().heap_size_limit;
  let at = Number.NEGATIVE_INFINITY;
  let verdict: string | null = null;
  return () => {
    const now = performance.now();
    if (now - at < MEMORY_SAMPLE_MS) return verdict;
    at = now;
    const m = sample();
    if (m.heapUsed > heapLimit * HEAP_GUARD) {
      verdict = `server at capacity: the JavaScript heap holds ${mib(m.heapUsed)} of its ${mib(heapLimit)} limit; retry later`;
    } else if (m.heapUsed + m.arrayBuffers > heapLimit * HEAP_GUARD) {
      verdict =
        `server at capacity: the JavaScript heap (${mib(m.heapUsed)}) and its buffers (${mib(m.arrayBuffers)}: replies not yet taken by their clients, ` +
        `among others) hold ${mib(m.heapUsed + m.arrayBuffers)}, above ${HEAP_GUARD * 100}% of its ${mib(heapLimit)} limit; retry later`;
    } else if (maxMemoryBytes !== undefined && m.rss > maxMemoryBytes) {
      verdict = `server at capacity: ${mib(m.rss)} in use, above its memory budget of ${mib(maxMemoryBytes)} (--max-memory); retry later`;
    } else {
      verdict = null;
    }
    return verdict;
  };
}

/** Whether `key` is `bytes` decoded as latin1 (one character a byte, each its byte's value). */
export function latin1Equals(key: string, bytes: Uint8Array): boolean {
  const n = bytes.length;
  if (key.length !== n) return false;
  for (let i = 0; i < n; i++) if (key.charCodeAt(i) !== bytes[i]) return false;
  return true;
}

/**
 * A running protocol server.
 *
 * Scheduling: requests of one peer run in arrival order; peers with pending work take turns (round robin),
 * one request, or one slice of at most `batchSliceMs` of a `step_batch`, per turn. A client sending huge
 * batches therefore delays another client's step by about one slice, not by the whole batch. Replies are
 * sent without waiting (a ROUTER never blocks on send): a reply ZeroMQ cannot take yet (the peer's queue is at its
 * high-water mark) waits in the peer's outbox and is dropped with the peer's queued work after the stall timeout, and
 * a connection whose large replies ZeroMQ may still hold reach its budget (`UnreadReplies`), or every connection's
 * together the total budget while it holds some (or the budget and its headroom while it holds none: `unreadVerdict`),
 * has its further requests refused (`capacity`) until they leave.
 */
export class Server {
  /** The bound endpoint (with the OS-assigned port when bound to port 0). */
  readonly endpoint: string;
  /** The CURVE public key clients need, or null when CURVE is off. */
  readonly publicKey: string | null;
  readonly sessions: SessionManager;
  private readonly handler: ProtocolHandler;
  private readonly maxMessageBytes: number;
  private readonly sliceMs: number;
  private readonly batchBytesInFlight: number;
  /** Batches in progress, oldest first. */
  private readonly jobs = new Set<BatchJob>();
  private readonly log: Logger;
  private readonly reaper: NodeJS.Timeout | null;
  private readonly loopDone: Promise<void>;
  private closing = false;
  private readonly peers = new Map<string, Peer>();
  /** Queued envelopes of requests whose payload was above the limit, and that payload's size (`enqueue`). */
  private readonly oversized = new WeakMap<Buffer[], number>();
  /** The queue entries that are runs of refused requests (their envelope), and their ids. */
  private readonly refusedRuns = new WeakMap<Buffer[], RefusedRun>();
  /** Keys of peers with pending work, in turn order (each at most once); peers with a waiting reply are not here. */
  private ready: string[] = [];
  /** Keys of peers with a reply in their outbox. */
  private readonly blocked = new Set<string>();
  /** A receive started but not yet consumed (left pending when the loop stopped waiting to retry outboxes). */
  private pendingReceive: Promise<Buffer[]> | null = null;
  private lastRetry = 0;
  /** Wait before the next offer of waiting replies (ms): `FIRST_RETRY_MS` after one was taken or a queue filled. */
  private retryWaitMs = RETRY_MS;
  private stallMs = STALL_MS;
  /** Large replies ZeroMQ may still hold, by connection, and the budget of one (`maxUnreadReplyBytes`; Infinity: the pipe). */
  private readonly unread = new UnreadReplies();
  private maxUnread = DEFAULT_MAX_UNREAD_REPLY_BYTES;
  /** The budget of every connection's unread replies together (`maxUnreadTotalBytes`; Infinity: the pipe). */
  private maxUnreadTotal = DEFAULT_MAX_UNREAD_TOTAL_BYTES;
  /** The cap on connections served at once (`maxConnections`; Infinity: the pipe), and the connections open now. */
  private maxConnections = Number.POSITIVE_INFINITY;
  private openConnections = 0;
  /**
   * Connections served (`connectionRefusal`), least recently served first, at most `SERVED_KEPT_PER_CONNECTION` x the cap:
   * nothing tells the server which connection left, so the least recently served are forgotten (one is served again
   * while at most the cap are open). A connection moves to the end each time it is served (`noteServed`): in order first
   * served, a connection sending all along was the one forgotten once the others first served after it filled the set.
   */
  private readonly served = new Set<string>();
  /** The connection `noteServed` moved last: already at the end of `served` (its next request moves nothing). */
  private lastServed = '';
  /** Bytes of the replies waiting in outboxes (`Peer.outbox`): held by the server, counted in the total budget. */
  private outboxBytes = 0;
  /** The reply Buffers ZeroMQ may still hold (`heldBuffers`). */
  private readonly held = new HeldReplyBuffers();
  /** V8's full collection, for `heldBuffers` (null: the pipe, which has no total budget). */
  private collect: (() => void) | null = null;
  /** When the last collection ended, and its cost (ms: the CPU time the process spent in it, at most its wall time). */
  private collectedAt = Number.NEGATIVE_INFINITY;
  private collectMs = 0;
  private queuedMessages = 0;
  private queuedBytes = 0;
  private readonly counters: Omit<ServerStats, 'queued' | 'errors'> = { received: 0, replied: 0, ok: 0, send_failures: 0, dropped_requests: 0, peak_batch_bytes: 0, sliced_batches: 0, max_unit_ms: 0 };
  private readonly errorCounts: Record<string, number> = {};
  /** The CURVE allow-list's ZAP handler, if any. */
  private zap: ZapHandler | null = null;
  /** The peer of the last `serveNext` turn, and that peer again when it has more work (else null). */
  private turnKey = '';
  private turnRequeue: string | null = null;
  /** An idle peer's record, reused for the next new peer (all its fields at their `newPeer` values). */
  private sparePeer: Peer | null = null;
  /**
   * The peer last found idle after its turn (`forget`), left in `peers` (null: none): a lockstep client's peer comes and
   * goes per request, and its entry is not deleted and added again each time. Its record is at its `newPeer` values and
   * it is not in `ready`; a request of its own (`enqueue`) or a reply ZeroMQ could not take (`sendFailed`) takes it back.
   */
  private parked: string | null = null;
  /** The key of the last message's routing id (`routingKey`; its bytes as latin1, one character a byte). */
  private lastRoutingKey = '';
  /** `clientOf`'s last routing id (latin1) and its client. */
  private lastClientKey: string | null = null;
  private lastClient = '';

  private constructor(
    private readonly socket: Transport,
    endpoint: string,
    publicKey: string | null,
    sessions: SessionManager,
    handler: ProtocolHandler,
    maxMessageBytes: number,
    sliceMs: number,
    batchBytesInFlight: number,
    log: Logger,
  ) {
    this.endpoint = endpoint;
    this.publicKey = publicKey;
    this.sessions = sessions;
    this.handler = handler;
    this.maxMessageBytes = maxMessageBytes;
    this.sliceMs = sliceMs;
    this.batchBytesInFlight = batchBytesInFlight;
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
    const sliceMs = opts.batchSliceMs ?? DEFAULT_BATCH_SLICE_MS;
    if (!Number.isFinite(sliceMs) || sliceMs < 0) throw new RangeError('batchSliceMs must be >= 0');
    for (const k of ['maxBatchReplyBytes', 'maxBatchBytesInFlight', 'maxMemoryBytes', 'stallTimeoutMs', 'maxUnreadReplyBytes', 'maxUnreadTotalBytes'] as const) {
      const v = opts[k];
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new RangeError(`${k} must be a positive integer`);
    }
    const keys = opts.curve ? resolveCurveKeys(opts.curve) : null;
    if (opts.curveAllow !== undefined && keys === null) throw new SecurityError('a CURVE client allow-list needs the server CURVE keys');
    const allow = opts.curveAllow !== undefined ? parseAllowList(opts.curveAllow.join('\n'), 'curveAllow') : null;
    const pipe = opts.pipe ?? null;
    if (pipe !== null) {
      for (const fd of [pipe.input, pipe.output]) if (!Number.isSafeInteger(fd) || fd < 0) throw new RangeError(`pipe file descriptors must be non-negative integers, got ${fd}`);
      if (keys !== null) throw new SecurityError('CURVE does not apply to the pipe transport (only the parent process holds the pipes)');
    }
    const where = pipe === null ? assertBindAllowed(endpoint, keys !== null) : null;
    const log: Logger = opts.logger ?? (() => undefined);
    const presets = listPresets();
    const sessionOpts: ConstructorParameters<typeof SessionManager>[0] = {
      presets,
      checkRestored: restoredChecker(),
      checkTurnRestored: turnRestoredChecker(),
    };
    if (opts.maxSessions !== undefined) sessionOpts.maxSessions = opts.maxSessions;
    if (opts.maxSessionsPerClient !== undefined) sessionOpts.maxSessionsPerClient = opts.maxSessionsPerClient;
    if (opts.idleTimeoutMs !== undefined) sessionOpts.idleTimeoutMs = opts.idleTimeoutMs;
    let recording: SessionRecording | null = null;
    let recordMemory: RecordMemory | null = null;
    if (opts.recordDir !== undefined) {
      makeDirs(opts.recordDir);
      const compression = arrowCompression(opts.recordCompression ?? 'zstd', 'record compression');
      // The Arrow writer (and the zstd encoder) load only here: a server that does not record starts without them.
      const [{ TrajectoryRecorder, RecordMemory, emptyRecordingBytes }, { zstdEncoder }] = await Promise.all([import('./recorder.js'), import('../export/zstd.js')]);
      if (compression === 'zstd') await zstdEncoder();
      const limits = { maxBytes: opts.recordMaxBytes, clientBytes: opts.recordClientBytes, maxPerClient: opts.recordMaxPerClient };
      const quota = new RecordQuota(Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)), emptyRecordingBytes());
      // One bound on the rows every recording holds in memory (every open episode's together).
      recordMemory = new RecordMemory(opts.recordMemoryBytes);
      recording = new SessionRecording(opts.recordDir, TrajectoryRecorder, { compression, memory: recordMemory }, quota);
    }
    const hooks = composeHooks([opts.hooks, recording ?? undefined]);
    if (hooks !== undefined) sessionOpts.hooks = hooks;
    if (opts.envFactory !== undefined) sessionOpts.envFactory = opts.envFactory;
    if (opts.sessionIdTag !== undefined) sessionOpts.idTag = opts.sessionIdTag;
    else sessionOpts.idFactory = () => `s${randomBytes(SESSION_ID_RANDOM_BYTES).toString('base64url')}`;
    const sessions = new SessionManager(sessionOpts);
    const protocolOpts: ConstructorParameters<typeof ProtocolHandler>[2] = { validateReplies: opts.validateReplies ?? false };
    if (opts.maxBatchReplyBytes !== undefined) protocolOpts.maxBatchReplyBytes = opts.maxBatchReplyBytes;
    const rec = recording;
    protocolOpts.recordCheck = (name: unknown, client: string) => (rec !== null ? rec.problem(name, client) : recordProblem(null, name, new Map(), client));
    const guard = memoryGuard(opts.maxMemoryBytes);
    protocolOpts.admit = () => guard();
    const facts: ServerFacts = { version: packageVersion(), presets, maxMessageBytes };
    // The pipe's output buffer is bounded in bytes by the transport itself (`PipeRouter.sendNow`): no unread-reply budget;
    // its one client is the parent process: no connection cap.
    if (pipe === null) {
      facts.maxUnreadReplyBytes = opts.maxUnreadReplyBytes ?? DEFAULT_MAX_UNREAD_REPLY_BYTES;
      facts.maxUnreadTotalBytes = opts.maxUnreadTotalBytes ?? DEFAULT_MAX_UNREAD_TOTAL_BYTES;
      facts.maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    }
    if (recording?.quota) facts.recordLimits = { max_bytes: recording.quota.maxBytes, client_bytes: recording.quota.clientBytes, max_per_client: recording.quota.maxPerClient };
    const handler = new ProtocolHandler(sessions, facts, protocolOpts);

    let transport: Transport;
    let bound: string;
    let zap: ZapHandler | null = null;
    let pipeEnded: Promise<PipeEnd> | null = null;
    if (pipe !== null) {
      // Frames up to the message limit (in u32 lengths): a larger payload is skipped (and answered in its turn), other
      // framing beyond it ends the stream.
      const p = new PipeRouter(pipe.input, pipe.output, Math.min(maxMessageBytes, 2 ** 32 - 1), pipe.spinUs ?? 0);
      [transport, bound, pipeEnded] = [p, 'pipe', p.ended];
      log('info', 'listening', { endpoint: bound, pipe: [pipe.input, pipe.output] });
    } else {
      zap = allow !== null ? await ZapHandler.start(allow) : null;
      // ZeroMQ is loaded here, for a socket: a server on the pipe transport (every Python process's local server on
      // Linux and macOS) starts without it.
      const { Router } = await import('zeromq');
      const socket = new Router({
        ...(zap !== null ? { context: zap.context } : {}),
        linger: 0,
        // No handover: a connection claiming the routing id of a live one is ignored (with handover it would take
        // over that client's replies). A ycgym client reconnecting after a network failure keeps its random routing
        // id, and with it its sessions, once the server has dropped the dead connection.
        // A reply that cannot be queued (peer gone, or not reading: SEND_HWM replies waiting) fails at once.
        mandatory: true,
        sendHighWaterMark: SEND_HWM,
        sendTimeout: 0,
        // Frames above 4x the limit are dropped (and their peer disconnected) by ZeroMQ before reaching us.
        maxMessageSize: Math.min(maxMessageBytes * 4, Number.MAX_SAFE_INTEGER),
        ipv6: where?.ipv6 ?? false,
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
        await zap?.close();
        throw new Error(`cannot bind ${endpoint}: ${(e as Error).message}`);
      }
      [transport, bound] = [socket, socket.lastEndpoint ?? endpoint];
      log('info', 'listening', { endpoint: bound, curve: keys !== null, curve_allow: allow?.length ?? null });
    }
    const server = new Server(transport, bound, keys?.publicKey ?? null, sessions, handler, maxMessageBytes, sliceMs, opts.maxBatchBytesInFlight ?? DEFAULT_BATCH_BYTES_IN_FLIGHT, log);
    server.zap = zap;
    server.recordMemory = recordMemory;
    if (opts.stallTimeoutMs !== undefined) server.stallMs = opts.stallTimeoutMs;
    server.maxUnread = facts.maxUnreadReplyBytes ?? Number.POSITIVE_INFINITY;
    server.maxUnreadTotal = facts.maxUnreadTotalBytes ?? Number.POSITIVE_INFINITY;
    if (server.maxUnreadTotal !== Number.POSITIVE_INFINITY) server.collect = exposedGc();
    if (pipe === null) {
      server.maxConnections = facts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
      // Counted from the socket's events (a monitor socket: they may come a little after the connection's first request).
      const events = (transport as Router).events;
      events.on('accept', () => server.openConnections++);
      events.on('disconnect', () => {
        if (server.openConnections > 0) server.openConnections--;
      });
    }
    void pipeEnded?.then(({ reason, clean }) => {
      if (!server.closing) server.log(clean ? 'info' : 'error', `pipe transport ended: ${reason}`);
    });
    return server;
  }

  /**
   * Resolves when the server stops serving: after `close()`, or (pipe transport) when the client closed its end or
   * broke the framing. The serve command exits then.
   */
  get stopped(): Promise<void> {
    return this.loopDone;
  }

  /** Number of live sessions. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Counters since start (a copy). */
  stats(): ServerStats {
    return { ...this.counters, max_unit_ms: Math.round(this.counters.max_unit_ms * 1000) / 1000, errors: { ...this.errorCounts }, queued: this.queuedMessages };
  }

  private reap(): void {
    const gone = this.sessions.reapIdle();
    if (gone.length > 0) this.log('info', 'reaped idle sessions', { sessions: gone });
  }

  /** Queue a received message behind the earlier ones of the same peer. */
  private enqueue(frames: Buffer[]): void {
    this.counters.received++;
    const first = frames[0];
    if (first === undefined) return;
    const key = this.routingKey(first);
    let peer = this.peers.get(key);
    if (peer === undefined) {
      if (key === this.parked) this.parked = null;
      peer = this.sparePeer ?? newPeer();
      this.sparePeer = null;
      this.peers.set(key, peer);
      this.ready.push(key);
    } else if (key === this.parked) {
      // Idle since its last turn: back in line, as a new peer.
      this.parked = null;
      this.ready.push(key);
    }
    if (frames.length > 1) {
      // A well-framed request whose payload is above the limit (or the pipe's stand-in for one it skipped) waits in line
      // as its envelope alone, answered `message_too_large` in its turn: its bytes are not held, nor counted against
      // the client's quota (a payload above the quota was refused as `capacity`, which it is not).
      const last = frames[frames.length - 1] as Buffer;
      const size = skippedPayloadBytes(last) ?? last.length;
      if (size > this.maxMessageBytes) {
        const { envelope, payload } = splitFrames(frames);
        if (payload.length === 1 && envelope.length <= MAX_ENVELOPE_FRAMES) {
          frames = envelope;
          this.oversized.set(frames, size);
        }
      }
    }
    let bytes = 0;
    for (const f of frames) bytes += f.length;
    if (peer.queue.length >= MAX_PEER_QUEUED_MESSAGES || peer.queuedBytes + bytes > MAX_PEER_QUEUED_BYTES) {
      // Per-client quota: refuse (not queue) what one client sends beyond it, so the shared queue keeps room.
      this.counters.dropped_requests++;
      this.count('capacity');
      this.refuse(peer, frames);
      return;
    }
    peer.queue.push(frames);
    peer.queuedBytes += bytes;
    this.queuedMessages++;
    this.queuedBytes += bytes;
  }

  /**
   * Put a refused request in line for its `capacity` reply, so that the client gets one reply a request, in order, with
   * its id: as its id alone, added to the run of refusals at the end of the queue when that has the same envelope.
   */
  private refuse(peer: Peer, frames: Buffer[]): void {
    const { envelope, payload } = splitFrames(frames);
    const id = this.oversized.has(frames) ? null : payloadRequestId(payload[0]);
    const cost = refusalCost(id);
    if (peer.refusedBytes + cost > MAX_PEER_REFUSED_BYTES) {
      if (!peer.refusalsDropped) {
        peer.refusalsDropped = true;
        this.log('warn', 'client sends without reading its refusals: its requests beyond its quota are dropped unanswered');
      }
      return;
    }
    peer.refusedBytes += cost;
    const last = peer.queue[peer.queue.length - 1];
    const run = last === undefined ? undefined : this.refusedRuns.get(last);
    if (run !== undefined && sameFrames(last as Buffer[], envelope)) {
      run.ids.push(id);
      return;
    }
    const head = envelope.slice(0, MAX_ENVELOPE_FRAMES);
    this.refusedRuns.set(head, { ids: [id], next: 0 });
    peer.queue.push(head);
  }

  /** The reply to the next refused request of the run at the head of `peer`'s queue (counted when it was refused). */
  private answerRefused(peer: Peer, head: Buffer[], run: RefusedRun): Frames {
    const id = run.ids[run.next] ?? null;
    run.ids[run.next++] = null;
    peer.refusedBytes -= refusalCost(id);
    if (run.next === run.ids.length) peer.queue.shift();
    return [...head, JSON.stringify(errorReply('capacity', CAPACITY_MESSAGE, id))];
  }

  /**
   * Start handling one message of the peer `key` (its first frame as latin1): its reply frames, a batch job to run in
   * slices, or null (nothing to send).
   */
  private begin(key: string, frames: Buffer[]): Frames | Job | null {
    if (frames.length === 0) return null;
    const id = frames[0] as Buffer;
    const oversized = this.oversized.get(frames);
    if (oversized !== undefined) {
      // The envelope of a payload above the limit (`enqueue`).
      const reply = tooLargeReply(oversized, this.maxMessageBytes);
      return this.finish(frames, this.handler.finish(null, reply, JSON.stringify(reply)));
    }
    // The usual message, [routing id, payload] (a DEALER's): the envelope is the routing id alone (splitFrames).
    const plain = frames.length === 2 && (frames[1] as Buffer).length !== 0;
    const envelope = plain ? null : splitFrames(frames);
    if (envelope !== null && envelope.envelope.length > MAX_ENVELOPE_FRAMES) {
      const reply = errorReply('bad_frames', `too many routing frames (${envelope.envelope.length})`);
      this.count('bad_frames');
      return [id, JSON.stringify(reply)];
    }
    let h: Handled | BatchJob;
    if (envelope !== null && envelope.payload.length !== 1) {
      const reply = errorReply('bad_frames', `expected exactly one payload frame after the routing envelope, got ${envelope.payload.length}`);
      h = this.handler.finish(null, reply, JSON.stringify(reply));
    } else {
      const payload = (envelope === null ? frames[1] : envelope.payload[0]) as Buffer;
      h = this.handler.beginPayload(payload, this.maxMessageBytes, this.clientOf(key, id));
    }
    if (h instanceof BatchJob) return { envelope: envelope === null ? [id] : envelope.envelope, batch: h };
    return envelope === null ? this.finishPlain(id, h) : this.finish(envelope.envelope, h);
  }

  /**
   * The client a request comes from, for session ownership: the connection, i.e. the routing id ZeroMQ knows it by
   * (the first envelope frame) in hex. A client cannot take a live connection's id (the socket has no handover), and
   * the ycgym clients choose 128 random bits, kept across reconnections. Frames a broker (or the client) adds after it
   * do not split the identity: clients behind one broker share its connection and trust it. The last one is kept
   * (`key` is the same id as latin1): a lockstep client's requests do not each encode it again.
   */
  private clientOf(key: string, id: Buffer): string {
    if (key !== this.lastClientKey) {
      this.lastClientKey = key;
      this.lastClient = id.toString('hex');
    }
    return this.lastClient;
  }

  private finish(envelope: Buffer[], h: Handled): Frames {
    this.counted(h);
    const body = heldBody(h);
    return h.arrays === undefined ? [...envelope, body] : [...envelope, body, ...h.arrays];
  }

  /** `finish` of a reply whose envelope is the routing id `id` alone. */
  private finishPlain(id: Buffer, h: Handled): Frames {
    this.counted(h);
    const body = heldBody(h);
    return h.arrays === undefined ? [id, body] : [id, body, ...h.arrays];
  }

  private counted(h: Handled): void {
    const r = h.reply;
    if (r.ok) {
      this.counters.ok++;
      return;
    }
    this.count(r.error.code);
    if (r.error.code === 'internal') this.log('error', r.error.message, { id: r.id });
  }

  private count(code: string | null): void {
    if (code === null) this.counters.ok++;
    else this.errorCounts[code] = (this.errorCounts[code] ?? 0) + 1;
  }

  /**
   * One turn of the next peer in line: one request or one batch slice. Returns the frames to send, if any (to the peer
   * `this.turnKey`), and sets `this.turnRequeue` to that key when the peer has more work (the caller puts it back in
   * line after reading new arrivals, so a peer that just sent its first request goes before a peer that just had its
   * turn), else null.
   */
  private serveNext(): Frames | null {
    this.turnRequeue = null;
    const key = this.ready.shift();
    if (key === undefined) return null;
    this.turnKey = key;
    const peer = this.peers.get(key);
    if (peer === undefined || peer.outbox !== null) return null;
    const t0 = performance.now();
    let out: Frames | null = null;
    try {
      const head = peer.job === null ? peer.queue[0] : undefined;
      const run = head === undefined ? undefined : this.refusedRuns.get(head);
      if (run !== undefined) {
        out = this.answerRefused(peer, head as Buffer[], run);
      } else if (peer.job === null) {
        const frames = peer.queue.shift();
        if (frames !== undefined) {
          this.queuedMessages--;
          for (const f of frames) {
            this.queuedBytes -= f.length;
            peer.queuedBytes -= f.length;
          }
          let why = this.openConnections > this.maxConnections ? this.connectionRefusal(key) : null;
          if (why === null && (this.unread.size > 0 || this.outboxBytes > 0)) why = this.unreadRefusal(key);
          if (why === null && this.maxConnections !== Number.POSITIVE_INFINITY) this.noteServed(key);
          const started = why !== null ? this.refuseUnread(frames, why) : this.begin(key, frames);
          if (Array.isArray(started)) out = started;
          else if (started !== null) {
            peer.job = started;
            this.jobs.add(started.batch);
          }
        }
      }
      if (out === null && peer.job !== null && this.mayAdvance(peer.job.batch)) {
        const { envelope, batch } = peer.job;
        const first = batch.remaining === batch.total;
        const h = batch.run(t0 + this.sliceMs, BATCH_SLICE_BYTES);
        let inFlight = 0;
        for (const j of this.jobs) inFlight += j.replyBytes;
        if (inFlight > this.counters.peak_batch_bytes) this.counters.peak_batch_bytes = inFlight;
        if (h !== null) {
          peer.job = null;
          this.jobs.delete(batch);
          out = this.finish(envelope, h);
        } else if (first) {
          this.counters.sliced_batches++;
        }
      }
    } catch (e) {
      // Handling never throws by design; stay up if it does.
      this.log('error', `unexpected failure handling a message: ${(e as Error).message}`);
      if (peer.job !== null) this.jobs.delete(peer.job.batch);
      peer.job = null;
      out = [Buffer.from(key, 'latin1'), JSON.stringify(errorReply('internal', 'internal error'))];
    }
    const dt = performance.now() - t0;
    if (dt > this.counters.max_unit_ms) this.counters.max_unit_ms = dt;
    if (peer.job !== null || peer.queue.length > 0) this.turnRequeue = key;
    else this.forget(key, peer);
    return out;
  }

  /**
   * Why the next request of the connection `key` is refused for the connections open (more than `maxConnections`), or
   * null: a connection served before goes on, a new one waits until some leave. ZeroMQ may hold a connection's last
   * `UNREAD_WINDOW` replies whatever it reads, and those under `HELD_BODY_CHARS` are counted in no budget (`UnreadReplies`;
   * strings zeromq.js copies, which `heldBuffers` cannot see either), so without a cap one process opening many
   * connections that send without reading made the server hold ~1.1 MiB a connection. The connections open are counted
   * from the socket's accept and disconnect events; nothing tells which one left, so the connections served are kept in
   * order of last service (`served`), and the least recent forgotten past a few times the cap; a connection whose client owns live sessions
   * was served before too and goes on, remembered or not (else a client that paused while 4 x the cap others came and
   * went was refused with its sessions alive). They are at most `maxSessions` more.
   */
  private connectionRefusal(key: string): string | null {
    if (this.served.has(key)) return null;
    if (this.sessions.sessionsOf(Buffer.from(key, 'latin1').toString('hex')) > 0) return null;
    return (
      `${this.openConnections} connections are open, the limit is ${this.maxConnections} (\`ycgym serve --max-connections\`): ` +
      `the request of this connection, new to the server, was not handled; retry later`
    );
  }

  /**
   * The connection `key` is served (while at most `maxConnections` are open, or it was served before): it becomes the
   * most recently served (a Set keeps insertion order, so it is deleted and added again at the end).
   */
  private noteServed(key: string): void {
    if (key === this.lastServed) return; // a lockstep or batching client's next request: no delete and add per request
    this.lastServed = key;
    if (this.served.delete(key)) {
      this.served.add(key);
      return;
    }
    this.served.add(key);
    if (this.served.size > SERVED_KEPT_PER_CONNECTION * this.maxConnections) {
      const oldest = this.served.values().next().value as string;
      this.served.delete(oldest);
    }
  }

  /** The rows every recording holds in memory (`RecordMemory`; null: the server does not record). */
  private recordMemory: RecordMemory | null = null;

  /** Bytes of the step rows every recording holds in memory together (`RecordMemory.heldBytes`; 0 without `recordDir`). */
  get recordBufferedBytes(): number {
    return this.recordMemory?.heldBytes ?? 0;
  }

  /** ZeroMQ connections open now (accepted and not yet disconnected; 0 for the pipe). */
  get connections(): number {
    return this.openConnections;
  }

  /**
   * Why the next request of the connection `key` is refused for the replies ZeroMQ may still hold (`UnreadReplies`), or
   * null. Its own reach its budget (`maxUnreadReplyBytes`); or those of every connection together (and the replies in
   * outboxes) reach the total budget (`maxUnreadTotalBytes`) while this connection holds some, or 3/4 of it while it
   * holds at least the average of those counted: the connections holding the most are refused first, so that one
   * process's many connections that never read cannot hold the whole budget while others, which read, are refused. A
   * connection holding nothing counted (a lockstep client whose replies are small, one whose count left) is refused
   * only from the total budget plus its headroom (a quarter of it, `UNREAD_TOTAL_HEADROOM_DIVISOR`): connections that
   * never read and hold the budget (the replies admitted just below it can put them over it) do not lock it out. It
   * takes at most one large reply from the headroom before it holds something, and its count leaves only once ZeroMQ
   * took 17 later replies for it (`noteSent`; refusals count), which needs ZeroMQ's queue for it to drain: the client
   * read, or the kernel's socket buffers took the bytes (out of the process). A connection that never reads cannot
   * empty its count with refusals once those buffers are full: its replies wait in its outbox (`sendFailed`). Many new
   * connections that never read can still fill the headroom, one large reply each (docs/protocol.md).
   * Together, the count is an upper bound that a connection which left keeps inflating (nothing tells the server; its
   * count stays until the cap of `UnreadReplies` forgets it); so the reply Buffers ZeroMQ may still hold (`heldBuffers`)
   * bound it too: the lesser of the two is compared, and when the Buffers would refuse they are counted again after a
   * collection (a client that reads leaves
   * garbage, not held replies). Connections that never read thus cannot make the server hold more than the total
   * budget, its headroom and the replies admitted just below it, whatever the number of connections it counts (past
   * `UnreadReplies`' cap of 4096, connections counted longest ago are forgotten with their bytes).
   */
  private unreadRefusal(key: string): string | null {
    const v = unreadVerdict(this.unread, key, this.outboxBytes, this.maxUnread, this.maxUnreadTotal, this.heldBuffers, this.heldBy);
    return v === null ? null : unreadRefusalMessage(v, this.maxUnread, this.maxUnreadTotal);
  }

  /**
   * The reply bytes ZeroMQ may still hold, and those in outboxes (`unreadVerdict`): the reply Buffers handed to ZeroMQ
   * not yet known collected (`HeldReplyBuffers`), an upper bound that garbage inflates until V8 collects it, and the
   * counted replies handed over below `WATCH_FROM` of the budget, whose Buffers are not watched.
   * `afterCollection`: they would refuse a request, so V8 collects first and the Buffers collected are forgotten
   * (garbage is not held replies: the Buffers of replies ZeroMQ has written out stay counted until a collection), at
   * most once every `COLLECT_EVERY` times the last collection's cost (`collectMs`, CPU time; and `MEMORY_SAMPLE_MS`): at
   * most ~1/`COLLECT_EVERY` of the server's CPU time while connections hold the budget.
   */
  private readonly heldBuffers = (afterCollection: boolean): number => {
    const now = performance.now();
    if (afterCollection && this.collect !== null && now - this.collectedAt >= Math.max(MEMORY_SAMPLE_MS, COLLECT_EVERY * this.collectMs)) {
      const cpu = process.cpuUsage();
      this.collect();
      this.held.prune();
      this.collectedAt = performance.now();
      // Its cost: the CPU time the process spent in it, at most its wall time. The wall time alone counted the time the
      // process was descheduled (a loaded machine): one collection the process waited 1.5 s in put the next off 30 s,
      // refusing a reading client for the garbage of its replies meanwhile. The CPU time of every thread bounds the main
      // thread's, and the wall time does when V8's helper threads run beside it.
      const spent = process.cpuUsage(cpu);
      this.collectMs = Math.min(this.collectedAt - now, (spent.user + spent.system) / 1000);
    }
    return this.held.bytes + this.unread.unwatched + this.outboxBytes;
  };

  /** Bytes of the reply Buffers ZeroMQ may still hold for the connection `key` (`unreadVerdict`). */
  private readonly heldBy = (key: string): number => this.held.bytesOf(key);

  /** Put `frames` in `peer`'s outbox (null: empty it), counting their bytes in `outboxBytes`. */
  private setOutbox(peer: Peer, frames: Frames | null): void {
    if (this.maxUnreadTotal !== Number.POSITIVE_INFINITY) {
      if (peer.outbox !== null) this.outboxBytes -= frameBytes(peer.outbox);
      if (frames !== null) this.outboxBytes += frameBytes(frames);
    }
    peer.outbox = frames;
  }

  /**
   * The `capacity` reply to a request of a connection refused for its unread replies (`unreadRefusal`, `why`): not
   * handled, answered with its id.
   */
  private refuseUnread(frames: Buffer[], why: string): Frames {
    const oversized = this.oversized.has(frames);
    const { envelope, payload } = oversized ? { envelope: frames, payload: [] } : splitFrames(frames);
    const id = oversized || payload.length !== 1 ? null : payloadRequestId(payload[0]);
    this.count('capacity');
    return [...envelope.slice(0, MAX_ENVELOPE_FRAMES), JSON.stringify(errorReply('capacity', why, id))];
  }

  /** ZeroMQ took `frames` for the connection `key`: count them in its unread replies. */
  private noteSent(key: string, frames: Frames): void {
    if (this.maxUnread === Number.POSITIVE_INFINITY) return;
    // The body is the second frame of a DEALER's reply; a larger one or one with more frames is measured in full.
    const body = frames[1];
    if (this.unread.size === 0 && frames.length === 2 && body !== undefined && body.length < HELD_BODY_CHARS) return;
    // Its Buffers are watched only from `WATCH_FROM` of the total budget on: a weak reference keeps its target through
    // V8's young-generation collections, so a watched reply's memory waits for a full collection (a scratch loop handing
    // over 20,000 replies of 84 kB and dropping them: ~3x the peak of buffers, 1.3-2.9x the CPU). Below it the count
    // bounds them.
    const watched = this.unread.total + this.outboxBytes >= this.maxUnreadTotal * WATCH_FROM; // never without a total budget
    if (watched) this.held.add(key, frames);
    this.unread.sent(key, frameBytes(frames), watched);
  }

  /**
   * A routing id as a key of `peers` (its bytes as latin1): the last one's again when the bytes are the same (a lockstep or
   * batching client's next request), without decoding them. The bytes are compared with the last key's characters
   * (`latin1Equals`), so no copy of a routing id is kept (a Buffer from ZeroMQ or the pipe may be a view of a chunk that is
   * reused or large), and clients whose requests interleave cost a decode each, not a copy as well.
   */
  private routingKey(id: Buffer): string {
    const last = this.lastRoutingKey;
    if (latin1Equals(last, id)) return last;
    const key = id.toString('latin1');
    this.lastRoutingKey = key;
    return key;
  }

  /**
   * An idle peer after its turn: it stays in `peers` as the one `parked` (a lockstep client's peer comes and goes per
   * request); the one parked before, if idle still, is removed (its record is kept for the next new peer).
   */
  private forget(key: string, peer: Peer): void {
    peer.stalledSince = 0;
    peer.refusalsDropped = false;
    const before = this.parked;
    this.parked = key;
    if (before === null || before === key) return;
    const old = this.peers.get(before);
    if (old !== undefined && old.queue.length === 0 && old.job === null && old.outbox === null) {
      this.peers.delete(before);
      this.sparePeer = old;
    }
  }

  /**
   * Whether a batch may run its next slice: always the oldest batch in progress, the others while the replies
   * being assembled stay below `maxBatchBytesInFlight` (memory: the budget plus one batch's cap).
   */
  private mayAdvance(batch: BatchJob): boolean {
    let total = 0;
    let oldest = true;
    for (const j of this.jobs) {
      if (j === batch) {
        if (oldest) return true;
      } else {
        oldest = false;
      }
      total += j.replyBytes;
    }
    return total < this.batchBytesInFlight;
  }

  /** Forget a peer that stopped reading or left: its queued requests and its batch in progress are discarded. */
  private dropPeer(key: string): void {
    const peer = this.peers.get(key);
    if (peer === undefined) return;
    for (const frames of peer.queue) {
      if (this.refusedRuns.has(frames)) continue; // counted when refused
      this.queuedMessages--;
      for (const f of frames) this.queuedBytes -= f.length;
      this.counters.dropped_requests++;
    }
    peer.queue = [];
    peer.queuedBytes = 0;
    peer.refusedBytes = 0;
    if (peer.outbox !== null) {
      this.setOutbox(peer, null);
      this.blocked.delete(key);
    }
    if (peer.job !== null) {
      this.jobs.delete(peer.job.batch);
      peer.job = null;
      this.counters.dropped_requests++;
    }
  }

  private canRead(): boolean {
    return this.queuedMessages < MAX_QUEUED_MESSAGES && this.queuedBytes < MAX_QUEUED_BYTES && !this.socket.closed && this.socket.readable;
  }

  /** The next message if one is already there (or arrives within `waitMs`; Infinity: wait for it), else null. */
  private async receive(waitMs: number): Promise<Buffer[] | null> {
    if (this.pendingReceive === null) {
      if (waitMs === 0 && !this.canRead()) return null;
      this.pendingReceive = this.socket.receive();
      // Marked handled: a receive left pending when the server closes rejects with nobody waiting for it.
      this.pendingReceive.catch(() => undefined);
    }
    const p = this.pendingReceive;
    let timer: NodeJS.Timeout | undefined;
    try {
      const r =
        waitMs === Number.POSITIVE_INFINITY
          ? await p
          : await Promise.race([p, waitMs === 0 ? Promise.resolve(null) : new Promise<null>((res) => (timer = setTimeout(() => res(null), waitMs)))]);
      if (r !== null) this.pendingReceive = null;
      return r;
    } catch (e) {
      this.pendingReceive = null;
      throw e;
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /** Hand a reply to ZeroMQ: sent, kept in the peer's outbox (its queue is full), or dropped (the peer is gone). */
  private async deliver(key: string, frames: Frames): Promise<'sent' | 'waiting' | 'dropped'> {
    try {
      await this.socket.send(frames);
      this.counters.replied++;
      this.noteSent(key, frames);
      return 'sent';
    } catch (e) {
      return this.sendFailed(key, frames, e);
    }
  }

  /** `deliver`'s outcome when the transport refused `frames` with `e`. */
  private sendFailed(key: string, frames: Frames, e: unknown): 'waiting' | 'dropped' {
    if (this.closing || this.socket.closed) return 'dropped';
    const code = (e as { code?: string }).code;
    if (code === 'EAGAIN') {
      if (key === this.parked) this.parked = null;
      let peer = this.peers.get(key);
      if (peer === undefined) {
        peer = newPeer();
        this.peers.set(key, peer);
      }
      if (peer.outbox === null) {
        peer.stalledSince = performance.now();
        this.retryWaitMs = FIRST_RETRY_MS;
        this.lastRetry = peer.stalledSince;
      }
      this.setOutbox(peer, frames);
      this.blocked.add(key);
      this.ready = this.ready.filter((k) => k !== key);
      return 'waiting';
    }
    // EHOSTUNREACH: the peer is gone; its reply and its pending work go with it.
    this.counters.send_failures++;
    if (this.counters.send_failures <= 10 || this.counters.send_failures % 1000 === 0) {
      this.log('warn', `reply dropped: ${(e as Error).message}`, { send_failures: this.counters.send_failures });
    }
    this.dropPeer(key);
    this.unread.forget(key);
    if (this.peers.get(key)?.job === null) this.forgetIdle(key);
    return 'dropped';
  }

  private forgetIdle(key: string): void {
    const peer = this.peers.get(key);
    if (peer !== undefined && peer.queue.length === 0 && peer.job === null && peer.outbox === null) {
      this.peers.delete(key);
      if (key === this.parked) this.parked = null;
      this.ready = this.ready.filter((k) => k !== key);
    }
  }

  /** Offer waiting replies again; a peer that took its reply gets back in line, one stalled too long is dropped. */
  private async retryOutboxes(): Promise<void> {
    const now = performance.now();
    // Reading ZMQ_EVENTS makes ZeroMQ take in its I/O thread's news (room freed in peers' queues) now; a send takes it
    // in only if about a millisecond has passed since the last time.
    void this.socket.readable;
    let moved = false;
    for (const key of [...this.blocked]) {
      const peer = this.peers.get(key);
      if (peer === undefined || peer.outbox === null) {
        this.blocked.delete(key);
        continue;
      }
      const frames = peer.outbox;
      const since = peer.stalledSince;
      this.setOutbox(peer, null);
      this.blocked.delete(key);
      const r = await this.deliver(key, frames);
      if (r === 'waiting') {
        peer.stalledSince = since;
        if (now - since > this.stallMs) {
          this.counters.send_failures++;
          this.log('warn', 'client stopped reading: its reply and queued requests were dropped', { waited_ms: Math.round(now - peer.stalledSince) });
          this.dropPeer(key);
          this.peers.delete(key);
        }
      } else if (r === 'sent') {
        moved = true;
        if (peer.queue.length > 0 || peer.job !== null) {
          if (!this.ready.includes(key)) this.ready.push(key);
        } else {
          this.peers.delete(key);
        }
      }
    }
    this.retryWaitMs = moved ? FIRST_RETRY_MS : RETRY_MS;
  }

  private async loop(): Promise<void> {
    let lastYield = performance.now();
    let requeue: string | null = null;
    for (;;) {
      if (this.closing || this.socket.closed) return;
      try {
        if (this.blocked.size > 0 && performance.now() - this.lastRetry >= this.retryWaitMs) {
          this.lastRetry = performance.now();
          await this.retryOutboxes();
        }
        if (this.ready.length === 0 && requeue === null) {
          // Nothing to do: wait for a message (bounded while replies wait to be offered again).
          if (this.blocked.size === 0 && this.pendingReceive === null) {
            // `receive(Infinity)` without its own promise (a lockstep client's every request comes this way).
            this.enqueue(await this.socket.receive());
          } else {
            const m = await this.receive(this.blocked.size > 0 ? this.retryWaitMs : Number.POSITIVE_INFINITY);
            if (m !== null) this.enqueue(m);
          }
        } else {
          // Other work is pending: read only what is already there, so new peers join the rotation.
          for (let k = 0; k < READ_BURST && this.canRead(); k++) {
            const m = await this.receive(0);
            if (m === null) break;
            this.enqueue(m);
          }
        }
      } catch (e) {
        if (this.closing || this.socket.closed) return;
        this.log('error', `receive failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 10)); // never spin on a persistent failure
        continue;
      }
      if (requeue !== null) {
        if (!this.blocked.has(requeue)) this.ready.push(requeue);
        requeue = null;
      }
      const out = this.serveNext();
      requeue = this.turnRequeue;
      if (out !== null) {
        // `deliver` inline: without a promise of its own, and none at all when the transport answers at once.
        const key = this.turnKey;
        let r: 'sent' | 'waiting' | 'dropped' = 'sent';
        try {
          if (this.socket.sendNow !== undefined) this.socket.sendNow(out);
          else await this.socket.send(out);
          this.counters.replied++;
          this.noteSent(key, out);
        } catch (e) {
          r = this.sendFailed(key, out, e);
        }
        // A socket closed meanwhile ends the loop at the top of the next turn.
        if (r !== 'sent' && requeue === key) requeue = null;
      }
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        await yieldToEventLoop();
        lastYield = performance.now();
      }
    }
  }

  /** Stop serving: release the endpoint, close the socket and every session. Idempotent. */
  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      if (this.reaper !== null) clearInterval(this.reaper);
      // Unbind first, so that a server started right after close() on the same endpoint can bind it. Synchronously:
      // the async unbind runs zmq_unbind on a libuv worker thread, and a close() racing it (the old bounded wait
      // gave up after 1 s under load) used one ZeroMQ socket from two threads, the likely source of libzmq's
      // pipe.cpp:355 abort. unbindSync runs on this thread, so close() can never overlap it.
      try {
        this.socket.unbindSync(this.endpoint);
      } catch {
        // already unbound or never reachable: closing releases everything anyway
      }
      this.socket.close();
      await this.zap?.close();
      this.sessions.closeAll();
      this.peers.clear();
      this.parked = null;
      this.jobs.clear();
      this.ready = [];
      this.log('info', 'closed', { endpoint: this.endpoint });
    }
    await this.loopDone;
  }
}

/** Call several hook sets in order (undefined entries are skipped). */
function composeHooks(list: (SessionHooks | undefined)[]): SessionHooks | undefined {
  const hs = list.filter((h): h is SessionHooks => h !== undefined);
  if (hs.length <= 1) return hs[0];
  return {
    onReset: (e) => hs.forEach((h) => h.onReset?.(e)),
    onRestore: (e) => hs.forEach((h) => h.onRestore?.(e)),
    onStep: (e) => hs.forEach((h) => h.onStep?.(e)),
    noteFor: (session) => {
      let out: RecordingNote | undefined;
      for (const h of hs) {
        const n = h.noteFor?.(session);
        if (n !== undefined) out = { ...out, ...n };
      }
      return out;
    },
    onClose: (e) => hs.forEach((h) => h.onClose?.(e)),
  };
}

/** Bind a server and start serving (see `ServerOptions`). */
export function startServer(opts: ServerOptions = {}): Promise<Server> {
  return Server.start(opts);
}
