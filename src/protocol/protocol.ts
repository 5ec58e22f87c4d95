/**
 * Protocol v1 (docs/protocol.md), transport-free: its version, the reply envelope, the compiled validators
 * of schema/protocol.schema.json and the decoding of one payload frame; it re-exports the op table (./ops.ts)
 * and the limits (./limits.ts). The server routes requests with these; clients and tests validate against them.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import { packageRoot } from '../config/load.js';
import { MAX_BATCH, MAX_REQUEST_ID_CHARS, MAX_SESSION_ID_CHARS } from './limits.js';
import { OP_TABLE, OPS, type ErrorBody, type ErrorCode, type Op, type RequestId } from './ops.js';
import { formatErrors } from '../env/schema-errors.js';
import * as generated from './request-validators.generated.js';
import * as restoreValidators from './restore-validators.generated.js';

export * from './binary.js';
export * from './limits.js';
export * from './ops.js';

export { formatErrors } from '../env/schema-errors.js';

/** Protocol version spoken by this server. */
export const PROTOCOL_VERSION = 1;

/** A successful reply. */
export interface OkReply {
  v: 1;
  id: RequestId | null;
  ok: true;
  result: unknown;
}

/** An error reply. */
export interface ErrorReply {
  v: 1;
  id: RequestId | null;
  ok: false;
  error: ErrorBody;
}

/** Any reply. */
export type Reply = OkReply | ErrorReply;

/** The request id of a request value, when it is a valid one (a string of at most 256 characters or a safe integer). */
export function validRequestId(v: unknown): RequestId | null {
  if (typeof v === 'string') return v.length <= MAX_REQUEST_ID_CHARS ? v : null;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  return null;
}

/** Build an error reply. */
export function errorReply(code: ErrorCode, message: string, id: RequestId | null = null): ErrorReply {
  return { v: PROTOCOL_VERSION, id, ok: false, error: { code, message } };
}

// ---------------------------------------------------------------------------------------------------------
// Schemas

const SCHEMA_ID = 'urn:ycgym:protocol:1';

/** Absolute path of the protocol JSON Schema. */
export function protocolSchemaPath(): string {
  return join(packageRoot(), 'schema', 'protocol.schema.json');
}

/** The ajv options of the protocol schema (the generated request validators use the same). */
export const PROTOCOL_AJV_OPTIONS = { allErrors: false, strict: true, allowUnionTypes: true } as const;

/**
 * The validators of every op's request and reply, the error reply and the two snapshot kinds. The request and
 * snapshot validators are generated ahead of time (scripts/gen/validators.ts -> ./request-validators.generated.ts,
 * ./restore-validators.generated.ts): a server checks requests from its first message, and restores from the first,
 * without compiling the schema. The rest (reply validation is a debugging option) compile the whole schema once, when
 * one of them is first read (~0.5 s of CPU).
 */
export interface Validators {
  readonly requests: Readonly<Record<Op, ValidateFunction>>;
  readonly replies: Readonly<Record<Op, ValidateFunction>>;
  readonly errorReply: ValidateFunction;
  readonly snapshot: ValidateFunction;
  readonly turnSnapshot: ValidateFunction;
  readonly ajv: Ajv2020;
}

let requestValidators: Record<Op, ValidateFunction> | undefined;

function generatedRequests(): Record<Op, ValidateFunction> {
  if (requestValidators !== undefined) return requestValidators;
  const byDef = generated as unknown as Record<string, ValidateFunction | undefined>;
  const out = {} as Record<Op, ValidateFunction>;
  for (const op of OPS) {
    const v = byDef[`${OP_TABLE[op].def}Request`];
    if (v === undefined) throw new Error(`no generated validator for ${OP_TABLE[op].def}Request: run \`npm run gen\``);
    out[op] = v;
  }
  requestValidators = out;
  return out;
}

let schemaJson: { $defs?: Record<string, unknown> } | undefined;
function parsedSchema(): { $defs?: Record<string, unknown> } {
  schemaJson ??= JSON.parse(readFileSync(protocolSchemaPath(), 'utf8')) as { $defs?: Record<string, unknown> };
  return schemaJson;
}

