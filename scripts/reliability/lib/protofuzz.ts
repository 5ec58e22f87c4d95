/**
 * Fuzzing the protocol: garbage and malformed frames against a running server (a child process) while a
 * control client steps a scripted episode on its own session.
 *
 * Every frame sent on the pipelined fuzz socket must be answered, in order, by exactly the routing envelope
 * the client sent plus one JSON reply that passes the protocol schema, echoes the request id by the rules of
 * docs/protocol.md, and carries an error code (or `ok`) from the set an independent oracle allows:
 * - the frame and payload layers (envelope split, size, strict UTF-8, JSON, object, version, op) are
 *   re-implemented here from docs/protocol.md;
 * - requests built from valid templates carry the expectation of the mutation applied to them (a wrong
 *   version, an unknown op, a wrong type, an unknown session, a bad preset, an invalid snapshot, ...);
 * - anything else that gets past the op check (random JSON) may get any schema-valid reply.
 * Frames ZeroMQ itself drops (above 4x the size limit; the peer is disconnected) and hit-and-run peers (send,
 * then close at once) go through throwaway sockets: there is no answer to check, only that nothing else is
 * affected. At the end the server must be alive, answer `hello`, and the control trajectory must be
 * byte-identical (sha256) to the same seed run in-process.
 */
import fc from 'fast-check';
import { Dealer } from 'zeromq';
import { Client } from '../../../src/client/client.js';
import { checkReply, OPS, type Op, type Reply } from '../../../src/protocol/protocol.js';
import { ServerChild } from './children.js';
import { commandArb } from './cmdfuzz.js';
import { localDriver, remoteDriver, runPolicy } from './policy.js';
import { round, withTimeout } from './util.js';

type Code = string; // 'ok' or an error code
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** What the fuzzer knows when it materialises a frame. */
interface Ctx {
  /** Live fuzz-owned session number k (modulo the pool). */
  own(k: number): string;
  /** A session id that is not live. */
  unknown(salt: number): string;
  /** A snapshot taken from a live session (restores with `ok`). */
  snapshot(k: number): Obj;
  /** Whether snapshot k comes from an episode started with edge options (see `edgeSnapshot`). */
  snapshotIsEdge(k: number): boolean;
  maxBytes: number;
}

/** A frame ready to send and what may come back. */
interface Frame {
  cat: string;
  frames: Buffer[];
  /** Allowed reply codes; null: any schema-valid reply. */
  codes: readonly Code[] | null;
  /** The op an `ok` reply answers (for its schema). */
  op: Op | null;
  /** For step_batch: allowed codes per entry. */
  entries?: readonly (readonly Code[])[];
  /** Own session this frame names (to tolerate `unknown_session` after it died). */
  ownSession?: string;
  /** Remember the snapshot in an `ok` reply as the pool's snapshot k. */
  keepSnapshot?: number;
  /** A reset with edge options (start dates near the ends of the calendar). */
  edgeReset?: boolean;
  /** A restore of a snapshot taken from an episode started with edge options. */
  edgeSnapshot?: boolean;
  /** The op of the valid request this frame was derived from (session tracking for corrupted frames). */
  baseOp?: Op | null;
}

/** A generated frame template (materialised at send time against the live context). */
type Template = (ctx: Ctx) => Frame | { cat: string; special: 'oversize_dropped' | 'hit_and_run'; frames: Buffer[] };

// ---------------------------------------------------------------------------------------------------------
// Oracle for the frame and payload layers (docs/protocol.md, "A request is checked in this order")

const MAX_ENVELOPE_FRAMES = 64;

/** Routing frames the reply must start with (after the DEALER's own identity), and the payload frames. */
function splitForDealer(sent: readonly Buffer[]): { envelope: Buffer[]; payload: Buffer[]; tooMany: boolean } {
  const j = sent.findIndex((f) => f.length === 0);
  const envelope = j >= 0 ? sent.slice(0, j + 1) : [];
  const payload = j >= 0 ? sent.slice(j + 1) : [...sent];
  return { envelope, payload, tooMany: envelope.length + 1 > MAX_ENVELOPE_FRAMES };
}

function isStrictUtf8(b: Buffer): boolean {
  return Buffer.from(b.toString('utf8'), 'utf8').equals(b);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function validId(v: unknown): string | number | null {
  if (typeof v === 'string') return v.length <= 256 ? v : null;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : null;
  return null;
}

/** Codes the payload layers allow, or 'deeper' when the payload passes them (the template decides). */
function payloadOracle(payload: Buffer, maxBytes: number): { codes: Code[]; id: string | number | null; value: unknown } | { deeper: true; id: string | number | null; value: Record<string, unknown>; op: Op } {
  if (payload.length > maxBytes) return { codes: ['message_too_large'], id: null, value: null };
  if (!isStrictUtf8(payload)) return { codes: ['bad_json'], id: null, value: null };
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    return { codes: ['bad_json'], id: null, value: null };
  }
  if (!isPlainObject(value)) return { codes: ['invalid_request'], id: null, value };
  const id = validId(value['id']);
  if (value['v'] !== 1) return { codes: ['unsupported_version'], id, value };
  const op = value['op'];
  if (typeof op !== 'string') return { codes: ['invalid_request'], id, value };
  if (!(OPS as readonly string[]).includes(op)) return { codes: ['unknown_op'], id, value };
  return { deeper: true, id: value['id'] !== undefined && id === null ? null : id, value, op: op as Op };
}

