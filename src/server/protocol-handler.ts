/**
 * Protocol v1 (docs/protocol.md) without sockets: route a decoded, validated request to a `SessionManager`
 * and build the reply. Errors are data: every input, however malformed, yields exactly one reply object.
 */
import { performance } from 'node:perf_hooks';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { describePreset, type WireStepResultWithoutStatus } from '../env/env.js';
import { quoted } from '../env/schema-errors.js';
import { SPLITS } from '../config/splits.js';
import {
  checkReply,
  decodePayload,
  DEFAULT_MAX_BATCH_REPLY_BYTES,
  errorReply,
  formatErrors,
  getValidators,
  MAX_ACTION_CHARS,
  MAX_BATCH,
  OPS,
  PROTOCOL_VERSION,
  type ErrorBody,
  type HelloResult,
  type Op,
  type OpHandlers,
  type OpRequest,
  type OpResult,
  type OkReply,
  type RecordingNote,
  type RecordLimitsWire,
  type Reply,
  type RequestId,
  unreadTotalHeadroom,
  validRequestId,
} from '../protocol/protocol.js';
import { checkBinaryFrames, type BatchEncoding, type BinaryBatchResult } from '../protocol/binary.js';
import { BinaryBatch, binaryArrayBytes, LITTLE_ENDIAN, type FrameShape } from './binary-batch.js';
import { JsonWriter } from './json-writer.js';
import { LOCAL_OWNER, SessionError, type SessionManager } from './sessions.js';

// ---------------------------------------------------------------------------------------------------------
// Routing

/** Static facts about the server reported by `hello`. */
export interface ServerFacts {
  /** Package version (`ycgym/<version>`). */
  version: string;
  presets: readonly string[];
  maxMessageBytes: number;
  /** The budget of one connection's unread replies (absent: none, the pipe transport). */
  maxUnreadReplyBytes?: number;
  /** The budget of every connection's unread replies together (absent: none, the pipe transport). */
  maxUnreadTotalBytes?: number;
  /** The cap on connections served at once (absent: none, the pipe transport). */
  maxConnections?: number;
  /** The recording limits, announced in `hello` (absent: the server does not record). */
  recordLimits?: RecordLimitsWire;
}

/** Options of the protocol handler. */
export interface ProtocolOptions {
  /** Validate every reply against the schema (tests); a violation becomes an `internal` error reply. */
  validateReplies?: boolean;
  /** Cap on one `step_batch` reply in bytes (default `DEFAULT_MAX_BATCH_REPLY_BYTES`). */
  maxBatchReplyBytes?: number;
  /** Why `options.record.path` cannot be recorded (null: it can); absent: recording is unavailable. */
  recordCheck?: (path: unknown, client: string) => { code: 'invalid_request' | 'record_limit'; message: string } | null;
  /**
   * Admission control: called before work that creates state or output in bulk (`ADMITTED_OPS`); a string
   * refuses the request with a `capacity` error carrying it (e.g. the server is over its memory budget).
   */
  admit?: (op: Op) => string | null;
}

/**
 * Requests that create sessions or bulk output or state, and so pass admission control (`ProtocolOptions.admit`):
 * a `turn_step` adds to the chat its session keeps (megabytes of assistant text and tool output a turn); a snapshot or
 * a turn session's chat is a reply of up to tens of megabytes, held for its client until it is read.
 */
export const ADMITTED_OPS: ReadonlySet<Op> = new Set<Op>(['reset', 'restore', 'turn_reset', 'turn_restore', 'step_batch', 'turn_step', 'snapshot', 'turn_snapshot', 'turn_messages']);

/**
 * What handling one request produced: the reply, its encoded frame (UTF-8 JSON) and, when the request named a valid
 * op, that op; a binary `step_batch` reply also has `arrays`, the frames that follow `frame` (src/protocol/binary.ts).
 * `body` is the frame as the server sends it: the JSON text itself (a string) or, for a JSON `step_batch`, its
 * assembled bytes; `frame` is its UTF-8 bytes (made on first use: the server sends `body`). A `step` begun for the wire
 * (`beginPayload`, `begin`) has the result as it was written in `reply`: a `WireStep` (`Env.stepForWire`), its output
 * text an `OutputText` (JSON.stringify gives the plain reply); `handleValue` and `handlePayload` give plain results.
 */