interface Compiled {
  ajv: Ajv2020;
  replies: Record<Op, ValidateFunction>;
  errorReply: ValidateFunction;
}
let compiled: Compiled | undefined;

/**
 * ajv's schema compiler (about 30 ms to load), required when the whole schema is first compiled: a server validates
 * requests and restores with the generated validators and never loads it unless replies are validated (a debugging
 * option of `startServer`, which tests use).
 */
function ajvCompiler(): typeof Ajv2020 {
  return (createRequire(import.meta.url)('ajv/dist/2020.js') as { Ajv2020: typeof Ajv2020 }).Ajv2020;
}

/** Compile (once) the whole protocol schema: replies, the error reply, any `$defs` entry. */
function compiledSchema(): Compiled {
  if (compiled !== undefined) return compiled;
  const schema = parsedSchema();
  const Compiler = ajvCompiler();
  const ajv = new Compiler(PROTOCOL_AJV_OPTIONS);
  ajv.addSchema(schema as object);
  const get = (def: string): ValidateFunction => {
    const v = ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`);
    if (v === undefined) throw new Error(`protocol schema has no $defs/${def}`);
    return v;
  };
  const replies = {} as Record<Op, ValidateFunction>;
  for (const op of OPS) replies[op] = get(`${OP_TABLE[op].def}Reply`);
  compiled = { ajv, replies, errorReply: get('ErrorReply') };
  return compiled;
}

const VALIDATORS: Validators = {
  get requests() {
    return generatedRequests();
  },
  get replies() {
    return compiledSchema().replies;
  },
  get errorReply() {
    return compiledSchema().errorReply;
  },
  get snapshot() {
    return restoreValidators.EnvSnapshot as unknown as ValidateFunction;
  },
  get turnSnapshot() {
    return restoreValidators.TurnSnapshot as unknown as ValidateFunction;
  },
  get ajv() {
    return compiledSchema().ajv;
  },
};

/** The protocol's validators (requests and snapshots generated ahead of time; the others compiled when first read). */
export function getValidators(): Validators {
  return VALIDATORS;
}

/** The request validator of `op` (generated ahead of time: no schema compile). */
export function requestValidator(op: Op): ValidateFunction {
  return generatedRequests()[op];
}

/**
 * A validator for any `$defs` entry of the protocol schema (e.g. `"StepResult"`), for tests and clients. An unknown
 * entry throws at once. The entries a restore checks are generated ahead of time (./restore-validators.generated.ts);
 * for any other the schema is compiled when the validator is first called.
 */
export function schemaValidator(def: string): (value: unknown) => string | null {
  if (parsedSchema().$defs?.[def] === undefined) throw new Error(`protocol schema has no $defs/${def}`);
  let v = (restoreValidators as unknown as Record<string, ValidateFunction | undefined>)[def];
  return (value) => {
    v ??= compiledSchema().ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`) as ValidateFunction;
    return v(value) ? null : formatErrors(v.errors);
  };
}

/** Validate a reply to `op` against its schema; returns the problem or null. */
export function checkReply(op: Op | null, reply: Reply): string | null {
  const v = getValidators();
  const fn = reply.ok ? (op === null ? null : v.replies[op]) : v.errorReply;
  if (fn === null) return '/: an ok reply needs an op';
  return fn(reply) ? null : formatErrors(fn.errors);
}

// ---------------------------------------------------------------------------------------------------------
// Decoding

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The texts of the requests `plainRequest` reads, as bytes. */
const ascii = (t: string): Buffer => Buffer.from(t, 'latin1');
const REQ_HEAD = ascii('{"v":1,"id":');
const STEP_SESSION = ascii(',"op":"step","session":"');
const STEP_ACTION = ascii('","action":"');
const BATCH_STEPS = ascii(',"op":"step_batch","steps":[');
const ENTRY_SESSION = ascii('{"session":"');
const BINARY_TAIL = ascii(',"encoding":"binary"}');
/** Digits of a request id the fast path reads (below 2^53: every such integer's value is exact). */
const ID_DIGITS = 15;
/** Characters of a session or an action the fast path reads (a longer one is parsed: its string is made in one call). */
const TEXT_CHARS = 1024;
/** Entries of a `step_batch` whose texts are kept for the next one (`PlainTexts`). */
const KEPT_ENTRIES = 256;

