/**
 * TypeScript client of the ycgym protocol (docs/protocol.md): one DEALER socket, numeric request ids,
 * any number of requests in flight (replies are matched by id), per-request timeouts, optional CURVE.
 */
import { randomBytes } from 'node:crypto';
import { Dealer } from 'zeromq';
import { generateCurveKeyPair } from '../protocol/curve.js';
import { CLIENT_DEFAULT_MAX_MESSAGE_BYTES, CLIENT_DEFAULT_TIMEOUT_MS, CLIENT_SEND_WINDOW, CLIENT_SEND_WINDOW_BYTES, GAVE_UP_KEPT } from '../protocol/limits.js';
import { decodeBinaryArrays, type BinaryBatchResult, type DecodedBinaryBatch } from '../protocol/binary.js';
import { notAnObject } from '../env/schema-errors.js';
import type {
  BatchItem,
  BatchStep,
  ChatMessage,
  EnvSnapshot,
  ErrorCode,
  HelloResult,
  Op,
  OpParams,
  OpResult,
  RequestId,
  SessionResetResult,
  StepResult,
  TurnResetReply,
  TurnRestoreReply,
  TurnSnapshot,
  TurnStepReply,
  WireTurnAction,
} from '../protocol/ops.js';

/** Error codes a client call can fail with: the server's, plus `timeout`, `closed` and `bad_reply` (client side). */
export type ClientErrorCode = ErrorCode | 'timeout' | 'closed' | 'bad_reply';

/** An error reply from the server (or a client-side failure: `timeout`, `closed`, `bad_reply`). */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly code: ClientErrorCode,
    message: string,
    /** The id of the failed request, when known. */
    readonly requestId: RequestId | null = null,
  ) {
    super(`${code}: ${message}`);
  }
}

/** The longest timeout `setTimeout` can wait (2^31 - 1 ms, about 24.8 days): a longer one would fire at once. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** `ms` as a timeout in milliseconds (0: wait forever), or a RangeError. */
function checkTimeoutMs(ms: number): number {
  if (typeof ms === 'number' && ms >= 0 && ms <= MAX_TIMEOUT_MS) return ms;
  throw new RangeError(`timeoutMs must be a number of milliseconds from 0 (wait forever) to ${MAX_TIMEOUT_MS}, got ${String(ms)}`);
}

/** Options of a `Client`. */
export interface ClientOptions {
  /** Server endpoint, e.g. `tcp://127.0.0.1:5555` or `ipc:///tmp/ycgym.sock`. */
  endpoint: string;
  /** Per-request timeout in milliseconds (default 30000; 0 waits forever; at most 2^31 - 1, what `setTimeout` can wait). */
  timeoutMs?: number;
  /** The server's CURVE public key (Z85): turns CURVE on. */
  curveServerKey?: string;
  /** This client's CURVE key pair (generated when the server key is given and these are not). */
  curvePublicKey?: string;
  curveSecretKey?: string;
  /** Refuse locally to send a request larger than this many bytes (default 1 MiB, the server's default limit). */
  maxMessageBytes?: number;
}

/** Arguments of `Client.reset` (the `reset` request's fields; `preset` defaults to `"default"`, `session` reuses a session). */
export type ClientResetArgs = OpParams<'reset'>;

/** Arguments of `Client.turnReset` (the `turn_reset` request's fields; `tools` defaults to `run_command`, `detail` adds the status block). */
export type ClientTurnResetArgs = OpParams<'turn_reset'>;

export type { BatchItem, BatchStep, SessionResetResult, ToolsChoice, TurnResetReply, TurnRestoreReply, TurnStepReply, WireTurnAction } from '../protocol/ops.js';

interface Pending {
  op: string;
  resolve: (v: unknown) => void;
  reject: (e: ProtocolError) => void;
  timer: NodeJS.Timeout | null;
}