export interface Handled {
  reply: Reply;
  readonly frame: Buffer;
  body: string | Buffer;
  op: Op | null;
  arrays?: Buffer[];
}

/**
 * A `Handled` whose `frame` is made from `body` on first use. The server hands `body` to ZeroMQ as it is: zeromq.js
 * copies a string into the message (UTF-8, the bytes `Buffer.from(body, 'utf8')` would hold: the text of
 * `JSON.stringify` is well-formed UTF-16), while a Buffer above 128 bytes goes zero-copy with a reference released by a
 * callback on the main thread. The callback's own work is small (370-byte replies pipelined to a client: a Buffer's send
 * and release cost the main thread ~3.1-3.7 µs, a string's send ~3.2-3.5 µs), but in lockstep a Buffer reply cost the
 * server ~20-30 µs more of its main thread's CPU (~30-50 µs of the process's, on a busy 2-core VM), likely the release
 * arriving as a wake-up of its own after the reply is written ("company status" steps: 186 -> 150 µs of server process
 * CPU a step when they became strings).
 */
function handled(reply: Reply, body: string | Buffer, op: Op | null, arrays?: Buffer[]): Handled {
  return new EncodedReply(reply, body, op, arrays);
}

/** `Handled` as a class (the getter on the prototype: an object literal with a getter is built on a slow path). */
class EncodedReply implements Handled {
  private buf: Buffer | null;
  readonly arrays?: Buffer[];
  constructor(
    readonly reply: Reply,
    readonly body: string | Buffer,
    readonly op: Op | null,
    arrays?: Buffer[],
  ) {
    this.buf = typeof body === 'string' ? null : body;
    if (arrays !== undefined) this.arrays = arrays;
  }

  get frame(): Buffer {
    return (this.buf ??= Buffer.from(this.body as string, 'utf8'));
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}


type Req = Record<string, unknown>;

/** `ProtocolHandler`'s reply writer: its first size, and the largest kept after a reply. */
const WRITER_START_BYTES = 1 << 14;
const WRITER_KEEP_BYTES = 1 << 20;

/** Routes decoded requests to a session table. Pure apart from the session table it drives. */
export class ProtocolHandler {
  private readonly hello: HelloResult;
  private readonly handlers: OpHandlers;
  /** The writer of `step` replies (one at a time: handling is synchronous). */
  private writer = new JsonWriter(WRITER_START_BYTES);

  constructor(
    private readonly sessions: SessionManager,
    facts: ServerFacts,
    private readonly opts: ProtocolOptions = {},
  ) {
    getValidators();
    this.handlers = this.opHandlers();
    this.hello = {
      protocol: PROTOCOL_VERSION,
      server: `ycgym/${facts.version}`,
      presets: [...facts.presets],
      limits: {
        max_message_bytes: facts.maxMessageBytes,
        max_sessions: sessions.maxSessions,
        max_sessions_per_client: sessions.maxSessionsPerClient,
        idle_timeout_ms: Math.round(sessions.idleTimeoutMs),
        max_batch: MAX_BATCH,
        max_unread_reply_bytes: facts.maxUnreadReplyBytes ?? null,
        max_unread_total_bytes: facts.maxUnreadTotalBytes ?? null,
        unread_total_headroom_bytes: facts.maxUnreadTotalBytes === undefined ? null : unreadTotalHeadroom(facts.maxUnreadTotalBytes),
        max_connections: facts.maxConnections ?? null,
        record: facts.recordLimits === undefined ? null : { ...facts.recordLimits },
      },
      spaces: {
        action: { type: 'text', min_length: 0, max_length: MAX_ACTION_CHARS },
        observation: { type: 'json', schema: '#/$defs/Observation' },
        presets: Object.fromEntries(facts.presets.map((p) => [p, describePreset(p)])),
      },
      splits: { test: { ...SPLITS.test }, validation: { ...SPLITS.validation }, train: { ...SPLITS.train } },
    };
  }

  /** Handle one raw payload frame (size, UTF-8, JSON, then `handleValue`). */
  handlePayload(payload: Uint8Array, maxBytes: number, client = LOCAL_OWNER): Handled {
    return runToEnd(this.beginPayload(payload, maxBytes, client, true));
  }

  /** Handle one decoded request value to the end, with plain results in `Handled.reply`. Never throws. */
  handleValue(value: unknown, client = LOCAL_OWNER): Handled {
    return runToEnd(this.begin(value, client, true));
  }