// ---------------------------------------------------------------------------------------------------------
// Generators

const validIdArb: fc.Arbitrary<Json | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.integer(),
  fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER),
  fc.string({ maxLength: 40 }),
  fc.constant('i'.repeat(256)),
);

const badIdArb: fc.Arbitrary<Json> = fc.constantFrom<Json>('i'.repeat(257), 2 ** 53, -(2 ** 53), 1.5, 1e300, true, null, [], {}, [1], { id: 1 });

const actionArb = fc.oneof({ weight: 3, arbitrary: commandArb.map((g) => g.cmd) }, { weight: 1, arbitrary: fc.constantFrom('company status', 'sim resume', 'market browse --limit 3', 'task list') });

const validOptionsArb: fc.Arbitrary<Obj | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.record({ max_steps: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ horizon_years: fc.integer({ min: 1, max: 3 }), company_name: fc.string({ maxLength: 256 }) }) },
  { weight: 1, arbitrary: fc.record({ start_date: fc.constantFrom('2025-03-01', '2030-12-31', '1999-01-04') }) },
);

/** Options the schema accepts but the environment may refuse (`invalid_request` naming /options). */
const edgeOptionsArb: fc.Arbitrary<Obj> = fc.oneof(
  fc.record({ start_date: fc.constantFrom('0001-01-01', '9999-12-31', '2024-02-29', '2023-02-29', '2025-13-01', '2025-00-10', '1970-01-01', '0000-00-00') }),
  fc.record({ start_date: fc.constantFrom('9999-12-31', '9990-01-01', '2024-02-29'), horizon_years: fc.constantFrom(1, 4, 100) }),
  fc.record({ horizon_years: fc.constant(100), max_steps: fc.constant(Number.MAX_SAFE_INTEGER) }),
);

/** Options the schema refuses. */
const badOptionsArb: fc.Arbitrary<Json> = fc.constantFrom<Json>(
  [],
  'x',
  { max_steps: 0 },
  { max_steps: 1.5 },
  { max_steps: 2 ** 53 },
  { horizon_years: 0 },
  { horizon_years: 101 },
  { start_date: '2025-1-1' },
  { start_date: 20250101 },
  { company_name: 'n'.repeat(257) },
  { unknown: 1 },
  { record: {} },
  { record: { path: '' } },
  { __proto__x: 1 },
);

const seedArb = fc.oneof(fc.integer({ min: 1, max: 400 }), fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER));

/** A random JSON value (for wrong types and snapshot mutations). */
const anyJson: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, true, false, 0, -1, 1.5, 1e300, -1e300, 2 ** 53, '', 'x', [], {}, '9'.repeat(400)),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

/** Replace (or delete) a value somewhere in `root`, walking down by a list of random numbers. */
function mutateAt(root: Obj, choices: readonly number[], op: number, replacement: Json): void {
  let cur: Json = root;
  let depth = 0;
  for (const c of choices) {
    depth++;
    if (Array.isArray(cur)) {
      if (cur.length === 0) break;
      const i = c % cur.length;
      const next: Json = cur[i] as Json;
      if (typeof next !== 'object' || next === null || (op % 4 === 0 && depth > 1)) {
        cur[i] = op % 3 === 1 ? (`${String(next)}x` as Json) : replacement;
        return;
      }
      cur = next;
    } else if (typeof cur === 'object' && cur !== null) {
      const keys = Object.keys(cur);
      if (keys.length === 0) break;
      const k = keys[c % keys.length] as string;
      const next: Json = cur[k] as Json;
      if (typeof next !== 'object' || next === null || (op % 4 === 0 && depth > 1)) {
        if (op % 5 === 2) delete cur[k];
        else cur[k] = replacement;
        return;
      }
      cur = next;
    } else break;
  }
  if (typeof cur === 'object' && cur !== null && !Array.isArray(cur)) cur['fuzz_extra'] = replacement;
}

function frame(cat: string, obj: Obj, codes: readonly Code[] | null, op: Op | null, extra: Partial<Frame> = {}): Frame {
  return { cat, frames: [Buffer.from(JSON.stringify(obj))], codes, op, ...extra };
}

function withId(obj: Obj, id: Json | undefined): Obj {
  return id === undefined ? obj : { ...obj, id };
}

