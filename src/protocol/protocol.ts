/**
 * Protocol v1 (docs/protocol.md), transport-free: its version, limits, ops and error codes, the reply shapes,
 * the compiled validators of schema/protocol.schema.json, and the decoding of one payload frame. The server
 * routes requests with these; clients and tests validate against them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { packageRoot } from '../config/load.js';
import type { SeedRange, SplitName } from '../config/splits.js';
import type { PresetDescription } from '../env/env.js';

/** Protocol version spoken by this server. */
export const PROTOCOL_VERSION = 1;
/** Maximum entries of one `step_batch`. */
export const MAX_BATCH = 4096;
/** Longest command the environment executes (longer ones are usage errors); reported in `hello.spaces`. */
export const MAX_ACTION_CHARS = 65_536;
/**
 * Default cap on the size of one `step_batch` reply (bytes of JSON): entries run while the reply built so far
 * is below it; later entries are not executed and fail alone with `message_too_large`. Without a cap, 4096
 * entries of a 1.4 MB observation (a full scratchpad read) would need ~6 GB and take the server down.
 */
export const DEFAULT_MAX_BATCH_REPLY_BYTES = 64 * 2 ** 20;

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
  'internal',
] as const;

/** A protocol error code (string literal). */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The operations of protocol v1. */
export const OPS = [
  'hello',
  'reset',
  'step',
  'step_batch',
  'snapshot',
  'restore',
  'close',
  'turn_reset',
  'turn_step',
  'turn_messages',
  'turn_snapshot',
  'turn_restore',
  'turn_time_series',
] as const;
/** A protocol operation name. */
export type Op = (typeof OPS)[number];

/** A client-chosen request id (string of at most 256 characters or a safe integer). */
export type RequestId = string | number;

/** The error part of an error reply. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
}

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

/** The `limits` block of `hello`. */
export interface Limits {
  max_message_bytes: number;
  max_sessions: number;
  idle_timeout_ms: number;
  max_batch: number;
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

/** The compiled validators of every op's request and reply, the error reply and the two snapshot kinds. */
export interface Validators {
  requests: Record<Op, ValidateFunction>;
  replies: Record<Op, ValidateFunction>;
  errorReply: ValidateFunction;
  snapshot: ValidateFunction;
  turnSnapshot: ValidateFunction;
  ajv: Ajv2020;
}

let validators: Validators | undefined;

const DEF_NAMES: Record<Op, string> = {
  hello: 'Hello',
  reset: 'Reset',
  step: 'Step',
  step_batch: 'StepBatch',
  snapshot: 'Snapshot',
  restore: 'Restore',
  close: 'Close',
  turn_reset: 'TurnReset',
  turn_step: 'TurnStep',
  turn_messages: 'TurnMessages',
  turn_snapshot: 'TurnSnapshot',
  turn_restore: 'TurnRestore',
  turn_time_series: 'TurnTimeSeries',
};

/** Compiled validators of schema/protocol.schema.json (compiled once per process). */
export function getValidators(): Validators {
  if (validators !== undefined) return validators;
  const schema: unknown = JSON.parse(readFileSync(protocolSchemaPath(), 'utf8'));
  const ajv = new Ajv2020({ allErrors: false, strict: true, allowUnionTypes: true });
  ajv.addSchema(schema as object);
  const get = (def: string): ValidateFunction => {
    const v = ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`);
    if (v === undefined) throw new Error(`protocol schema has no $defs/${def}`);
    return v;
  };
  const requests = {} as Record<Op, ValidateFunction>;
  const replies = {} as Record<Op, ValidateFunction>;
  for (const op of OPS) {
    requests[op] = get(`${DEF_NAMES[op]}Request`);
    replies[op] = get(`${DEF_NAMES[op]}Reply`);
  }
  validators = { requests, replies, errorReply: get('ErrorReply'), snapshot: get('EnvSnapshot'), turnSnapshot: get('TurnSnapshot'), ajv };
  return validators;
}

/** A validator for any `$defs` entry of the protocol schema (e.g. `"StepResult"`), for tests and clients. */
export function schemaValidator(def: string): (value: unknown) => string | null {
  const v = getValidators().ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`);
  if (v === undefined) throw new Error(`protocol schema has no $defs/${def}`);
  return (value) => (v(value) ? null : formatErrors(v.errors));
}

/** `/path: problem` for the first ajv error. */
export function formatErrors(errors: ErrorObject[] | null | undefined, base = ''): string {
  const e = errors?.[0];
  const path = base + (e?.instancePath ?? '') || '/';
  if (e === undefined) return `${path}: invalid`;
  const p = e.params as Record<string, unknown>;
  let msg: string;
  switch (e.keyword) {
    case 'additionalProperties':
      msg = `unknown field '${String(p['additionalProperty'])}'`;
      break;
    case 'const':
      msg = `must be ${JSON.stringify(p['allowedValue'])}`;
      break;
    case 'enum':
      msg = `must be one of ${(p['allowedValues'] as unknown[]).map((x) => JSON.stringify(x)).join(', ')}`;
      break;
    default:
      msg = e.message ?? 'invalid';
  }
  return `${path}: ${msg}`;
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

/** Outcome of decoding one payload frame. */
export type Decoded = { ok: true; value: unknown } | { ok: false; reply: ErrorReply };

/** Check size, decode strict UTF-8 and parse JSON. */
export function decodePayload(payload: Uint8Array, maxBytes: number): Decoded {
  if (payload.length > maxBytes) {
    return { ok: false, reply: errorReply('message_too_large', `payload is ${payload.length} bytes; the limit is ${maxBytes}`) };
  }
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
