/**
 * Protocol v1 (docs/protocol.md) without sockets: route a decoded, validated request to a `SessionManager`
 * and build the reply. Errors are data: every input, however malformed, yields exactly one reply object.
 */
import { performance } from 'node:perf_hooks';
import { describePreset, type EnvSnapshot, type ResetOptions } from '../env/env.js';
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
  type OkReply,
  type Reply,
  type RequestId,
  type ToolsChoice,
  type WireTurnAction,
  validRequestId,
} from '../protocol/protocol.js';
import type { TurnOptions, TurnSnapshot } from '../turns/turns.js';
import { SessionError, type SessionManager } from './sessions.js';

// ---------------------------------------------------------------------------------------------------------
// Routing

/** Static facts about the server reported by `hello`. */
export interface ServerFacts {
  /** Package version (`ycgym/<version>`). */
  version: string;
  presets: readonly string[];
  maxMessageBytes: number;
}

/** Options of the protocol handler. */
export interface ProtocolOptions {
  /** Validate every reply against the schema (tests); a violation becomes an `internal` error reply. */
  validateReplies?: boolean;
  /** Cap on one `step_batch` reply in bytes (default `DEFAULT_MAX_BATCH_REPLY_BYTES`). */
  maxBatchReplyBytes?: number;
  /** Why `options.record.path` cannot be recorded (null: it can); absent: recording is unavailable. */
  recordCheck?: (path: unknown) => string | null;
}

/** What handling one request produced: the reply, its encoded frame (UTF-8 JSON) and, when the request named a valid op, that op. */
export interface Handled {
  reply: Reply;
  frame: Buffer;
  op: Op | null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}


type Req = Record<string, unknown>;

/** Routes decoded requests to a session table. Pure apart from the session table it drives. */
export class ProtocolHandler {
  private readonly hello: HelloResult;