/** Valid requests on fuzz-owned sessions (expectations from the semantics). */
const validTemplate: fc.Arbitrary<Template> = fc.oneof(
  { weight: 2, arbitrary: validIdArb.map((id): Template => () => frame('valid', withId({ v: 1, op: 'hello' }, id), ['ok'], 'hello')) },
  {
    weight: 3,
    arbitrary: fc.tuple(validIdArb, seedArb, fc.nat(), validOptionsArb, fc.constantFrom('default', 'corrected', 'multi', undefined)).map(([id, seed, k, options, preset]): Template => (ctx) => {
      const session = ctx.own(k);
      const req: Obj = { v: 1, op: 'reset', seed, session };
      if (options !== undefined) req['options'] = options;
      if (preset !== undefined) req['preset'] = preset;
      return frame('valid', withId(req, id), ['ok'], 'reset', { ownSession: session });
    }),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(validIdArb, seedArb, fc.nat(), edgeOptionsArb).map(([id, seed, k, options]): Template => (ctx) => {
      const session = ctx.own(k);
      return frame('edge_options', withId({ v: 1, op: 'reset', seed, session, options }, id), ['ok', 'invalid_request'], 'reset', { ownSession: session, edgeReset: true });
    }),
  },
  {
    weight: 12,
    arbitrary: fc.tuple(validIdArb, fc.nat(), actionArb).map(([id, k, action]): Template => (ctx) => {
      const session = ctx.own(k);
      return frame('valid', withId({ v: 1, op: 'step', session, action }, id), ['ok', 'episode_over'], 'step', { ownSession: session });
    }),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(validIdArb, fc.array(fc.tuple(fc.boolean(), fc.nat(), actionArb), { minLength: 1, maxLength: 24 })).map(([id, entries]): Template => (ctx) => {
      const steps = entries.map(([own, k, action]) => ({ session: own ? ctx.own(k) : ctx.unknown(k), action }));
      const codes = entries.map(([own]) => (own ? ['ok', 'episode_over', 'unknown_session'] : ['unknown_session']));
      return frame('valid', withId({ v: 1, op: 'step_batch', steps }, id), ['ok'], 'step_batch', { entries: codes });
    }),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(validIdArb, fc.nat()).map(([id, k]): Template => (ctx) => {
      const session = ctx.own(k);
      return frame('valid', withId({ v: 1, op: 'snapshot', session }, id), ['ok'], 'snapshot', { ownSession: session, keepSnapshot: k });
    }),
  },
  {
    weight: 1,
    arbitrary: fc.tuple(validIdArb, fc.nat(), fc.nat()).map(([id, k, j]): Template => (ctx) => {
      const session = ctx.own(k);
      return frame('valid', withId({ v: 1, op: 'restore', session, snapshot: ctx.snapshot(j) }, id), ['ok'], 'restore', { ownSession: session, edgeSnapshot: ctx.snapshotIsEdge(j) });
    }),
  },
  {
    weight: 2,
    arbitrary: fc.tuple(validIdArb, fc.nat(), fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), fc.nat(), anyJson).map(([id, k, choices, op, rep]): Template => (ctx) => {
      const session = ctx.own(k);
      const snap = structuredClone(ctx.snapshot(k));
      mutateAt(snap, choices, op, rep);
      return frame('mutated_snapshot', withId({ v: 1, op: 'restore', session, snapshot: snap }, id), ['ok', 'bad_snapshot'], 'restore', { ownSession: session });
    }),
  },
);