  /**
   * Start handling one raw payload frame: the reply, or a `BatchJob` for a valid `step_batch` (run it in
   * slices with `BatchJob.run` so that one large batch does not hold up other clients). Never throws.
   */
  beginPayload(payload: Uint8Array, maxBytes: number, client = LOCAL_OWNER, plain = false): Handled | BatchJob {
    const d = decodePayload(payload, maxBytes);
    if (!d.ok) return handled(d.reply, encode(d.reply), null);
    return this.begin(d.value, client, plain, d.checked === true);
  }

  /**
   * Start handling one decoded request value (see `beginPayload`) from `client` (the connection's identity:
   * sessions belong to the client that created them); `plain`: a `step`'s result in `Handled.reply` is plain (it
   * is written for the wire otherwise, see `Handled`); `checked`: `value` is a request its op's request schema accepts
   * (`decodePayload` says so of a request it read without parsing), not validated again. Never throws.
   */
  begin(value: unknown, client = LOCAL_OWNER, plain = false, checked = false): Handled | BatchJob {
    let id: RequestId | null = null;
    let op: Op | null = null;
    let reply: Reply;
    let body: string | null = null;
    try {
      if (!isObject(value)) {
        reply = errorReply('invalid_request', '/: must be object');
      } else {
        id = validRequestId(value['id']);
        const r = this.route(value, id, client, plain, checked);
        if (r instanceof BatchJob) return r;
        op = r.op;
        reply = r.reply;
        body = r.body ?? null;
      }
    } catch (e) {
      reply = { v: PROTOCOL_VERSION, id, ok: false, error: errorOf(e) };
      op = null;
    }
    return this.finish(op, reply, body, value, client);
  }

  /**
   * Validate (when enabled) and encode a reply; `body` is its encoding when already encoded, `arrays` the frames
   * that follow it in a binary reply.
   */
  finish(op: Op | null, reply: Reply, body: string | Buffer | null, value: unknown = null, client = LOCAL_OWNER, arrays?: Buffer[]): Handled {
    const id = reply.id;
    if (this.opts.validateReplies) {
      const decoded = body === null ? reply : (JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as Reply);
      let problem = checkReply(op, decoded);
      if (problem === null && arrays !== undefined) problem = decoded.ok ? checkBinaryFrames(decoded.result as BinaryBatchResult, arrays) : 'an error reply with array frames';
      if (problem !== null) {
        const r = errorReply('internal', `reply failed schema validation: ${problem}`, id);
        return handled(r, encode(r), op);
      }
    }
    if (body !== null) return handled(reply, body, op, arrays);
    try {
      return handled(reply, encode(reply), op);
    } catch (e) {
      // E.g. a restored snapshot nested too deeply to serialise: a bug-class failure tied to this session.
      const session = isObject(value) && typeof value['session'] === 'string' ? value['session'] : null;
      if (session !== null) this.sessions.discard(session, 'internal', client);
      const r = errorReply('internal', `cannot encode the reply: ${e instanceof Error ? e.message : String(e)}${session !== null ? ` (session ${session} was closed)` : ''}`, id);
      return handled(r, encode(r), op);
    }
  }