/** Whether `p` holds the bytes of `text` at `at`. */
function bytesAt(p: Uint8Array, at: number, text: Uint8Array): boolean {
  if (at + text.length > p.length) return false;
  for (let i = 0; i < text.length; i++) if (p[at + i] !== text[i]) return false;
  return true;
}

/**
 * The end of a JSON string's text starting at `at` when it is printable ASCII without escapes (every byte 0x20-0x7e but
 * `"` and `\\`), at most `TEXT_CHARS` long and closed by `"`: the index of that quote; -1 otherwise.
 */
function plainStringEnd(p: Uint8Array, at: number): number {
  const end = Math.min(p.length, at + TEXT_CHARS + 1);
  for (let i = at; i < end; i++) {
    const b = p[i] as number;
    if (b === 0x22) return i;
    if (b < 0x20 || b > 0x7e || b === 0x5c) return -1;
  }
  return -1;
}

/** The string of the bytes `p[from, to)`, each byte one character (printable ASCII here: as JSON.parse reads them). */
function byteText(p: Uint8Array, from: number, to: number): string {
  return String.fromCharCode.apply(null, p.subarray(from, to) as unknown as number[]);
}

/**
 * The string of printable ASCII bytes `p[from, to)` (as JSON.parse reads them: each byte one character), and the last one
 * made for each slot: a client sends the same sessions and actions again and again (a lockstep client's session and
 * action; a batch's entry i, usually the same session each time).
 */
class PlainTexts {
  private readonly texts: string[] = [];

  text(slot: number, p: Uint8Array, from: number, to: number): string {
    const last = this.texts[slot];
    const n = to - from;
    if (last !== undefined && last.length === n) {
      let i = 0;
      while (i < n && last.charCodeAt(i) === p[from + i]) i++;
      if (i === n) return last;
    }
    const t = byteText(p, from, to);
    if (slot <= this.texts.length) this.texts[slot] = t;
    return t;
  }
}
const STEP_TEXTS = new PlainTexts();
const BATCH_TEXTS = new PlainTexts();

/**
 * Whether a session id of `n` characters (printable ASCII: one code point each) is one the request schema accepts
 * (`SessionId`: 1 to `MAX_SESSION_ID_CHARS`).
 */
function plainSession(n: number): boolean {
  return n >= 1 && n <= MAX_SESSION_ID_CHARS;
}

/**
 * The value of a request in the bytes the ycgym clients write for the two they send most, read without decoding the text
 * and parsing it: the value `JSON.parse` gives, the same keys in the same order. They are `{"v":1,"id":N,"op":"step",
 * "session":"S","action":"A"}` and `{"v":1,"id":N,"op":"step_batch","steps":[{"session":"S","action":"A"},...]}` (that
 * one also with `,"encoding":"binary"` after the steps): no whitespace, N a non-negative integer of at most 15 digits
 * without leading zeros, every S and A printable ASCII without escapes. Any other payload: null (it is decoded and
 * parsed in full). `checked` when the request schema of its op accepts the value (its sessions' lengths, its number of
 * entries: every other constraint holds by its shape), so that the request need not be validated again.
 */