/** The named fields of `args` that are not undefined, in the order named (the order they are encoded in). */
function definedFields<T extends object, K extends keyof T>(args: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) if (args[k] !== undefined) out[k] = args[k];
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A connection to a ycgym server. Call `close()` when done (an open socket keeps Node running). */
/** A TypeError saying what a call takes unless `args` is an object (`notAnObject`), else null. */
export function argsProblem(args: unknown, takes: string): TypeError | null {
  const problem = notAnObject(args, takes);
  return problem === null ? null : new TypeError(problem);
}

/** The request entries of a batch: each step's session and action (a TypeError naming what is not a step). */
function batchEntries(method: string, steps: readonly BatchStep[]): { session: string; action: string | number }[] {
  const takes = `${method} takes an array of { session, action }`;
  const given: unknown = steps;
  if (!Array.isArray(given)) throw new TypeError(`${takes}, got ${given === null ? 'null' : typeof given}`);
  return steps.map((s, i) => {
    if (s === null || typeof s !== 'object') throw new TypeError(`${takes}; entry ${i} is ${String(s)}`);
    return { session: s.session, action: s.action };
  });
}

/** Add `x` to the binary min-heap `heap`. */
function heapPush(heap: number[], x: number): void {
  let i = heap.length;
  heap.push(x);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = heap[parent] as number;
    if (p <= x) break;
    heap[i] = p;
    i = parent;
  }
  heap[i] = x;
}

/** Remove and return the lowest number of the non-empty binary min-heap `heap`. */
function heapPop(heap: number[]): number {
  const top = heap[0] as number;
  const last = heap.pop() as number;
  const n = heap.length;
  if (n === 0) return top;
  let i = 0;
  for (;;) {
    let c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && (heap[c + 1] as number) < (heap[c] as number)) c++;
    const child = heap[c] as number;
    if (child >= last) break;
    heap[i] = child;
    i = c;
  }
  heap[i] = last;
  return top;
}

export class Client {
  readonly endpoint: string;
  private readonly socket: Dealer;
  private readonly timeoutMs: number;
  private readonly maxMessageBytes: number;
  private readonly pending = new Map<number, Pending>();
  private sendChain: Promise<void> = Promise.resolve();
  /** Requests sent and not yet answered (nor given up on), with their bytes: at most `CLIENT_SEND_WINDOW` (`request`). */
  private readonly unanswered = new Map<number, number>();
  private unansweredBytes = 0;
  /**
   * Requests given up on after they were sent (timed out, or failed by an ambiguous reply): their replies may still
   * come, so a reply that names no request may be one of theirs (`unnamed`). The oldest are forgotten past
   * `GAVE_UP_KEPT`; each leaves when its own reply comes, or the reply to a request sent after it (`answered`).
   */
  private readonly gaveUp = new Set<number>();
  /**
   * The ids of `gaveUp` as a binary min-heap (an id's mark is the id itself: this client sends in the order of ids), so
   * a reply forgets those below its id by popping the lowest, not by walking every one kept (up to `GAVE_UP_KEPT`) on
   * each reply. An entry no longer in `gaveUp` (its reply came, or it was forgotten past the cap) is stale: popping it
   * changes nothing (the mark of an id kept is the id, so a stale duplicate of a kept id is below a reply's id only when
   * the id is too).
   */
  private gaveUpHeap: number[] = [];
  /** The send chain waiting for the window to open. */
  private windowWaiter: (() => void) | null = null;
  private nextId = 1;
  private closed = false;
  private readonly readDone: Promise<void>;