  private route(req: Req, id: RequestId | null, client: string, plain: boolean, checked: boolean): { reply: Reply; op: Op | null; body?: string | null } | BatchJob {
    if (req['v'] !== PROTOCOL_VERSION) {
      const got = req['v'] === undefined ? 'no version' : `version ${quoted(JSON.stringify(req['v']), (t) => t)}`;
      return { reply: errorReply('unsupported_version', `unsupported protocol ${got}; this server speaks version ${PROTOCOL_VERSION} (send "v": 1)`, id), op: null };
    }
    const opv = req['op'];
    if (typeof opv !== 'string') {
      return { reply: errorReply('invalid_request', opv === undefined ? "/: must have required property 'op'" : '/op: must be string', id), op: null };
    }
    if (!(OPS as readonly string[]).includes(opv)) {
      return { reply: errorReply('unknown_op', `unknown op ${quoted(opv, JSON.stringify)} (expected one of ${OPS.join(', ')})`, id), op: null };
    }
    const op = opv as Op;
    const validate = getValidators().requests[op];
    if (!checked && !validate(req)) return { reply: errorReply('invalid_request', formatErrors(validate.errors), id), op };
    if (req['id'] !== undefined && id === null) return { reply: errorReply('invalid_request', '/id: invalid', null), op };
    if (this.opts.admit !== undefined && ADMITTED_OPS.has(op)) {
      const refused = this.opts.admit(op);
      if (refused !== null) return { reply: errorReply('capacity', refused, id), op };
    }
    if (op === 'step_batch') {
      const steps = req['steps'] as BatchEntry[];
      const maxBytes = this.opts.maxBatchReplyBytes ?? DEFAULT_MAX_BATCH_REPLY_BYTES;
      if ((req['encoding'] as BatchEncoding | undefined) !== 'binary') return new BatchJob(this, this.sessions, id, steps, maxBytes, client);
      const planned = this.planBinary(steps, maxBytes, client);
      if (typeof planned === 'string') return { reply: errorReply('message_too_large', planned, id), op };
      return new BatchJob(this, this.sessions, id, steps, maxBytes, client, new BinaryBatch(steps.length, planned));
    }
    const handler = this.handlers[op] as (r: OpRequest<Op>, client: string) => OpResult<Op>;
    try {
      if (op === 'step' && !plain) {
        // Written as a step_batch entry is (its output text rendered escaped into the bytes), at once.
        const r = req as OpRequest<'step'>;
        const reply: OkReply = { v: PROTOCOL_VERSION, id, ok: true, result: this.sessions.stepForWire(r.session, r.action, client) };
        return { reply, op, body: this.writtenOk(reply) };
      }
      return { reply: { v: PROTOCOL_VERSION, id, ok: true, result: handler(req as OpRequest<Op>, client) }, op };
    } catch (e) {
      return { reply: { v: PROTOCOL_VERSION, id, ok: false, error: errorOf(e) }, op };
    }
  }

  /**
   * The JSON text of `reply` by `JsonWriter` (the bytes made a string: the server sends a string body, see `Handled`);
   * null when the writer throws: `finish` encodes it with JSON.stringify, which decides.
   */
  private writtenOk(reply: OkReply): string | null {
    const w = this.writer;
    w.used = 0;
    try {
      // The reply's keys as it has them (v, id, ok, result), its result by the writer.
      w.ascii(`{"v":${PROTOCOL_VERSION},"id":`);
      w.value(reply.id);
      w.ascii(',"ok":true,"result":');
      w.value(reply.result);
      w.byte(0x7d); // }
    } catch {
      return null;
    }
    const text = w.bytes.toString('utf8', 0, w.used);
    // A rare huge reply's buffer is not kept.
    if (w.bytes.length > WRITER_KEEP_BYTES) this.writer = new JsonWriter(WRITER_START_BYTES);
    return text;
  }

  /**
   * The frame shape of a binary `step_batch` (that of its first entry naming a live session of this client; entries
   * of another shape fail alone when their turn comes), or why the whole request is refused: its arrays alone would
   * exceed the reply cap.
   */
  private planBinary(steps: readonly BatchEntry[], maxBytes: number, client: string): FrameShape | string {
    if (!LITTLE_ENDIAN) throw new SessionError('invalid_request', '/encoding: this server runs on a big-endian machine and cannot send binary replies; use "json"');
    let shape: FrameShape = null;
    for (const st of steps) {
      try {
        shape = this.sessions.frameShape(st.session, client);
        break;
      } catch {
        // that entry fails alone; the next one decides
      }
    }
    const bytes = binaryArrayBytes(steps.length, shape);
    if (bytes >= maxBytes) {
      const what = shape === null ? '' : ` (Discrete frames of ${shape.obs} features and ${shape.actions} actions)`;
      return `the arrays of a binary reply to ${steps.length} entries${what} would take ${bytes} bytes; the reply limit is ${maxBytes}: send fewer entries per step_batch`;
    }
    return shape;
  }