  constructor(
    private readonly sessions: SessionManager,
    facts: ServerFacts,
    private readonly opts: ProtocolOptions = {},
  ) {
    getValidators();
    this.hello = {
      protocol: PROTOCOL_VERSION,
      server: `ycgym/${facts.version}`,
      presets: [...facts.presets],
      limits: {
        max_message_bytes: facts.maxMessageBytes,
        max_sessions: sessions.maxSessions,
        idle_timeout_ms: Math.round(sessions.idleTimeoutMs),
        max_batch: MAX_BATCH,
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
  handlePayload(payload: Uint8Array, maxBytes: number): Handled {
    return runToEnd(this.beginPayload(payload, maxBytes));
  }

  /** Handle one decoded request value to the end. Never throws. */
  handleValue(value: unknown): Handled {
    return runToEnd(this.begin(value));
  }

  /**
   * Start handling one raw payload frame: the reply, or a `BatchJob` for a valid `step_batch` (run it in
   * slices with `BatchJob.run` so that one large batch does not hold up other clients). Never throws.
   */
  beginPayload(payload: Uint8Array, maxBytes: number): Handled | BatchJob {
    const d = decodePayload(payload, maxBytes);
    if (!d.ok) return { reply: d.reply, frame: encode(d.reply), op: null };
    return this.begin(d.value);
  }

  /** Start handling one decoded request value (see `beginPayload`). Never throws. */
  begin(value: unknown): Handled | BatchJob {
    let id: RequestId | null = null;
    let op: Op | null = null;
    let reply: Reply;
    try {
      if (!isObject(value)) {
        reply = errorReply('invalid_request', '/: must be object');
      } else {
        id = validRequestId(value['id']);
        const r = this.route(value, id);
        if (r instanceof BatchJob) return r;
        op = r.op;
        reply = r.reply;
      }
    } catch (e) {
      reply = errorReply('internal', `internal error: ${e instanceof Error ? e.message : String(e)}`, id);
      op = null;
    }
    return this.finish(op, reply, null, value);
  }

  /** Validate (when enabled) and encode a reply; `frame` is its encoding when already encoded. */
  finish(op: Op | null, reply: Reply, frame: Buffer | null, value: unknown = null): Handled {
    const id = reply.id;
    if (this.opts.validateReplies) {
      const problem = checkReply(op, frame === null ? reply : (JSON.parse(frame.toString('utf8')) as Reply));
      if (problem !== null) {
        const r = errorReply('internal', `reply failed schema validation: ${problem}`, id);
        return { reply: r, frame: encode(r), op };
      }
    }
    if (frame !== null) return { reply, frame, op };
    try {
      return { reply, frame: encode(reply), op };
    } catch (e) {
      // E.g. a restored snapshot nested too deeply to serialise: a bug-class failure tied to this session.
      const session = isObject(value) && typeof value['session'] === 'string' ? value['session'] : null;
      if (session !== null) this.sessions.discard(session);
      const r = errorReply('internal', `cannot encode the reply: ${e instanceof Error ? e.message : String(e)}${session !== null ? ` (session ${session} was closed)` : ''}`, id);
      return { reply: r, frame: encode(r), op };
    }
  }

  private route(req: Req, id: RequestId | null): { reply: Reply; op: Op | null } | BatchJob {
    if (req['v'] !== PROTOCOL_VERSION) {
      const got = req['v'] === undefined ? 'no version' : `version ${JSON.stringify(req['v'])}`;
      return { reply: errorReply('unsupported_version', `unsupported protocol ${got}; this server speaks version ${PROTOCOL_VERSION} (send "v": 1)`, id), op: null };
    }
    const opv = req['op'];
    if (typeof opv !== 'string') {
      return { reply: errorReply('invalid_request', opv === undefined ? "/: must have required property 'op'" : '/op: must be string', id), op: null };
    }
    if (!(OPS as readonly string[]).includes(opv)) {
      return { reply: errorReply('unknown_op', `unknown op ${JSON.stringify(opv)} (expected one of ${OPS.join(', ')})`, id), op: null };
    }
    const op = opv as Op;
    const validate = getValidators().requests[op];
    if (!validate(req)) return { reply: errorReply('invalid_request', formatErrors(validate.errors), id), op };
    if (req['id'] !== undefined && id === null) return { reply: errorReply('invalid_request', '/id: invalid', null), op };
    if (op === 'step_batch') {
      return new BatchJob(this, this.sessions, id, req['steps'] as BatchEntry[], this.opts.maxBatchReplyBytes ?? DEFAULT_MAX_BATCH_REPLY_BYTES);
    }
    try {
      return { reply: { v: PROTOCOL_VERSION, id, ok: true, result: this.execute(op, req) }, op };
    } catch (e) {
      if (e instanceof SessionError) return { reply: errorReply(e.code, e.message, id), op };
      throw e;
    }
  }

  private execute(op: Op, req: Req): unknown {
    const s = this.sessions;
    switch (op) {
      case 'hello':
        return this.hello;
      case 'reset': {
        const options = req['options'] as ResetOptions & { record?: unknown } | undefined;
        if (options?.record !== undefined) {
          const rec = options.record as { path?: unknown };
          const problem = this.opts.recordCheck ? this.opts.recordCheck(rec.path) : '/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)';
          if (problem !== null) throw new SessionError('invalid_request', problem);
        }
        const args: { seed: number; preset?: string; session?: string; options?: ResetOptions } = { seed: req['seed'] as number };
        if (req['preset'] !== undefined) args.preset = req['preset'] as string;
        if (req['session'] !== undefined) args.session = req['session'] as string;
        if (options !== undefined) args.options = options;
        return s.reset(args);
      }
      case 'step':
        return s.step(req['session'] as string, req['action'] as string);
      case 'step_batch':
        throw new Error('step_batch is handled by BatchJob');
      case 'snapshot':
        return { snapshot: s.snapshot(req['session'] as string) };
      case 'restore': {
        const snap = req['snapshot'];
        const validate = getValidators().snapshot;
        if (!validate(snap)) throw new SessionError('bad_snapshot', `not a ycgym snapshot: ${formatErrors(validate.errors, '/snapshot')}`);
        return s.restore(snap as EnvSnapshot, req['session'] as string | undefined);
      }
      case 'close':
        s.close(req['session'] as string);
        return { closed: true };
      case 'turn_reset': {
        const args: Parameters<SessionManager['turnReset']>[0] = { seed: req['seed'] as number };
        if (req['preset'] !== undefined) args.preset = req['preset'] as string;
        if (req['session'] !== undefined) args.session = req['session'] as string;
        if (req['options'] !== undefined) args.options = req['options'] as TurnOptions;
        if (req['tools'] !== undefined) args.tools = req['tools'] as ToolsChoice;
        if (req['detail'] === true) args.detail = true;
        return s.turnReset(args);
      }
      case 'turn_step':
        return s.turnStep(req['session'] as string, req['action'] as WireTurnAction, req['detail'] === true);
      case 'turn_messages':
        return { messages: s.turnMessages(req['session'] as string) };
      case 'turn_snapshot':
        return { snapshot: s.turnSnapshot(req['session'] as string) };
      case 'turn_restore': {
        const snap = req['snapshot'];
        const validate = getValidators().turnSnapshot;
        if (!validate(snap)) throw new SessionError('bad_snapshot', `not a ycgym turn snapshot: ${formatErrors(validate.errors, '/snapshot')}`);
        return s.turnRestore(snap as TurnSnapshot, req['session'] as string | undefined, req['detail'] === true);
      }
      case 'turn_time_series':
        return { time_series: s.turnTimeSeries(req['session'] as string) };
    }
  }
}

/** One entry of a `step_batch` request. */
interface BatchEntry {
  session: string;
  action: string;
}

/** One entry of a `step_batch` reply. */
type BatchItem = { ok: true; result: unknown } | { ok: false; error: ErrorBody };

function encode(reply: Reply): Buffer {
  return Buffer.from(JSON.stringify(reply), 'utf8');
}

function runToEnd(h: Handled | BatchJob): Handled {
  return h instanceof BatchJob ? (h.run(Number.POSITIVE_INFINITY) as Handled) : h;
}

/**
 * A `step_batch` in progress. `run(deadline)` executes entries in order until `performance.now()` reaches
 * the deadline (at least one entry per call) and returns the finished reply, or null when entries remain.
 * Each entry is encoded as it completes, so the reply's size is known: once it reaches the cap, the
 * remaining entries are not executed and fail alone with `message_too_large`.
 */
export class BatchJob {
  private next = 0;
  private readonly items: BatchItem[] = [];
  /** Encoded entries, each preceded by its separator (`[` or `,`). */
  private readonly parts: Buffer[] = [];
  private bytes = 0;

  constructor(
    private readonly handler: ProtocolHandler,
    private readonly sessions: SessionManager,
    readonly id: RequestId | null,
    private readonly steps: readonly BatchEntry[],
    private readonly maxReplyBytes: number,
  ) {}

  /** Number of entries. */
  get total(): number {
    return this.steps.length;
  }

  /** Entries not yet executed. */
  get remaining(): number {
    return this.steps.length - this.next;
  }

  private one(st: BatchEntry): BatchItem {
    if (this.bytes >= this.maxReplyBytes) {
      return {
        ok: false,
        error: { code: 'message_too_large', message: `not executed: the reply to this step_batch reached ${this.bytes} bytes (limit ${this.maxReplyBytes}); send the remaining entries again` },
      };
    }
    try {
      return { ok: true, result: this.sessions.step(st.session, st.action) };
    } catch (e) {
      if (e instanceof SessionError) return { ok: false, error: { code: e.code, message: e.message } };
      return { ok: false, error: { code: 'internal', message: `internal error: ${e instanceof Error ? e.message : String(e)}` } };
    }
  }

  /** Run until `deadline` (a `performance.now()` value); the finished reply, or null when entries remain. */
  run(deadline: number): Handled | null {
    do {
      const st = this.steps[this.next] as BatchEntry;
      this.next++;
      let item = this.one(st);
      let part: string;
      try {
        part = JSON.stringify(item);
      } catch (e) {
        this.sessions.discard(st.session);
        item = { ok: false, error: { code: 'internal', message: `cannot encode the result: ${e instanceof Error ? e.message : String(e)} (session ${st.session} was closed)` } };
        part = JSON.stringify(item);
      }
      this.items.push(item);
      const buf = Buffer.from((this.parts.length === 0 ? '[' : ',') + part, 'utf8');
      this.parts.push(buf);
      this.bytes += buf.length;
    } while (this.next < this.steps.length && performance.now() < deadline);
    if (this.next < this.steps.length) return null;
    const reply: OkReply = { v: PROTOCOL_VERSION, id: this.id, ok: true, result: { results: this.items } };
    // The same bytes as encoding the whole reply, without encoding every result a second time (and without
    // building one huge string: the entries were encoded as they ran, within their slices).
    const head = Buffer.from(`{"v":${PROTOCOL_VERSION},"id":${JSON.stringify(this.id)},"ok":true,"result":{"results":`, 'utf8');
    const frame = Buffer.concat([head, ...this.parts, Buffer.from(']}}')]);
    this.parts.length = 0;
    return this.handler.finish('step_batch', reply, frame);
  }
}