/** Requests with one semantic mutation (expectations from the mutation). */
const mutatedTemplate: fc.Arbitrary<Template> = fc.oneof(
  // wrong version
  fc.tuple(validIdArb, fc.constantFrom<Json | undefined>(2, 0, -1, '1', 1.5, null, true, [], {}, [1], undefined)).map(([id, v]): Template => () => {
    const req: Obj = { op: 'hello' };
    if (v !== undefined) req['v'] = v;
    return frame('bad_version', withId(req, id), ['unsupported_version'], null);
  }),
  // unknown op / wrong type of op
  fc.tuple(validIdArb, fc.oneof(fc.string({ maxLength: 30 }).filter((s) => !(OPS as readonly string[]).includes(s)), fc.constantFrom('HELLO', 'step ', 'stats', '__proto__', 'constructor'))).map(([id, op]): Template => () => frame('bad_op', withId({ v: 1, op }, id), ['unknown_op'], null)),
  fc.tuple(validIdArb, fc.constantFrom<Json | undefined>(5, null, [], {}, true, undefined)).map(([id, op]): Template => () => {
    const req: Obj = { v: 1 };
    if (op !== undefined) req['op'] = op;
    return frame('bad_op', withId(req, id), ['invalid_request'], null);
  }),
  // an unknown top-level field (including prototype-pollution names)
  fc.tuple(validIdArb, fc.constantFrom('foo', '__proto__', 'constructor', 'prototype', 'Session', 'V', 'options'), anyJson).map(([id, key, val]): Template => () => {
    const req: Obj = { v: 1, op: 'hello' };
    Object.defineProperty(req, key, { value: val, enumerable: true, writable: true, configurable: true });
    return frame('extra_field', withId(req, id), ['invalid_request'], null);
  }),
  // an invalid id (the reply id is null)
  fc.tuple(badIdArb, fc.constantFrom<Op>('hello', 'step', 'close')).map(([id, op]): Template => (ctx) => {
    const req: Obj = { v: 1, op, id };
    if (op !== 'hello') req['session'] = ctx.unknown(1);
    if (op === 'step') req['action'] = 'company status';
    return frame('bad_id', req, ['invalid_request'], null);
  }),
  // missing or wrongly typed fields
  fc.tuple(validIdArb, fc.nat(), fc.constantFrom('seed', 'session', 'preset', 'options'), anyJson).map(([id, k, field, val]): Template => (ctx) => {
    const req: Obj = { v: 1, op: 'reset', seed: 1, session: ctx.own(k) };
    if (field === 'seed') req['seed'] = typeof val === 'number' && Number.isSafeInteger(val) ? 1.5 : val;
    else if (field === 'session') req['session'] = typeof val === 'string' && val.length >= 1 && val.length <= 64 ? 5 : val;
    else if (field === 'preset') req['preset'] = typeof val === 'string' && val.length >= 1 && val.length <= 128 ? [] : val;
    else req['options'] = typeof val === 'object' && val !== null && !Array.isArray(val) && Object.keys(val).length === 0 ? [] : val;
    return frame('wrong_type', withId(req, id), ['invalid_request'], null);
  }),
  fc.tuple(validIdArb, fc.nat(), badOptionsArb).map(([id, k, options]): Template => (ctx) => frame('wrong_type', withId({ v: 1, op: 'reset', seed: 1, session: ctx.own(k), options }, id), ['invalid_request'], null)),
  fc.tuple(validIdArb, fc.constantFrom<Op>('step', 'snapshot', 'close', 'reset', 'restore', 'step_batch')).map(([id, op]): Template => () => frame('missing_field', withId({ v: 1, op }, id), ['invalid_request'], null)),
  fc.tuple(validIdArb, fc.nat(), anyJson).map(([id, k, action]): Template => (ctx) =>
    frame('wrong_type', withId({ v: 1, op: 'step', session: ctx.own(k), action: typeof action === 'string' ? 7 : action }, id), ['invalid_request'], null),
  ),
  fc.tuple(validIdArb, fc.constantFrom<Json>({}, [], 'x', 5, [{}], [{ session: 's1' }], [{ session: 's1', action: 1.5 }], [{ session: 's1', action: 'x', extra: 1 }])).map(([id, steps]): Template => () =>
    frame('wrong_type', withId({ v: 1, op: 'step_batch', steps }, id), ['invalid_request'], null),
  ),
  fc.tuple(validIdArb, fc.constantFrom(0, 4097)).map(([id, n]): Template => (ctx) =>
    frame('batch_size', withId({ v: 1, op: 'step_batch', steps: Array.from({ length: n }, () => ({ session: ctx.unknown(2), action: 'x' })) }, id), ['invalid_request'], null),
  ),
  fc.tuple(validIdArb, fc.constantFrom('', 'x'.repeat(65))).map(([id, session]): Template => () => frame('wrong_type', withId({ v: 1, op: 'snapshot', session }, id), ['invalid_request'], null)),
  // unknown sessions (every op that names one)
  fc.tuple(validIdArb, fc.nat(), fc.constantFrom<Op>('step', 'snapshot', 'close', 'reset', 'restore')).map(([id, salt, op]): Template => (ctx) => {
    const session = ctx.unknown(salt);
    const req: Obj = { v: 1, op, session };
    if (op === 'step') req['action'] = 'company status';
    if (op === 'reset') req['seed'] = 1;
    if (op === 'restore') req['snapshot'] = ctx.snapshot(0);
    return frame('unknown_session', withId(req, id), ['unknown_session'], null);
  }),
  // presets that are not built-in names (paths are refused)
  fc.tuple(validIdArb, fc.nat(), fc.constantFrom('nope', 'Default', '../presets/default', 'presets/default.toml', '/etc/passwd', 'default.toml', '.', 'x'.repeat(128))).map(([id, k, preset]): Template => (ctx) =>
    frame('bad_preset', withId({ v: 1, op: 'reset', seed: 1, session: ctx.own(k), preset }, id), ['bad_preset'], null),
  ),
  // not a snapshot
  fc.tuple(validIdArb, fc.boolean(), fc.nat(), fc.constantFrom<Json>({}, { format: 'ycgym-env' }, { format: 'ycgym-env', version: 2 }, { format: 'ycgym-env', version: 1, sim: {}, steps: 0, max_steps: null, done: false })).map(
    ([id, intoOwn, k, snapshot]): Template => (ctx) => {
      const req: Obj = { v: 1, op: 'restore', snapshot };
      if (intoOwn) req['session'] = ctx.own(k);
      return frame('bad_snapshot', withId(req, id), ['bad_snapshot'], null);
    },
  ),
  fc.tuple(validIdArb, fc.constantFrom<Json>([], 5, 'snap', null)).map(([id, snapshot]): Template => () => frame('wrong_type', withId({ v: 1, op: 'restore', snapshot }, id), ['invalid_request'], null)),
);

