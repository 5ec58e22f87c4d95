/**
 * Protocol v1 (docs/protocol.md), transport-free: its version, the reply envelope, the compiled validators
 * of schema/protocol.schema.json and the decoding of one payload frame; it re-exports the op table (./ops.ts)
 * and the limits (./limits.ts). The server routes requests with these; clients and tests validate against them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { packageRoot } from '../config/load.js';
import { MAX_REQUEST_ID_CHARS } from './limits.js';
import { OP_TABLE, OPS, type ErrorBody, type ErrorCode, type Op, type RequestId } from './ops.js';

export * from './limits.js';
export * from './ops.js';

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
    requests[op] = get(`${OP_TABLE[op].def}Request`);
    replies[op] = get(`${OP_TABLE[op].def}Reply`);
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
