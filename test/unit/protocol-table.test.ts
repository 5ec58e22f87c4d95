/**
 * The op table (src/protocol/ops.ts) against the one schema (schema/protocol.schema.json) and a live handler:
 * per op, the schema accepts a valid request and rejects invalid ones (a missing required field, an unknown
 * field, each field with a value of the wrong type), the server answers the valid request, and the reply
 * validates against the op's reply schema. The limits of src/protocol/limits.ts are the schema's numbers.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkReply,
  ERROR_CODES,
  getValidators,
  MAX_BATCH,
  MAX_PRESET_NAME_CHARS,
  MAX_SLOTS,
  MAX_REQUEST_ID_CHARS,
  MAX_SESSION_ID_CHARS,
  OP_TABLE,
  OPS,
  protocolSchemaPath,
  type Op,
  type OpRequest,
  type Reply,
} from '../../src/protocol/protocol.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { protocolHandler } from '../helpers/protocol-handler.js';

type Json = Record<string, unknown>;
const schema = JSON.parse(readFileSync(protocolSchemaPath(), 'utf8')) as { $defs: Record<string, Json> };
const defs = schema.$defs;

const handler = (): ProtocolHandler => protocolHandler({ maxSessions: 16, maxMessageBytes: 8 << 20 });

function result(r: Reply): Json {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.result as Json;
}

/**
 * A value of another JSON type than `v` (so a schema typing the field rejects it); for the fields that take a
 * string or an integer (`id`, and `action`: command text or a Discrete action index) a boolean.
 */
function wrongType(k: string, v: unknown): unknown {
  if (k === 'id' || k === 'action') return true;
  if (typeof v === 'string') return 12345;
  if (typeof v === 'number') return 'x';
  if (typeof v === 'boolean') return 'x';
  return 'x';
}

describe('the op table and the schema are one contract', () => {
  it('lists every op the schema has, in the schema order, with request and reply definitions', () => {
    const branches = (defs['Request']!['oneOf'] as { $ref: string }[]).map((b) => b.$ref.replace('#/$defs/', ''));
    const ops = branches.map((b) => ((defs[b]!['properties'] as Json)['op'] as { const: string }).const);
    expect(ops).toEqual([...OPS]);
    for (const op of OPS) {
      expect(branches[OPS.indexOf(op)]).toBe(`${OP_TABLE[op].def}Request`);
      expect(defs[`${OP_TABLE[op].def}Reply`], op).toBeDefined();
    }
  });

  it('has the schema error codes', () => {
    expect(defs['ErrorCode']!['enum']).toEqual([...ERROR_CODES]);
  });

  it('holds the limits the schema checks', () => {
    const steps = (defs['StepBatchRequest']!['properties'] as Json)['steps'] as Json;
    expect(steps['maxItems']).toBe(MAX_BATCH);
    expect(defs['RequestId']!['maxLength']).toBe(MAX_REQUEST_ID_CHARS);
    expect(defs['SessionId']!['maxLength']).toBe(MAX_SESSION_ID_CHARS);
    expect(defs['PresetName']!['maxLength']).toBe(MAX_PRESET_NAME_CHARS);
    // Every market_slots / task_slots bound in the schema (the reset options, the Discrete spec) is MAX_SLOTS.
    const bounds: unknown[] = [];
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== 'object') return;
      for (const [k, x] of Object.entries(v)) {
        if ((k === 'market_slots' || k === 'task_slots') && x !== null && typeof x === 'object' && 'maximum' in x) bounds.push((x as Json)['maximum']);
        walk(x);
      }
    };
    walk(schema);
    expect(bounds.length).toBeGreaterThanOrEqual(4);
    expect(new Set(bounds)).toEqual(new Set([MAX_SLOTS]));
  });
});

describe('a test per op', () => {
  const h = handler();
  const requests = {} as { [O in Op]: OpRequest<O> };
  const replies = {} as Record<Op, Reply>;

  beforeAll(() => {
    // Each op's valid request, sent in an order that gives the later ones a session and a snapshot.
    const send = <O extends Op>(req: OpRequest<O>): Json => {
      (requests as Record<Op, unknown>)[req.op] = req;
      const reply = h.handleValue(req).reply;
      replies[req.op] = reply;
      return result(reply);
    };
    send({ v: 1, id: 1, op: 'hello' });
    const s = send({ v: 1, id: 'r', op: 'reset', seed: 7, preset: 'default', options: { max_steps: 50 } })['session'] as string;
    send({ v: 1, id: 3, op: 'step', session: s, action: 'company status' });
    send({ v: 1, id: 4, op: 'step_batch', steps: [{ session: s, action: 'market browse' }, { session: 'nope', action: 'x' }] });
    const snap = send({ v: 1, id: 5, op: 'snapshot', session: s })['snapshot'];
    const s2 = send({ v: 1, id: 6, op: 'restore', snapshot: snap as never })['session'] as string;
    send({ v: 1, id: 7, op: 'close', session: s2 });
    const t = send({ v: 1, id: 8, op: 'turn_reset', seed: 3, tools: 'all', detail: true })['session'] as string;
    send({ v: 1, id: 9, op: 'turn_step', session: t, action: { commands: ['yc-bench company status'] }, detail: true });
    send({ v: 1, id: 10, op: 'turn_messages', session: t });
    const tsnap = send({ v: 1, id: 11, op: 'turn_snapshot', session: t })['snapshot'];
    send({ v: 1, id: 12, op: 'turn_restore', snapshot: tsnap as never, detail: true });
    send({ v: 1, id: 13, op: 'turn_time_series', session: t });
  });

  for (const op of OPS) {
    describe(op, () => {
      it('the schema accepts the valid request; the server answers it; the reply validates', () => {
        const validate = getValidators().requests[op];
        expect(validate(requests[op]), JSON.stringify(validate.errors)).toBe(true);
        const reply = replies[op];
        expect(reply.ok, JSON.stringify(reply).slice(0, 300)).toBe(true);
        expect(checkReply(op, reply)).toBeNull();
        expect(reply.id).toBe((requests[op] as { id?: unknown }).id);
      });

      it('the schema rejects a missing required field, an unknown field, and each field of a wrong type', () => {
        const validate = getValidators().requests[op];
        const valid = requests[op] as unknown as Json;
        const bad: Json[] = [{ ...valid, unknown_field: 1 }, { ...valid, v: 2 }, { ...valid, op: 'other' }];
        for (const k of defs[`${OP_TABLE[op].def}Request`]!['required'] as string[]) {
          const { [k]: _, ...rest } = valid;
          bad.push(rest);
        }
        for (const [k, v] of Object.entries(valid)) if (k !== 'v' && k !== 'op') bad.push({ ...valid, [k]: wrongType(k, v) });
        for (const b of bad) {
          expect(validate(b), JSON.stringify(b).slice(0, 200)).toBe(false);
          const r = h.handleValue(b).reply;
          expect(r.ok).toBe(false);
          if (!r.ok) expect(['invalid_request', 'unsupported_version', 'unknown_op']).toContain(r.error.code);
        }
      });

      it('the reply schema rejects a reply of another op', () => {
        const other = OPS.find((o) => o !== op && OP_TABLE[o].def !== OP_TABLE[op].def && checkReply(op, replies[o]) !== null);
        expect(other, `some other op's reply is not a valid ${op} reply`).toBeDefined();
      });
    });
  }
});