/** Byte- and text-level corruptions of a valid request (the oracle decides). */
const corruptedTemplate: fc.Arbitrary<Template> = fc.tuple(validTemplate, fc.nat({ max: 9 }), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([base, how, pos, byte]): Template => (ctx) => {
  const f = base(ctx);
  if (!('codes' in f)) return f;
  const orig = f.frames[0] as Buffer;
  const at = orig.length === 0 ? 0 : pos % orig.length;
  let b: Buffer;
  switch (how) {
    case 0: // truncate
      b = orig.subarray(0, at);
      break;
    case 1: // flip one byte
      b = Buffer.from(orig);
      b[at] = byte;
      break;
    case 2: // insert an invalid UTF-8 sequence
      b = Buffer.concat([orig.subarray(0, at), Buffer.from([0xc3, 0x28]), orig.subarray(at)]);
      break;
    case 3: // byte-order mark
      b = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), orig]);
      break;
    case 4: // trailing garbage
      b = Buffer.concat([orig, Buffer.from(' }garbage')]);
      break;
    case 5: // duplicate key (JSON.parse keeps the last)
      b = Buffer.from(orig.toString('utf8').replace(/^\{/, '{"v":2,'));
      break;
    case 6: // surrogate escape sequences
      b = Buffer.from(orig.toString('utf8').replace(/^\{/, '{"x":"\\ud800\\udfff\\u0000",'));
      break;
    case 7: // CESU-8 encoded surrogate (invalid in UTF-8)
      b = Buffer.concat([orig.subarray(0, at), Buffer.from([0xed, 0xa0, 0x80]), orig.subarray(at)]);
      break;
    case 8: // whitespace padding (valid)
      b = Buffer.concat([Buffer.from(' \n\t'), orig, Buffer.from('\r\n ')]);
      break;
    default: // overlong encoding of '{'
      b = Buffer.concat([Buffer.from([0xc1, 0xbb]), orig.subarray(1)]);
  }
  // Whitespace padding keeps the request valid (and its expectation); any other corruption is judged by the oracle.
  if (how === 8) return { ...f, cat: 'corrupted', frames: [b] };
  const keep = { baseOp: f.op, ...(f.ownSession !== undefined ? { ownSession: f.ownSession } : {}), ...(f.edgeReset ? { edgeReset: true } : {}), ...(f.edgeSnapshot ? { edgeSnapshot: true } : {}) };
  return { cat: 'corrupted', frames: [b], codes: null, op: null, ...keep };
});

/** Random bytes and random JSON (the oracle decides). */
const randomTemplate: fc.Arbitrary<Template> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 400 }).map((u): Template => () => ({ cat: 'random_bytes', frames: [Buffer.from(u)], codes: null, op: null })),
  (fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>).map((v): Template => () => ({ cat: 'random_json', frames: [Buffer.from(JSON.stringify(v) ?? 'null')], codes: null, op: null })),
  fc.tuple(fc.constantFrom<Op>(...OPS), fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 4 })).map(([op, extra]): Template => () => ({ cat: 'random_fields', frames: [Buffer.from(JSON.stringify({ v: 1, op, ...extra }))], codes: null, op: null })),
  fc.string({ unit: 'binary', maxLength: 200 }).map((s): Template => () => ({ cat: 'random_text', frames: [Buffer.from(s)], codes: null, op: null })),
  fc.integer({ min: 1000, max: 200_000 }).map((depth): Template => () => ({ cat: 'deep_nesting', frames: [Buffer.from(`{"v":1,"op":"hello","x":${'['.repeat(depth)}${']'.repeat(depth)}}`)], codes: ['invalid_request'], op: null })),
  fc.integer({ min: 1000, max: 200_000 }).map((depth): Template => () => ({ cat: 'deep_nesting', frames: [Buffer.from('['.repeat(depth) + ']'.repeat(depth))], codes: ['invalid_request'], op: null })),
);

/** Frame-level mistakes: extra frames, empty frames, envelopes. */
const framingTemplate: fc.Arbitrary<Template> = fc.tuple(validTemplate, fc.nat({ max: 6 }), fc.integer({ min: 2, max: 80 })).map(([base, how, n]): Template => (ctx) => {
  const f = base(ctx);
  if (!('codes' in f)) return f;
  const p = f.frames[0] as Buffer;
  let frames: Buffer[];
  switch (how) {
    case 0: // REQ-style delimiter (valid)
      return { ...f, cat: 'framing_valid', frames: [Buffer.alloc(0), p] };
    case 1: // brokered envelope (valid)
      return { ...f, cat: 'framing_valid', frames: [Buffer.from('peer-1'), Buffer.from('peer-2'), Buffer.alloc(0), p] };
    case 2:
      frames = [p, Buffer.from('extra')];
      break;
    case 3:
      frames = Array.from({ length: n }, () => p);
      break;
    case 4:
      frames = [Buffer.alloc(0)];
      break;
    case 5:
      frames = [Buffer.alloc(0), Buffer.alloc(0), p];
      break;
    default: // too many routing frames
      frames = [...Array.from({ length: n }, (_, i) => Buffer.from(`hop${i}`)), Buffer.alloc(0), p];
  }
  return { cat: 'framing', frames, codes: null, op: null, ...(f.ownSession !== undefined ? { ownSession: f.ownSession } : {}) };
});

/** Oversized payloads: answered (<= 4x the limit) or dropped by ZeroMQ with a disconnect (> 4x). */
const sizeTemplate: fc.Arbitrary<Template> = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 3 * 2 ** 20 }).map((extra): Template => (ctx) => ({ cat: 'oversize', frames: [Buffer.alloc(ctx.maxBytes + extra, 0x20)], codes: ['message_too_large'], op: null })) },
  { weight: 2, arbitrary: fc.constant<Template>((ctx) => ({ cat: 'at_limit', frames: [Buffer.concat([Buffer.from('{"v":1,"op":"hello","id":"'), Buffer.alloc(ctx.maxBytes - 30, 0x61), Buffer.from('"}')]).subarray(0, ctx.maxBytes)], codes: null, op: null })) },
  { weight: 1, arbitrary: fc.constant<Template>((ctx) => ({ cat: 'oversize_dropped', special: 'oversize_dropped', frames: [Buffer.alloc(4 * ctx.maxBytes + 1, 0x20)] })) },
);