  /** The handler of every op but `step_batch` (run in slices by `BatchJob`), typed from the op table. */
  private opHandlers(): OpHandlers {
    const s = this.sessions;
    return {
      hello: () => this.hello,
      reset: (req, client) => {
        const options = req.options;
        if (options?.record !== undefined) {
          const problem = this.opts.recordCheck
            ? this.opts.recordCheck(options.record.path, client)
            : { code: 'invalid_request' as const, message: '/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)' };
          if (problem !== null) throw new SessionError(problem.code, problem.message);
        }
        return s.reset(definedFields(req, ['seed', 'preset', 'session', 'options']), client);
      },
      step: (req, client) => s.step(req.session, req.action, client),
      step_batch: () => {
        throw new Error('step_batch is handled by BatchJob');
      },
      snapshot: (req, client) => ({ snapshot: s.snapshot(req.session, client) }),
      restore: (req, client) => s.restore(checkedSnapshot(getValidators().snapshot, req.snapshot, 'a ycgym snapshot'), req.session, client),
      close: (req, client) => {
        s.close(req.session, client);
        return { closed: true };
      },
      turn_reset: (req, client) => {
        const args = definedFields(req, ['seed', 'preset', 'session', 'options', 'tools']);
        return s.turnReset(req.detail === true ? { ...args, detail: true } : args, client);
      },
      turn_step: (req, client) => s.turnStep(req.session, req.action, req.detail === true, client),
      turn_messages: (req, client) => ({ messages: s.turnMessages(req.session, client) }),
      turn_snapshot: (req, client) => ({ snapshot: s.turnSnapshot(req.session, client) }),
      turn_restore: (req, client) => s.turnRestore(checkedSnapshot(getValidators().turnSnapshot, req.snapshot, 'a ycgym turn snapshot'), req.session, req.detail === true, client),
      turn_time_series: (req, client) => ({ time_series: s.turnTimeSeries(req.session, client) }),
    };
  }
}

/**
 * The one mapping of a failure to the error of a reply (or of a `step_batch` entry): a `SessionError` carries
 * its protocol code; anything else is a bug, `internal`.
 */
export function errorOf(e: unknown): ErrorBody {
  if (e instanceof SessionError) return { code: e.code, message: e.message };
  return { code: 'internal', message: `internal error: ${e instanceof Error ? e.message : String(e)}` };
}

/** `snapshot` when it passes `validate`, else `bad_snapshot` (`what`: the kind, for the message). */
function checkedSnapshot<T>(validate: ValidateFunction, snapshot: T, what: string): T {
  if (!validate(snapshot)) throw new SessionError('bad_snapshot', `not ${what}: ${formatErrors(validate.errors, '/snapshot')}`);
  return snapshot;
}

/** The named fields of `req` that are present, in the order named. */
function definedFields<T extends object, K extends keyof T>(req: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) if (req[k] !== undefined) out[k] = req[k];
  return out;
}

/** One entry of a `step_batch` request. */
interface BatchEntry {
  session: string;
  action: string | number;
}

/** One entry of a `step_batch` reply. */
type BatchItem = { ok: true; result: unknown } | { ok: false; error: ErrorBody };

/** The JSON text of a reply (`Handled.body`). */
function encode(reply: Reply): string {
  return JSON.stringify(reply);
}

function runToEnd(h: Handled | BatchJob): Handled {
  if (!(h instanceof BatchJob)) return h;
  h.keepResults = true;
  return h.run(Number.POSITIVE_INFINITY) as Handled;
}

/** The result of an entry a capped `step_batch` reply has no room for. */
function refusal(bytes: number, limit: number): BatchItem {
  return {
    ok: false,
    error: { code: 'message_too_large', message: `not executed: the reply to this step_batch reached ${bytes} bytes (limit ${limit}); send the remaining entries again` },
  };
}

/** Most bytes a refusal adds to a JSON reply (16-digit numbers), its separator included. */
const REFUSAL_BYTES = JSON.stringify(refusal(9_999_999_999_999_999, 9_999_999_999_999_999)).length + 1;
/** Most bytes a refusal adds to a binary reply's `errors` (its entry `{index, error}`), its separator included. */
const BINARY_REFUSAL_BYTES = JSON.stringify({ index: MAX_BATCH, error: (refusal(9_999_999_999_999_999, 9_999_999_999_999_999) as { error: ErrorBody }).error }).length + 1;

/** Bytes of a binary `step_batch` reply's header per entry beyond its text (a command name, separators, an action text). */
const BINARY_HEADER_BYTES_PER_ENTRY = 64;

/** Bytes of a JSON `step_batch` reply's buffer to start with, per entry ("company status": ~1.4 KB) and at most. */
const BATCH_BYTES_PER_ENTRY = 2048;
const BATCH_START_BYTES_MAX = 1 << 20;