function plainRequest(p: Uint8Array): Decoded | null {
  if (p[0] !== 0x7b || !bytesAt(p, 0, REQ_HEAD)) return null;
  let at = REQ_HEAD.length;
  const first = p[at];
  if (first === undefined || first < 0x30 || first > 0x39) return null;
  let id = 0;
  const idFrom = at;
  while (at < p.length && at - idFrom <= ID_DIGITS && (p[at] as number) >= 0x30 && (p[at] as number) <= 0x39) id = id * 10 + ((p[at++] as number) - 0x30);
  if (at - idFrom > ID_DIGITS || (first === 0x30 && at - idFrom > 1)) return null;
  if (bytesAt(p, at, STEP_SESSION)) {
    const sessionFrom = at + STEP_SESSION.length;
    const sessionTo = plainStringEnd(p, sessionFrom);
    if (sessionTo < 0 || !bytesAt(p, sessionTo, STEP_ACTION)) return null;
    const actionFrom = sessionTo + STEP_ACTION.length;
    const actionTo = plainStringEnd(p, actionFrom);
    if (actionTo < 0 || actionTo + 2 !== p.length || p[actionTo + 1] !== 0x7d) return null;
    const value = { v: 1, id, op: 'step', session: STEP_TEXTS.text(0, p, sessionFrom, sessionTo), action: STEP_TEXTS.text(1, p, actionFrom, actionTo) };
    return { ok: true, value, checked: plainSession(sessionTo - sessionFrom) };
  }
  if (!bytesAt(p, at, BATCH_STEPS)) return null;
  at += BATCH_STEPS.length;
  const steps: { session: string; action: string }[] = [];
  let sessionsChecked = true;
  if (p[at] === 0x5d) {
    at++; // ]: no entries
  } else {
    for (;;) {
      if (!bytesAt(p, at, ENTRY_SESSION)) return null;
      const sessionFrom = at + ENTRY_SESSION.length;
      const sessionTo = plainStringEnd(p, sessionFrom);
      if (sessionTo < 0 || !bytesAt(p, sessionTo, STEP_ACTION)) return null;
      const actionFrom = sessionTo + STEP_ACTION.length;
      const actionTo = plainStringEnd(p, actionFrom);
      if (actionTo < 0 || p[actionTo + 1] !== 0x7d) return null;
      if (!plainSession(sessionTo - sessionFrom)) sessionsChecked = false;
      const slot = 2 * steps.length;
      const kept = slot < 2 * KEPT_ENTRIES;
      steps.push({
        session: kept ? BATCH_TEXTS.text(slot, p, sessionFrom, sessionTo) : byteText(p, sessionFrom, sessionTo),
        action: kept ? BATCH_TEXTS.text(slot + 1, p, actionFrom, actionTo) : byteText(p, actionFrom, actionTo),
      });
      at = actionTo + 2;
      const next = p[at++];
      if (next === 0x5d) break; // ]
      if (next !== 0x2c) return null; // ,
    }
  }
  const checked = sessionsChecked && steps.length >= 1 && steps.length <= MAX_BATCH;
  if (at + 1 === p.length && p[at] === 0x7d) return { ok: true, value: { v: 1, id, op: 'step_batch', steps }, checked };
  if (at + BINARY_TAIL.length === p.length && bytesAt(p, at, BINARY_TAIL)) return { ok: true, value: { v: 1, id, op: 'step_batch', steps, encoding: 'binary' }, checked };
  return null;
}

/** Outcome of decoding one payload frame. */
export type Decoded = {
  ok: true;
  value: unknown;
  /** The value is a request its op's request schema accepts (only a request read without parsing may say so). */
  checked?: boolean;
} | { ok: false; reply: ErrorReply };

/** The error reply to a payload of `bytes` above the server's limit `maxBytes` (its id unread). */
export function tooLargeReply(bytes: number, maxBytes: number): ErrorReply {
  return errorReply('message_too_large', `payload is ${bytes} bytes; the limit is ${maxBytes}`);
}

/** Check size, decode strict UTF-8 and parse JSON. */
export function decodePayload(payload: Uint8Array, maxBytes: number): Decoded {
  if (payload.length > maxBytes) return { ok: false, reply: tooLargeReply(payload.length, maxBytes) };
  return plainRequest(payload) ?? parsePayload(payload);
}

/** A payload decoded as strict UTF-8 and parsed as JSON (`decodePayload` without its size check and its fast path). */
export function parsePayload(payload: Uint8Array): Decoded {
  let text: string;
  try {
    text = UTF8.decode(payload);
  } catch {
    return { ok: false, reply: errorReply('bad_json', 'payload is not valid UTF-8') };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { ok: false, reply: errorReply('bad_json', `payload is not JSON: ${(e as Error).message}`) };
  }
}