/**
 * Valid requests sent on a throwaway socket closed right away (the reply goes nowhere). Only requests that
 * cannot change what the fuzzer tracks about its sessions (whether an episode started with edge options).
 */
const hitAndRun: fc.Arbitrary<Template> = fc
  .tuple(validIdArb, fc.nat(), actionArb, fc.constantFrom('hello', 'step', 'snapshot', 'batch'))
  .map(([id, k, action, what]): Template => (ctx) => {
    const session = ctx.own(k);
    const req: Obj =
      what === 'hello'
        ? { v: 1, op: 'hello' }
        : what === 'step'
          ? { v: 1, op: 'step', session, action }
          : what === 'snapshot'
            ? { v: 1, op: 'snapshot', session }
            : { v: 1, op: 'step_batch', steps: [{ session, action }, { session: ctx.unknown(k), action }] };
    return { cat: 'hit_and_run', special: 'hit_and_run', frames: [Buffer.from(JSON.stringify(withId(req, id)))] };
  });

/** The whole mix. */
export const templateArb: fc.Arbitrary<Template> = fc.oneof(
  { weight: 30, arbitrary: validTemplate },
  { weight: 30, arbitrary: mutatedTemplate },
  { weight: 12, arbitrary: corruptedTemplate },
  { weight: 14, arbitrary: randomTemplate },
  { weight: 8, arbitrary: framingTemplate },
  { weight: 1, arbitrary: sizeTemplate },
  { weight: 1, arbitrary: hitAndRun },
);

// ---------------------------------------------------------------------------------------------------------
// Runner

/** Options of `fuzzProtocol`. */
export interface ProtocolFuzzOptions {
  frames: number;
  seed?: number;
  /** Requests in flight on the fuzz socket (default 32). */
  window?: number;
  /** Steps of the control episode (default 400). */
  controlSteps?: number;
  /** Fuzz-owned sessions (default 4). */
  ownSessions?: number;
  /** Per-reply wait before declaring the server stuck (default 30 s). */
  replyTimeoutMs?: number;
}

/** A frame whose reply broke the rules. */
export interface ProtocolViolation {
  cat: string;
  problem: string;
  sent: string;
  reply: string;
}

/** The protocol fuzzing report. */
export interface ProtocolFuzzReport {
  frames: number;
  seed: number;
  answered: number;
  unanswered_by_design: { oversize_dropped: number; hit_and_run: number };
  by_category: Record<string, number>;
  reply_codes: Record<string, number>;
  violations: number;
  examples: ProtocolViolation[];
  internal_errors: number;
  own_sessions_lost: number;
  /**
   * Known issue (lead-owned): a session reset with a start date or horizon the environment accepts but the
   * snapshot schema refuses (e.g. start_date 0001-01-01: startTime < 0) cannot be restored from its own
   * snapshot (bad_snapshot). Counted here instead of as violations.
   */
  edge_snapshot_roundtrip_refused: number;
  server: { alive: boolean; hello_after: boolean; sessions_after: number; counters: unknown; rss_mib_after: number; stderr_tail: string };
  control: { steps: number; identical_to_in_process: boolean; errors: string[] };
  elapsed_s: number;
  frames_per_sec: number;
}

function describe(frames: readonly Buffer[]): string {
  return JSON.stringify(frames.map((f) => (f.length > 160 ? `${f.subarray(0, 160).toString('latin1')}...(${f.length} bytes)` : f.toString('latin1'))));
}

interface InFlight {
  f: Frame;
  envelope: Buffer[];
  codes: readonly Code[] | null;
  id: string | number | null;
  op: Op | null;
}

