/**
 * `decodePayload` (src/protocol/protocol.ts) reads the `step` and `step_batch` requests the ycgym clients write without
 * decoding and parsing their text (`plainRequest`): over random payloads near those shapes (any id, session and action
 * texts, any number of entries, and every byte changed, added or removed) its outcome is the one of decoding the UTF-8
 * and `JSON.parse`: the same value with the same keys in the same order, or the same error reply. Requests one after
 * another with other or the same texts (the fast path keeps the last ones) decode as alone.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodePayload, parsePayload, requestValidator, tooLargeReply, type Decoded } from '../../src/protocol/protocol.js';
import type { Op } from '../../src/protocol/ops.js';

/** What decoding `payload` gave before the fast path: the size check, then UTF-8 and `JSON.parse` (`parsePayload`). */
function reference(payload: Uint8Array, maxBytes: number): Decoded {
  return payload.length > maxBytes ? { ok: false, reply: tooLargeReply(payload.length, maxBytes) } : parsePayload(payload);
}

/** `base` with byte `i` set to `byte`, `byte` inserted before it, it deleted, or everything from it cut (`how`). */
function mutated(base: Buffer, i: number, byte: number, how: 'set' | 'insert' | 'delete' | 'cut'): Buffer {
  if (how === 'set') return Buffer.from(base.map((b, j) => (j === i ? byte : b)));
  if (how === 'insert') return Buffer.concat([base.subarray(0, i), Buffer.from([byte]), base.subarray(i)]);
  if (how === 'delete') return Buffer.concat([base.subarray(0, i), base.subarray(i + 1)]);
  return base.subarray(0, i);
}

/** Counts of the requests read as `checked` (the fast path, and the validator not run again), and of the others. */
const seen = { checked: 0, unchecked: 0 };

/**
 * The same outcome, keys in the same order (`toEqual` ignores the order); one said `checked` is a request its op's
 * validator accepts, and a request read without parsing (the bytes the clients write) that the validator accepts is said
 * `checked` (else it would be validated again: slower, not wrong; the step and step_batch payloads here are such).
 */
function expectSame(payload: Uint8Array, maxBytes = 1 << 20, plain = false): void {
  const decoded = decodePayload(payload, maxBytes);
  const want = reference(payload, maxBytes);
  const checked = decoded.ok && decoded.checked === true;
  const got: Decoded = decoded.ok ? { ok: true, value: decoded.value } : decoded;
  expect(got).toEqual(want);
  expect(JSON.stringify(got)).toBe(JSON.stringify(want));
  if (want.ok && typeof want.value === 'object' && want.value !== null && !Array.isArray(want.value)) {
    const op = (want.value as { op?: unknown }).op;
    if (op === 'step' || op === 'step_batch') {
      const valid = requestValidator(op as Op)(want.value);
      if (checked) expect(valid).toBe(true);
      if (plain && valid) expect(checked).toBe(true);
    }
  }
  if (checked) seen.checked++;
  else seen.unchecked++;
  if (got.ok && want.ok && typeof want.value === 'object' && want.value !== null) {
    expect(Object.getPrototypeOf(got.value)).toBe(Object.getPrototypeOf(want.value));
    expect(Object.keys(got.value as object)).toEqual(Object.keys(want.value as object));
  }
}

/** A step request as the Python client writes it (`Client._send_step`: `json.dumps` of the texts, ASCII escapes). */
function stepBytes(id: string, session: string, action: string, v = '1'): Buffer {
  const ascii = (s: string): string => JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return Buffer.from(`{"v":${v},"id":${id},"op":"step","session":${ascii(session)},"action":${ascii(action)}}`, 'utf8');
}

/** A step_batch request as the Python client writes it (`Client._request_bytes`: `json.dumps`, ASCII escapes). */
function batchBytes(id: string, steps: readonly (readonly [string, string])[], tail = ''): Buffer {
  const text = JSON.stringify({ v: 1, id: 0, op: 'step_batch', steps: steps.map(([session, action]) => ({ session, action })) })
    .replace('"id":0', `"id":${id}`)
    .replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return Buffer.from(text.slice(0, -1) + tail + '}', 'utf8');
}

const texts = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('company status', 's4Cq0nT3tN8Yj1k2PzRm7Q', '', ' ', '"', '\\', '\u0000', 'é', '\u{1F600}', 'a'.repeat(1024), 'b'.repeat(1025)),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const ids = fc.oneof(
  fc.nat().map(String),
  fc.constantFrom('0', '00', '01', '-1', '1.5', '1e3', '999999999999999', '1000000000000000', '9007199254740993', '1 ', ' 1', 'null', '"x"'),
);