/**
 * A `step_batch` in progress. `run(deadline)` executes entries in order until `performance.now()` reaches
 * the deadline (at least one entry per call) and returns the finished reply, or null when entries remain.
 * Each entry is encoded as it completes, so the reply's size is known: once it reaches the cap, the
 * remaining entries are not executed and fail alone with `message_too_large`.
 *
 * Only the encoded reply is held while the batch runs (the server sends `frame`); the decoded results are
 * kept for `reply` only when `keepResults` is set (in-process callers: `handleValue`, `handlePayload`).
 */
export class BatchJob {
  /** Keep the decoded results for `Handled.reply` (otherwise `reply.result.results` is empty). */
  keepResults = false;
  /** A binary reply's output texts, kept when `keepResults` (null until one entry has stepped). */
  private keptTexts: string[] | null = null;
  private next = 0;
  private readonly items: BatchItem[] = [];
  /**
   * A JSON reply's bytes: its head, then each entry with its separator as it completes (`JsonWriter`: one pass, the
   * output text rendered escaped straight from the command's value), the tail at the end. Encoding each entry as a
   * string (`JSON.stringify`, escaping the output text again), then counting and writing its UTF-8 cost the server
   * ~4 µs per entry of a 64-entry "company status" batch.
   */
  private readonly out: JsonWriter | null = null;
  /** Bytes of the entries encoded so far and their separators (`[` or `,`). */
  private bytes = 0;
  /** An entry was refused for the cap: every later one is too. */
  private capped = false;

  constructor(
    private readonly handler: ProtocolHandler,
    private readonly sessions: SessionManager,
    readonly id: RequestId | null,
    private readonly steps: readonly BatchEntry[],
    private readonly maxReplyBytes: number,
    private readonly client: string,
    /** The binary reply being filled (`"encoding": "binary"`); null: JSON. */
    private readonly binary: BinaryBatch | null = null,
  ) {
    if (binary !== null) {
      this.bytes = binary.bytes;
      return;
    }
    const w = new JsonWriter(Math.min(steps.length * BATCH_BYTES_PER_ENTRY, BATCH_START_BYTES_MAX) + 256);
    w.ascii(`{"v":${PROTOCOL_VERSION},"id":`);
    w.value(id);
    w.ascii(',"ok":true,"result":{"results":');
    this.out = w;
  }

  /** Number of entries. */
  get total(): number {
    return this.steps.length;
  }

  /** Entries not yet executed. */
  get remaining(): number {
    return this.steps.length - this.next;
  }

  /** Bytes of the reply encoded so far. */
  get replyBytes(): number {
    return this.bytes;
  }

  private one(st: BatchEntry): BatchItem {
    // An entry runs only while the reply leaves room under the cap for the refusals of every entry after it (each
    // remaining entry adds one to the reply whatever happens: a JSON result, a binary `errors` entry): the finished
    // reply stays within the cap plus the entry that crossed it. Once one entry is refused, so are all later ones.
    const reserve = (this.steps.length - this.next) * (this.binary === null ? REFUSAL_BYTES : BINARY_REFUSAL_BYTES);
    // A binary reply counts its strings by a bound (up to 6x their JSON) until that could reach the cap: then exactly.
    if (!this.capped && this.binary !== null && !this.binary.exact && this.bytes + reserve >= this.maxReplyBytes) this.bytes = this.binary.countExactly();
    if (this.capped || this.bytes + reserve >= this.maxReplyBytes) {
      this.capped = true;
      return refusal(this.bytes, this.maxReplyBytes);
    }
    try {
      if (this.binary !== null) {
        const shape = this.sessions.frameShape(st.session, this.client);
        const want = this.binary.shape;
        if ((shape === null) !== (want === null) || (shape !== null && want !== null && (shape.obs !== want.obs || shape.actions !== want.actions))) {
          const desc = (s: FrameShape): string => (s === null ? 'a text-mode session' : `a Discrete session of ${s.obs} features and ${s.actions} actions`);
          throw new SessionError('invalid_request', `not executed: a binary step_batch needs sessions of one frame shape; session ${st.session} is ${desc(shape)}, this batch's first is ${desc(want)}`);
        }
      }
      // A binary reply has no status block: it is not built. A JSON reply is written before the next entry runs: its
      // output text is rendered into it (`stepForWire`), unless the results are kept.
      if (this.binary !== null) return { ok: true, result: this.sessions.stepWithoutStatus(st.session, st.action, this.client, !this.keepResults) };
      return { ok: true, result: this.keepResults ? this.sessions.step(st.session, st.action, this.client) : this.sessions.stepForWire(st.session, st.action, this.client) };
    } catch (e) {
      return { ok: false, error: errorOf(e) };
    }
  }