/** Run the protocol fuzzer against a fresh server child. */
export async function fuzzProtocol(opts: ProtocolFuzzOptions): Promise<ProtocolFuzzReport> {
  const seed = opts.seed ?? 6;
  const window = opts.window ?? 32;
  const nOwn = opts.ownSessions ?? 4;
  const controlSteps = opts.controlSteps ?? 400;
  const replyTimeoutMs = opts.replyTimeoutMs ?? 30_000;
  const maxBytes = 1 << 20;
  const server = await ServerChild.start({ maxSessions: 256, maxMessageBytes: maxBytes, idleTimeoutMs: 0 });
  const rep: ProtocolFuzzReport = {
    frames: 0,
    seed,
    answered: 0,
    unanswered_by_design: { oversize_dropped: 0, hit_and_run: 0 },
    by_category: {},
    reply_codes: {},
    violations: 0,
    examples: [],
    internal_errors: 0,
    own_sessions_lost: 0,
    edge_snapshot_roundtrip_refused: 0,
    server: { alive: false, hello_after: false, sessions_after: -1, counters: null, rss_mib_after: 0, stderr_tail: '' },
    control: { steps: controlSteps, identical_to_in_process: false, errors: [] },
    elapsed_s: 0,
    frames_per_sec: 0,
  };
  const t0 = performance.now();
  const sock = new Dealer({ linger: 0, receiveTimeout: replyTimeoutMs, sendTimeout: replyTimeoutMs });
  sock.connect(server.endpoint);
  const control = new Client({ endpoint: server.endpoint, timeoutMs: 120_000 });
  try {
    // Fuzz-owned sessions and their snapshots, through the fuzz socket itself.
    const call = async (req: Obj): Promise<Reply> => {
      await sock.send(JSON.stringify(req));
      const fr = await sock.receive();
      return JSON.parse((fr[fr.length - 1] as Buffer).toString('utf8')) as Reply;
    };
    const own: string[] = [];
    const snaps: Obj[] = [];
    const snapsEdge: boolean[] = [];
    const edgeSessions = new Set<string>();
    const dead = new Set<string>();
    const newOwn = async (i: number): Promise<void> => {
      const r = await call({ v: 1, op: 'reset', seed: 100 + i });
      if (!r.ok) throw new Error(`cannot create a fuzz session: ${r.error.message}`);
      const sid = (r.result as { session: string }).session;
      for (const a of ['task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1,Emp_2', 'task dispatch --task-id Task-1', 'sim resume']) await call({ v: 1, op: 'step', session: sid, action: a });
      const s = await call({ v: 1, op: 'snapshot', session: sid });
      if (!s.ok) throw new Error('cannot snapshot a fuzz session');
      own[i] = sid;
      snaps[i] = (s.result as { snapshot: Obj }).snapshot;
      snapsEdge[i] = false;
    };
    for (let i = 0; i < nOwn; i++) await newOwn(i);
    let unknownSerial = 0;
    const ctx: Ctx = {
      own: (k) => own[k % nOwn] as string,
      unknown: (salt) => {
        unknownSerial++;
        const forms = [`s${1_000_000 + ((salt + unknownSerial) % 1_000_000)}`, `z${salt}`, 'S1', ' s1', 's1 ', `s${'9'.repeat(60)}`, 'x'.repeat(64), 'ŝ1', '\u0000'];
        return forms[(salt + unknownSerial) % forms.length] as string;
      },
      snapshot: (k) => snaps[k % nOwn] as Obj,
      snapshotIsEdge: (k) => snapsEdge[k % nOwn] === true,
      maxBytes,
    };

    // The control episode runs concurrently with the fuzzing.
    const controlDriver = remoteDriver(control);
    const controlRun = runPolicy(controlDriver, { seed: 4242, steps: controlSteps, maxSteps: 150 }).catch((e: unknown) => {
      rep.control.errors.push(e instanceof Error ? e.message : String(e));
      return null;
    });

    const inflight: InFlight[] = [];
    const violation = (x: InFlight, problem: string, reply: string): void => {
      rep.violations++;
      if (rep.examples.length < 20) rep.examples.push({ cat: x.f.cat, problem, sent: describe(x.f.frames), reply: reply.slice(0, 400) });
    };
    const check = async (): Promise<void> => {
      const x = inflight.shift() as InFlight;
      let got: Buffer[];
      try {
        got = await sock.receive();
      } catch (e) {
        violation(x, `no reply within ${replyTimeoutMs} ms (${(e as Error).message})`, '');
        throw new Error(`the server stopped answering (${x.f.cat}): ${describe(x.f.frames)}`);
      }
      rep.answered++;
      const envOk = got.length === x.envelope.length + 1 && x.envelope.every((e, i) => e.equals(got[i] as Buffer));
      const last = got[got.length - 1] as Buffer;
      if (!envOk) violation(x, `reply frames ${describe(got.slice(0, -1))} do not echo the envelope ${describe(x.envelope)}`, last.toString('utf8'));
      let reply: Reply;
      try {
        reply = JSON.parse(last.toString('utf8')) as Reply;
      } catch {
        violation(x, 'reply is not JSON', last.toString('latin1'));
        return;
      }
      const code = reply.ok ? 'ok' : reply.error.code;
      rep.reply_codes[code] = (rep.reply_codes[code] ?? 0) + 1;
      // An ok reply is checked against the schema of the op it answers (for requests the oracle could not
      // type, the op the request named); an error reply against the error schema.
      let answers: Op | null = x.op;
      if (reply.ok && answers === null) {
        try {
          const v = JSON.parse((x.f.frames[x.f.frames.length - 1] as Buffer).toString('utf8')) as { op?: unknown };
          if (typeof v.op === 'string' && (OPS as readonly string[]).includes(v.op)) answers = v.op as Op;
        } catch {
          // not JSON: an ok reply is wrong anyway and fails the check below
        }
      }
      const problem = checkReply(reply.ok ? answers : null, reply);
      if (problem !== null) violation(x, `reply fails the schema: ${problem}`, last.toString('utf8'));
      if (JSON.stringify(reply.id) !== JSON.stringify(x.id)) violation(x, `reply id ${JSON.stringify(reply.id)} != expected ${JSON.stringify(x.id)}`, last.toString('utf8'));
      if (code === 'internal') {
        rep.internal_errors++;
        if (x.f.ownSession !== undefined) dead.add(x.f.ownSession);
      }
      const owned = x.f.ownSession !== undefined && dead.has(x.f.ownSession) && code === 'unknown_session';
      const knownIssue = x.f.edgeSnapshot === true && code === 'bad_snapshot';
      if (knownIssue) rep.edge_snapshot_roundtrip_refused++;
      const sessionOp = x.f.op ?? x.f.baseOp ?? null;
      if (reply.ok && x.f.ownSession !== undefined && (sessionOp === 'reset' || sessionOp === 'restore')) {
        if (x.f.edgeReset === true || x.f.edgeSnapshot === true) edgeSessions.add(x.f.ownSession);
        else edgeSessions.delete(x.f.ownSession);
      }
      if (x.codes !== null && !x.codes.includes(code) && !owned && !knownIssue) violation(x, `code ${code}, expected one of ${x.codes.join(', ')}: ${reply.ok ? '' : reply.error.message}`, last.toString('utf8'));
      if (reply.ok && x.f.entries !== undefined) {
        const results = (reply.result as { results: { ok: boolean; error?: { code: string } }[] }).results;
        if (results.length !== x.f.entries.length) violation(x, `batch has ${results.length} results for ${x.f.entries.length} entries`, last.toString('utf8').slice(0, 400));
        results.forEach((it, i) => {
          const c = it.ok ? 'ok' : it.error?.code ?? '?';
          if (!(x.f.entries?.[i] ?? []).includes(c)) violation(x, `batch entry ${i}: ${c}`, JSON.stringify(it).slice(0, 300));
        });
      }
      if (reply.ok && x.f.keepSnapshot !== undefined) {
        const s = (reply.result as { snapshot: Obj }).snapshot;
        if (last.length < maxBytes / 2) {
          snaps[x.f.keepSnapshot % nOwn] = s;
          snapsEdge[x.f.keepSnapshot % nOwn] = x.f.ownSession !== undefined && edgeSessions.has(x.f.ownSession);
        }
      }
    };

    const chunk = 500;
    for (let done = 0; done < opts.frames; ) {
      const templates = fc.sample(templateArb, { seed: seed * 1_000_003 + done, numRuns: Math.min(chunk, opts.frames - done) });
      for (const t of templates) {
        done++;
        rep.frames++;
        // Replace fuzz sessions that died (an internal error closes the session) before naming them again.
        if (dead.size > 0) {
          while (inflight.length > 0) await check();
          for (let i = 0; i < nOwn; i++) {
            if (dead.has(own[i] as string)) {
              rep.own_sessions_lost++;
              await newOwn(i);
            }
          }
          dead.clear();
        }
        const f = t(ctx);
        rep.by_category[f.cat] = (rep.by_category[f.cat] ?? 0) + 1;
        if ('special' in f) {
          const throwaway = new Dealer({ linger: 0, receiveTimeout: 200 });
          throwaway.connect(server.endpoint);
          await throwaway.send(f.frames);
          if (f.special === 'oversize_dropped') {
            rep.unanswered_by_design.oversize_dropped++;
            try {
              await throwaway.receive();
              rep.violations++;
              if (rep.examples.length < 20) rep.examples.push({ cat: f.cat, problem: 'a frame above 4x the limit was answered', sent: describe(f.frames), reply: '' });
            } catch {
              // expected: ZeroMQ dropped it and disconnected the peer
            }
          } else {
            rep.unanswered_by_design.hit_and_run++;
          }
          throwaway.close();
          continue;
        }
        const { envelope, payload, tooMany } = splitForDealer(f.frames);
        let codes: readonly Code[] | null = f.codes;
        let id: string | number | null = null;
        let op: Op | null = f.op;
        let env = envelope;
        if (tooMany) {
          codes = ['bad_frames'];
          env = [];
          op = null;
        } else if (payload.length !== 1) {
          codes = ['bad_frames'];
          op = null;
        } else {
          const o = payloadOracle(payload[0] as Buffer, maxBytes);
          id = o.id;
          if (!('deeper' in o)) {
            codes = o.codes;
            op = null;
          } else if (codes === null) {
            op = o.op;
          }
        }
        inflight.push({ f, envelope: env, codes, id, op });
        await sock.send(f.frames);
        if (inflight.length >= window) await check();
      }
    }
    while (inflight.length > 0) await check();
    const controlResult = await withTimeout(controlRun, 600_000, 'control episode');
    const reference = await runPolicy(localDriver(), { seed: 4242, steps: controlSteps, maxSteps: 150 });
    rep.control.identical_to_in_process = controlResult !== null && controlResult.hash === reference.hash;
    const hello = await call({ v: 1, op: 'hello' });
    rep.server.hello_after = hello.ok;
    for (const sid of own) await call({ v: 1, op: 'close', session: sid });
    if (controlDriver.session !== null) await control.closeSession(controlDriver.session);
  } finally {
    sock.close();
    await control.close();
    rep.server.alive = server.alive;
    if (server.alive) {
      const st = await server.stats();
      rep.server.sessions_after = st.sessions;
      rep.server.counters = st.counters;
      rep.server.rss_mib_after = st.rss_mib;
    }
    rep.server.stderr_tail = server.stderr.slice(-1500);
    await server.stop();
  }
  rep.elapsed_s = round((performance.now() - t0) / 1000, 2);
  rep.frames_per_sec = round(rep.frames / Math.max(1e-9, rep.elapsed_s), 0);
  return rep;
}