describe('decodePayload', () => {
  it('reads step requests as JSON.parse does, the same texts again or others', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(ids, texts, texts, fc.constantFrom('1', '2', '01')), { minLength: 1, maxLength: 6 }), (reqs) => {
        for (const [id, session, action, v] of reqs) {
          const plain = v === '1' && /^(0|[1-9][0-9]{0,14})$/.test(id) && [session, action].every((t) => /^[\x20-\x7e]{0,1024}$/.test(t) && !/["\\]/.test(t));
          expectSame(stepBytes(id, session, action, v), undefined, plain);
          expectSame(stepBytes(id, session, action, v), undefined, plain); // again: the kept texts
        }
      }),
      { numRuns: 400 },
    );
  });

  it('reads a step request with any byte changed, added or removed as JSON.parse does', () => {
    fc.assert(
      fc.property(ids, texts, texts, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'delete', 'cut'), (id, session, action, at, byte, how) => {
        const base = stepBytes(id, session, action);
        const i = at % (base.length + 1);
        const p = mutated(base, i, byte, how);
        expectSame(stepBytes(id, session, action)); // the texts kept from the intact request first
        expectSame(p);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads step_batch requests as JSON.parse does, the same texts again or others', () => {
    const entries = fc.array(fc.tuple(texts, texts), { maxLength: 300 });
    const tails = fc.constantFrom('', ',"encoding":"binary"', ',"encoding":"json"', ',"encoding":"binary","x":1', ' ');
    fc.assert(
      fc.property(fc.array(fc.tuple(ids, entries, tails), { minLength: 1, maxLength: 4 }), (reqs) => {
        for (const [id, steps, tail] of reqs) {
          const plain =
            (tail === '' || tail === ',"encoding":"binary"') &&
            /^(0|[1-9][0-9]{0,14})$/.test(id) &&
            steps.every((e) => e.every((t) => /^[\x20-\x7e]{0,1024}$/.test(t) && !/["\\]/.test(t)));
          expectSame(batchBytes(id, steps, tail), undefined, plain);
          expectSame(batchBytes(id, steps, tail), undefined, plain); // again: the kept texts
        }
      }),
      { numRuns: 200 },
    );
    // Many entries alike (the texts kept for the first 256 entries, the others made each time).
    const many = Array.from({ length: 600 }, (_, i): [string, string] => [`s${i % 7}`, i % 3 === 0 ? 'company status' : `task list ${i}`]);
    expectSame(batchBytes('5', many), undefined, true);
    expectSame(batchBytes('6', many.map(([s, a]) => [a, s])), undefined, true);
  });

  it('says checked exactly when the validator accepts a request read without parsing: session lengths, number of entries', () => {
    const before = { ...seen };
    for (const n of [0, 1, 2, 63, 64, 65, 200]) {
      const session = 's'.repeat(n);
      expectSame(stepBytes('1', session, 'company status'), undefined, true);
      expectSame(batchBytes('2', [['s1', 'a'], [session, 'b']]), undefined, true);
      expectSame(batchBytes('3', [[session, 'b']], ',"encoding":"binary"'), undefined, true);
    }
    for (const n of [0, 1, 4095, 4096, 4097]) expectSame(batchBytes('4', Array.from({ length: n }, (_, i): [string, string] => [`s${i}`, 'company status'])), 1 << 24, true);
    // Some said checked, some not (the validator refuses them: validated, and refused with its message).
    expect(seen.checked - before.checked).toBeGreaterThan(10);
    expect(seen.unchecked - before.unchecked).toBeGreaterThan(5);
  });

  it('reads a step_batch request with any byte changed, added or removed as JSON.parse does', () => {
    fc.assert(
      fc.property(ids, fc.array(fc.tuple(texts, texts), { maxLength: 4 }), fc.boolean(), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom('set', 'insert', 'delete', 'cut'), (id, steps, binary, at, byte, how) => {
        const base = batchBytes(id, steps, binary ? ',"encoding":"binary"' : '');
        const i = at % (base.length + 1);
        const p = mutated(base, i, byte, how);
        expectSame(base);
        expectSame(p);
      }),
      { numRuns: 3000 },
    );
  });

  it('reads other shapes, whitespace and orders of a step request as JSON.parse does', () => {
    const cases = [
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company status"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company status"} ',
      ' {"v":1,"id":7,"op":"step","session":"s1","action":"company status"}',
      '{"v":1, "id":7,"op":"step","session":"s1","action":"company status"}',
      '{"v":1,"id":7,"op":"step","action":"company status","session":"s1"}',
      '{"id":7,"v":1,"op":"step","session":"s1","action":"company status"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company status","extra":1}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company status"}}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company status"',
      '{"v":1,"id":7,"op":"steps","session":"s1","action":"company status"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"company\\u0020status"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"a\tb"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"caf\u00e9"}',
      '{"v":1,"id":"7","op":"step","session":"s1","action":"company status"}',
      '{"v":1,"id":7,"op":"step","session":7,"action":"company status"}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":null}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":""}',
      '{"v":1,"id":7,"op":"step","session":"","action":""}',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"x"}\u0000',
      '{"v":1,"id":7,"op":"step","session":"s1","action":"' + 'z'.repeat(70_000) + '"}',
      '{"v":1,"id":' + '9'.repeat(400) + ',"op":"step","session":"s1","action":"x"}',
      '{"v":1,"id":3,"op":"step_batch","steps":[]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[],"encoding":"binary"}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"}]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"},]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"}{"session":"s1","action":"a"}]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"action":"a","session":"s1"}]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a","x":1}]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":7}]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[["s1","a"]]}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"}],"encoding":"binary"',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"}]',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"a"}',
      '{"v":1,"id":3,"op":"step_batch","steps":{}}',
      '{"v":1,"id":3,"op":"step_batch","steps":[{"session":"s1","action":"' + 'y'.repeat(2000) + '"}]}',
      '{"v":1,"id":',
      '{',
      '',
    ];
    for (const c of cases) expectSame(Buffer.from(c, 'utf8'));
    expectSame(Buffer.from([0x7b, 0xff]));
    expectSame(Buffer.from(cases[0] as string, 'utf8'), 10); // above the size limit
  });
});