  /**
   * Run until `deadline` (a `performance.now()` value) or until this call has encoded `maxSliceBytes` of reply (the
   * entry that crosses it is kept); the finished reply, or null when entries remain. At least one entry runs.
   */
  run(deadline: number, maxSliceBytes = Number.POSITIVE_INFINITY): Handled | null {
    if (this.binary !== null) return this.runBinary(this.binary, deadline, maxSliceBytes);
    const w = this.out as JsonWriter;
    const start = this.bytes;
    do {
      const st = this.steps[this.next] as BatchEntry;
      const at = w.used;
      w.byte(this.next === 0 ? 0x5b : 0x2c); // '[' then ','
      this.next++;
      const item = this.one(st);
      const written = this.write(w, item, st, at + 1);
      if (this.keepResults) this.items.push(written);
      // The entry's UTF-8 bytes and its separator.
      this.bytes += w.used - at;
    } while (this.next < this.steps.length && this.bytes - start < maxSliceBytes && performance.now() < deadline);
    if (this.next < this.steps.length) return null;
    w.ascii(']}}');
    const reply: OkReply = { v: PROTOCOL_VERSION, id: this.id, ok: true, result: { results: this.items } };
    return this.handler.finish('step_batch', reply, w.written());
  }

  /**
   * Write an entry at `at`; returns it as written. When the writer throws, `JSON.stringify` decides, as it did alone
   * before: its text, or (it throws too: a result that cannot be encoded) an `internal` error entry, and the session
   * is closed.
   */
  private write(w: JsonWriter, item: BatchItem, st: BatchEntry, at: number): BatchItem {
    try {
      if (item.ok) {
        // `{ ok: true, result }`'s keys in their order, its result by the writer.
        w.ascii('{"ok":true,"result":');
        w.value(item.result);
        w.byte(0x7d); // }
      } else {
        w.value(item);
      }
      return item;
    } catch {
      w.used = at;
    }
    let part: string;
    try {
      part = JSON.stringify(item);
    } catch (e) {
      this.sessions.discard(st.session, 'internal', this.client);
      item = { ok: false, error: { code: 'internal', message: `cannot encode the result: ${e instanceof Error ? e.message : String(e)} (session ${st.session} was closed)` } };
      part = JSON.stringify(item);
    }
    w.string(part);
    return item;
  }

  /** `run` of a binary batch: rows are written into the reply's arrays; the header is encoded at the end. */
  private runBinary(bin: BinaryBatch, deadline: number, maxSliceBytes: number): Handled | null {
    const start = bin.bytes;
    do {
      const i = this.next;
      const st = this.steps[i] as BatchEntry;
      this.next++;
      const item = this.one(st);
      if (item.ok) {
        const stopped = (item.result as RecordingNote).recording_stopped;
        if (stopped !== undefined) bin.recordingStopped(i, stopped);
        try {
          const r = item.result as WireStepResultWithoutStatus;
          bin.put(i, r);
          // Kept as the strings they were (not parsed back from the reply's bytes); an entry without one has "".
          if (this.keepResults) (this.keptTexts ??= new Array<string>(this.steps.length).fill(''))[i] = r.observation.text as string;
        } catch (e) {
          this.sessions.discard(st.session, 'internal', this.client);
          bin.fail(i, { code: 'internal', message: `cannot encode the result: ${e instanceof Error ? e.message : String(e)} (session ${st.session} was closed)` });
        }
      } else {
        bin.fail(i, item.error);
      }
      this.bytes = bin.bytes;
    } while (this.next < this.steps.length && bin.bytes - start < maxSliceBytes && performance.now() < deadline);
    if (this.next < this.steps.length) return null;
    const { result, frames } = bin.finish();
    // The header written in one pass, its text list copied as written; in-process callers get the texts as strings.
    const reply: OkReply = { v: PROTOCOL_VERSION, id: this.id, ok: true, result: this.keepResults ? { ...result, text: this.keptTexts ?? new Array<string>(bin.n).fill('') } : result };
    const w = new JsonWriter(result.text.bytes.length + BINARY_HEADER_BYTES_PER_ENTRY * bin.n + 1024);
    w.value(reply);
    return this.handler.finish('step_batch', reply, w.written(), null, this.client, frames);
  }
}