  constructor(opts: ClientOptions | string) {
    const given: unknown = opts;
    if (typeof given !== 'string' && (given === null || typeof given !== 'object' || typeof (given as { endpoint?: unknown }).endpoint !== 'string')) {
      throw new TypeError(`Client takes an endpoint string or { endpoint, ... }, got ${given === null ? 'null' : typeof given === 'object' ? 'an object without an endpoint string' : typeof given}`);
    }
    const o: ClientOptions = typeof opts === 'string' ? { endpoint: opts } : opts;
    this.endpoint = o.endpoint;
    this.timeoutMs = checkTimeoutMs(o.timeoutMs ?? CLIENT_DEFAULT_TIMEOUT_MS);
    this.maxMessageBytes = o.maxMessageBytes ?? CLIENT_DEFAULT_MAX_MESSAGE_BYTES;
    if (!Number.isSafeInteger(this.maxMessageBytes) || this.maxMessageBytes < 1) throw new RangeError(`maxMessageBytes must be a positive integer, got ${String(o.maxMessageBytes)}`);
    // Sessions belong to the connection's routing id: a random one of our own (not ZeroMQ's 5-byte counter) keeps
    // them ours across a reconnection after a network failure, and is not guessable.
    this.socket = new Dealer({ linger: 0, ipv6: /^tcp:\/\/\[/.test(o.endpoint), routingId: `c${randomBytes(16).toString('hex')}` });
    if (o.curveServerKey !== undefined) {
      const own = o.curveSecretKey !== undefined && o.curvePublicKey !== undefined ? { publicKey: o.curvePublicKey, secretKey: o.curveSecretKey } : generateCurveKeyPair();
      this.socket.curveServerKey = o.curveServerKey;
      this.socket.curvePublicKey = own.publicKey;
      this.socket.curveSecretKey = own.secretKey;
    }
    try {
      this.socket.connect(o.endpoint);
    } catch (e) {
      this.socket.close();
      throw new RangeError(`cannot connect to ${JSON.stringify(o.endpoint)}: ${(e as Error).message} (an endpoint is tcp://HOST:PORT or ipc:///PATH)`);
    }
    this.readDone = this.readLoop();
  }

  /** Number of requests awaiting a reply. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Send one request (`op` plus its fields) and resolve with the reply's `result`; rejects with `ProtocolError`. */
  request<T = unknown>(op: string, fields: Record<string, unknown> = {}, opts: { timeoutMs?: number } = {}): Promise<T> {
    if (this.closed) return Promise.reject(new ProtocolError('closed', 'the client is closed'));
    let timeoutMs: number;
    try {
      timeoutMs = checkTimeoutMs(opts.timeoutMs ?? this.timeoutMs);
    } catch (e) {
      return Promise.reject(e as RangeError);
    }
    const id = this.nextId++;
    let payload: string;
    try {
      payload = JSON.stringify({ v: 1, id, op, ...fields });
    } catch (e) {
      // A BigInt, a circular object: a rejection like every other failure of a request (not a synchronous throw).
      return Promise.reject(new TypeError(`cannot send ${op} as JSON: ${(e as Error).message}`));
    }
    const size = Buffer.byteLength(payload, 'utf8');
    if (size > this.maxMessageBytes) {
      return Promise.reject(new ProtocolError('message_too_large', `request is ${size} bytes; the limit is ${this.maxMessageBytes}`, id));
    }
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = { op, resolve: resolve as (v: unknown) => void, reject, timer: null };
      if (timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          if (this.pending.delete(id)) {
            if (this.unanswered.has(id)) this.giveUp(id);
            this.release(id);
            reject(new ProtocolError('timeout', `no reply to ${op} (request ${id}) from ${this.endpoint} within ${timeoutMs} ms; the request may still have run on the server`, id));
          }
        }, timeoutMs);
      }
      this.pending.set(id, entry);
      // One send at a time (zeromq.js allows a single blocked send); a request that timed out before it
      // could be queued is not sent at all. Requests wait here while the window is full: a server keeps only so
      // many of one client's requests waiting (MAX_CLIENT_QUEUED_REQUESTS) and answers more with `capacity`.
      this.sendChain = this.sendChain.then(async () => {
        while (this.unanswered.size > 0 && (this.unanswered.size >= CLIENT_SEND_WINDOW || this.unansweredBytes + size > CLIENT_SEND_WINDOW_BYTES) && this.pending.has(id) && !this.closed) {
          await new Promise<void>((r) => (this.windowWaiter = r));
        }
        if (!this.pending.has(id) || this.closed) return;
        try {
          await this.socket.send(payload);
          if (this.pending.has(id)) {
            this.unanswered.set(id, size);
            this.unansweredBytes += size;
          }
        } catch (e) {
          this.fail(id, new ProtocolError('closed', `cannot send ${op}: ${(e as Error).message}`, id));
        }
      });
    });
  }

  /** Send one request of the op table: its fields typed from `OpParams`, its result from `OpResult`. */
  call<O extends Op>(op: O, params: OpParams<O>, opts: { timeoutMs?: number } = {}): Promise<OpResult<O>> {
    return this.request<OpResult<O>>(op, params as Record<string, unknown>, opts);
  }

  /** `id` is answered or given up on: it leaves the send window, and a send waiting for room goes on (or gives up). */
  private release(id: number): void {
    const size = this.unanswered.get(id);
    if (size !== undefined) {
      this.unanswered.delete(id);
      this.unansweredBytes -= size;
    }
    const wake = this.windowWaiter;
    if (wake !== null) {
      this.windowWaiter = null;
      wake();
    }
  }

  private fail(id: number, err: ProtocolError): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    this.release(id);
    if (p.timer !== null) clearTimeout(p.timer);
    p.reject(err);
  }

  /** Note `id`, sent and not answered, as given up on: its reply, if it comes, is dropped (`gaveUp`). */
  private giveUp(id: number): void {
    // Mostly stale (many answered or forgotten since): rebuilt from the ids kept, sorted (a sorted array is a heap).
    if (this.gaveUpHeap.length > 2 * this.gaveUp.size + 64) this.gaveUpHeap = [...this.gaveUp].sort((a, b) => a - b);
    this.gaveUp.add(id);
    if (this.gaveUp.size > GAVE_UP_KEPT) this.gaveUp.delete(this.gaveUp.values().next().value as number);
    heapPush(this.gaveUpHeap, id);
  }

  /** Forget every request given up on (and the heap of their ids). */
  private forgetGaveUp(): void {
    this.gaveUp.clear();
    this.gaveUpHeap = [];
  }

  /**
   * The reply to this client's request `id` came. The server answers a connection's requests in order, and this client
   * sends them in the order of their ids, so every request given up on with a lower id has had its reply already
   * (perhaps one that named no request) or never will (dropped unanswered): it is forgotten, and no longer makes a
   * reply that names no request ambiguous (docs/protocol.md, Replies; the Python client's rule).
   */
  private answered(id: number): void {
    const heap = this.gaveUpHeap;
    while (heap.length > 0 && (heap[0] as number) < id) this.gaveUp.delete(heapPop(heap));
    if (this.gaveUp.size === 0) this.gaveUpHeap = [];
  }

  /**
   * The request a reply that names no request answers (its id null: the server could not read the request's id, as
   * for message_too_large; or not a number, which this client never sends), or null. It is a request's only when
   * exactly one request of this connection awaits its reply, counting those given up on after they were sent (the
   * reply may be one of theirs, late). With more it may answer any of them: each one awaiting its reply fails with
   * `bad_reply` naming the others (docs/protocol.md, Replies; the Python client's rule).
   */
  private unnamed(reply: Record<string, unknown>): number | null {
    const awaiting = [...this.unanswered.keys()];
    const n = awaiting.length + this.gaveUp.size;
    if (n === 0) return null; // no request awaits a reply: dropped
    if (n === 1) {
      if (awaiting.length === 1) return awaiting[0] as number;
      this.forgetGaveUp(); // the late reply of the one given up on
      return null;
    }
    const err = reply['error'];
    const told = isRecord(err) ? `${String(err['code'])}: ${String(err['message'])}`.slice(0, 300) : reply['ok'] === true ? 'ok' : 'no error';
    const ids = [...awaiting, ...this.gaveUp].sort((a, b) => a - b);
    const shown = ids.slice(0, 16).join(', ') + (ids.length > 16 ? ` and ${ids.length - 16} more` : '');
    const msg =
      `a server reply names no request (id ${JSON.stringify(reply['id'] ?? null).slice(0, 60)}; the server's reply: ${told}) while ${ids.length} requests ` +
      `of this connection await their replies (ids ${shown}): it may answer any of them, so every one still awaiting fails with this error; a request it answers may have run`;
    for (const id of awaiting) {
      this.giveUp(id);
      this.fail(id, new ProtocolError('bad_reply', msg, id));
    }
    return null;
  }

  private settle(reply: unknown, arrayFrames: Buffer[] | null = null): void {
    if (!isRecord(reply) || reply['v'] !== 1 || typeof reply['ok'] !== 'boolean') return;
    const rid = reply['id'];
    let id: number;
    if (typeof rid === 'number') {
      if (this.gaveUp.size > 0 && (this.gaveUp.has(rid) || this.unanswered.has(rid))) this.answered(rid);
      if (this.gaveUp.size > 0 && this.gaveUp.delete(rid)) return; // the late reply of a request given up on
      id = rid;
    } else {
      const only = this.unnamed(reply);
      if (only === null) return;
      id = only;
    }
    const p = this.pending.get(id);
    if (p === undefined) return; // a reply to no request of ours
    this.pending.delete(id);
    this.release(id);
    if (p.timer !== null) clearTimeout(p.timer);
    if (reply['ok'] === true) {
      if (arrayFrames === null) {
        p.resolve(reply['result']);
        return;
      }
      try {
        const result = reply['result'] as BinaryBatchResult;
        p.resolve({ result, arrays: decodeBinaryArrays(result, arrayFrames) } satisfies DecodedBinaryBatch);
      } catch (e) {
        p.reject(new ProtocolError('bad_reply', `${(e as Error).message} (reply to ${p.op})`, id));
      }
      return;
    }
    const err = reply['error'];
    // An error is {code, message}, both strings (message optional here): anything else is a malformed reply, not an
    // error to report as "[object Object]".
    if (!isRecord(err) || typeof err['code'] !== 'string' || (err['message'] !== undefined && typeof err['message'] !== 'string')) {
      p.reject(new ProtocolError('bad_reply', `malformed error reply to ${p.op}`, id));
      return;
    }
    p.reject(new ProtocolError(err['code'] as ErrorCode, err['message'] ?? '', id));
  }

  private async readLoop(): Promise<void> {
    for (;;) {
      let frames: Buffer[];
      try {
        frames = await this.socket.receive();
      } catch {
        if (this.closed || this.socket.closed) return;
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      // The reply is the first frame that is not an empty delimiter; a binary step_batch reply has its array frames after it.
      let h = 0;
      while (h < frames.length - 1 && (frames[h] as Buffer).length === 0) h++;
      const head = frames[h];
      if (head === undefined) continue;
      let value: unknown;
      try {
        value = JSON.parse(head.toString('utf8'));
      } catch {
        continue;
      }
      const binary = h < frames.length - 1 && isRecord(value) && isRecord(value['result']) && value['result']['encoding'] === 'binary';
      this.settle(value, binary ? frames.slice(h + 1) : null);
    }
  }

  /** Server facts: protocol version, presets, limits, spaces. */
  hello(): Promise<HelloResult> {
    return this.call('hello', {});
  }

  /** Start an episode in a new session (or `args.session`). */
  reset(args: ClientResetArgs): Promise<SessionResetResult> {
    const problem = argsProblem(args, 'reset takes an object { seed, preset?, session?, options? }');
    if (problem !== null) return Promise.reject(problem);
    return this.call('reset', definedFields(args, ['seed', 'preset', 'session', 'options']));
  }

  /** One agent command in a session. */
  step(session: string, action: string): Promise<StepResult> {
    return this.call('step', { session, action });
  }

  /** Many steps in one round trip, executed in order, each independently. */
  async stepBatch(steps: readonly BatchStep[]): Promise<BatchItem[]> {
    const r = (await this.call('step_batch', { steps: batchEntries('stepBatch', steps) })) as { results: BatchItem[] };
    return r.results;
  }

  /**
   * `stepBatch` with the binary reply encoding (`encoding: "binary"`, src/protocol/binary.ts): the numbers as typed
   * arrays by name (row i for entry i; a failed entry's rows are zeros and its error is in `result.errors`), the
   * strings in `result`. No status block.
   */
  async stepBatchArrays(steps: readonly BatchStep[]): Promise<DecodedBinaryBatch> {
    return this.request<DecodedBinaryBatch>('step_batch', { steps: batchEntries('stepBatchArrays', steps), encoding: 'binary' });
  }

  /** Exact snapshot of a session. */
  async snapshot(session: string): Promise<EnvSnapshot> {
    const r = await this.call('snapshot', { session });
    return r.snapshot;
  }

  /** Continue from a snapshot in a new session (or overwrite `session`). */
  restore(snapshot: EnvSnapshot, session?: string): Promise<SessionResetResult> {
    return this.call('restore', session !== undefined ? { snapshot, session } : { snapshot });
  }

  // ------------------------------------------------------------------ turn protocol (docs/turn-protocol.md)

  /** Start a run of the paper's turn protocol (a `TurnEnv` session, new or `args.session`). */
  turnReset(args: ClientTurnResetArgs): Promise<TurnResetReply> {
    const problem = argsProblem(args, 'turnReset takes an object { seed, preset?, session?, options?, tools?, detail? }');
    if (problem !== null) return Promise.reject(problem);
    const fields = definedFields(args, ['seed', 'preset', 'session', 'options', 'tools']);
    return this.call('turn_reset', args.detail === true ? { ...fields, detail: true } : fields);
  }

  /** Play one agent turn: command strings (run_command calls) or the model's reply (`{tool_calls, content?, reasoning_content?}`). */
  turnStep(session: string, action: readonly string[] | WireTurnAction, opts: { detail?: boolean } = {}): Promise<TurnStepReply> {
    const act: WireTurnAction = Array.isArray(action) ? { commands: [...(action as readonly string[])] } : (action as WireTurnAction);
    return this.call('turn_step', opts.detail === true ? { session, action: act, detail: true } : { session, action: act });
  }

  /** The chat to send to the LLM on the next call. */
  async turnMessages(session: string): Promise<ChatMessage[]> {
    const r = await this.call('turn_messages', { session });
    return r.messages;
  }

  /** Exact snapshot of a turn session (`format: "ycgym-turns"`). */
  async turnSnapshot(session: string): Promise<TurnSnapshot> {
    const r = await this.call('turn_snapshot', { session });
    return r.snapshot;
  }

  /** Continue a turn run from a snapshot in a new session (or overwrite `session`). */
  turnRestore(snapshot: TurnSnapshot, session?: string, opts: { detail?: boolean } = {}): Promise<TurnRestoreReply> {
    const fields: OpParams<'turn_restore'> = session !== undefined ? { snapshot, session } : { snapshot };
    return this.call('turn_restore', opts.detail === true ? { ...fields, detail: true } : fields);
  }

  /** The reference's `extract_time_series` of a turn session's current world (the rollout JSON's `time_series`). */
  async turnTimeSeries(session: string): Promise<Record<string, unknown>> {
    const r = await this.call('turn_time_series', { session });
    return r.time_series;
  }

  /** Close a session on the server (of either kind). */
  async closeSession(session: string): Promise<void> {
    await this.call('close', { session });
  }

  /** Close the socket; pending requests fail with code `closed`. Idempotent. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const id of [...this.pending.keys()]) this.fail(id, new ProtocolError('closed', 'the client was closed while the request was pending', id));
      this.forgetGaveUp();
      this.socket.close();
    }
    await this.readDone;
  }
}
