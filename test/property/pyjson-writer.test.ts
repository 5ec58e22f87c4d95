/**
 * The one-pass Python JSON writer (`pyJsonDumps`, with its key, float-repr and frozen-value memos) prints exactly
 * what the writer it replaced prints (test/helpers/pyjson-oracle.ts), over random values and real command outputs;
 * escaped (`pyJsonAppend`'s `escape`), exactly what JSON.stringify makes of that text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { FLOAT_KEYS, FLOAT_MAP_KEYS, memoRendered, PyFloat, pyJsonAppend, pyJsonDumps, type Out } from '../../src/sim/py/pyjson.js';
import { Simulation } from '../../src/sim/simulation.js';
import { oraclePyJsonDumps } from '../helpers/pyjson-oracle.js';
import { BufferSink } from '../helpers/text-sink.js';

const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...FLOAT_KEYS, ...FLOAT_MAP_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom('task_id', 'tasks', 'count', 'name', 'research', 'error', '') },
  { weight: 2, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
const num = fc.oneof(
  fc.integer({ min: -1e6, max: 1e6 }),
  fc.double(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1e21, -1e22, 2 ** 53, 2 ** 53 + 2, 1e-7, 5e-324, 0.1, 899, 1e16),
  fc.integer({ min: -1000, max: 1000 }).map((n) => n / 8),
);
const leaf: fc.Arbitrary<Out> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  num,
  num.map((x) => new PyFloat(x)),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const { value } = fc.letrec<{ value: Out }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(key, tie('value'), { maxKeys: 6 }) as fc.Arbitrary<Out>,
  ),
}));
const indent = fc.constantFrom<number | null>(2, null, 0, 4);

describe('pyJsonDumps equals the previous writer', () => {
  it('random values, every indent', () => {
    fc.assert(
      fc.property(value, indent, (v, ind) => {
        expect(pyJsonDumps(v, ind)).toBe(oraclePyJsonDumps(v, ind));
      }),
      { numRuns: 3000 },
    );
  });

  it('memoised frozen values print the same at any depth, indent and float mode, repeatedly', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), fc.array(fc.tuple(key, fc.nat(3), indent), { minLength: 1, maxLength: 6 }), (shared, placements) => {
        const frozen = shared.map((v) => memoRendered(structuredClone(v)));
        for (const [k, depth, ind] of placements) {
          // The shared values nested `depth` levels deep under key `k` (which may be a float or float-map key).
          let doc: Out = { [k]: frozen, other: frozen[0] as Out };
          for (let i = 0; i < depth; i++) doc = [doc, { [k]: doc }];
          expect(pyJsonDumps(doc, ind)).toBe(oraclePyJsonDumps(doc, ind));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('pyJsonAppend appends the UTF-8 bytes of pyJsonDumps (the text is ASCII) after what the sink keeps, growing it', () => {
    fc.assert(
      fc.property(value, indent, fc.string({ maxLength: 12 }), (v, ind, prefix) => {
        const sink = new BufferSink(prefix);
        pyJsonAppend(v, ind, sink);
        expect(sink.kept.equals(Buffer.from(prefix + pyJsonDumps(v, ind), 'utf8'))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('pyJsonAppend escaped appends the text as the contents of a JSON string (JSON.stringify of it, unquoted)', () => {
    fc.assert(
      fc.property(value, indent, fc.string({ maxLength: 12 }), (v, ind, prefix) => {
        const sink = new BufferSink(prefix);
        pyJsonAppend(v, ind, sink, true);
        expect(sink.kept.equals(Buffer.from(prefix + JSON.stringify(oraclePyJsonDumps(v, ind)).slice(1, -1), 'utf8'))).toBe(true);
        // and plain again after it
        expect(pyJsonDumps(v, ind)).toBe(oraclePyJsonDumps(v, ind));
      }),
      { numRuns: 1000 },
    );
  });

  it('memoised frozen values print the same escaped and plain, alternately', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 3 }), fc.array(fc.tuple(fc.boolean(), indent), { minLength: 1, maxLength: 6 }), (shared, renders) => {
        const frozen = shared.map((v) => memoRendered(structuredClone(v)));
        const doc: Out = { tasks: frozen, first: frozen[0] as Out };
        for (const [esc, ind] of renders) {
          const sink = new BufferSink();
          pyJsonAppend(doc, ind, sink, esc);
          const text = oraclePyJsonDumps(doc, ind);
          expect(sink.kept.toString('latin1')).toBe(esc ? JSON.stringify(text).slice(1, -1) : text);
        }
        expect(pyJsonDumps(doc, 2)).toBe(oraclePyJsonDumps(doc, 2));
      }),
      { numRuns: 300 },
    );
  });

  it('memoised texts kept across many slabs (more text than one holds, and texts larger than one) copy back exactly', () => {
    const values = Array.from({ length: 600 }, (_, i) =>
      memoRendered({ task_id: `Task-${i}`, required_qty: new PyFloat(i / 7), tasks: 'x'.repeat(i % 5 === 0 ? 40_000 : (i * 37) % 500) } as Out),
    );
    const first = values.map((v) => pyJsonDumps([v], 2));
    // Again, in another order: now every value's text is copied from where it was kept.
    for (let i = values.length - 1; i >= 0; i--) expect(pyJsonDumps([values[i] as Out], 2)).toBe(first[i]);
    values.forEach((v, i) => expect(first[i]).toBe(oraclePyJsonDumps([v], 2)));
  });

  it('float reprs memo: more floats than it has slots, twice over (evictions, colliding slots), print as pyRepr does', () => {
    const xs = fc.sample(fc.oneof(fc.double(), fc.integer({ min: -1e6, max: 1e6 }).map((n) => n / 100)), { numRuns: 40_000, seed: 14 });
    const doc = xs.map((x) => new PyFloat(x));
    const want = oraclePyJsonDumps(doc, null);
    expect(pyJsonDumps(doc, null)).toBe(want);
    expect(pyJsonDumps(doc.slice().reverse(), null)).toBe(oraclePyJsonDumps(doc.slice().reverse(), null));
    expect(pyJsonDumps(doc, null)).toBe(want);
  });

  it('safe integers print their digits as String does, across the whole safe range, at any depth and indent', () => {
    const safe = fc.oneof(
      fc.maxSafeInteger(),
      fc.integer(),
      fc.integer({ min: -1000, max: 1000 }),
      fc.constantFrom(0, -0, 9, 10, 99, 100, -1, -9, -10, 2 ** 31, -(2 ** 31), 2 ** 32, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1e15, 999_999_999_999_999),
    );
    fc.assert(
      fc.property(fc.array(safe, { minLength: 1, maxLength: 6 }), indent, (xs, ind) => {
        expect(pyJsonDumps(xs[0] as number, ind)).toBe(String(xs[0]));
        const doc: Out = { count: xs, funds_cents: xs[0] as number, nested: [{ total: xs[xs.length - 1] as number }] };
        expect(pyJsonDumps(doc, ind)).toBe(oraclePyJsonDumps(doc, ind));
      }),
      { numRuns: 2000 },
    );
  });

  it('an indent-2 entry\'s string or integer (written by the entry, not through write): float keys and float maps, unsafe and non-integers, escapes, plain and escaped', () => {
    const scalar = fc.oneof(num, fc.string({ maxLength: 10 }), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('caf\u00e9', 'a"b\\c', 'tab\there', '\u2603'));
    const k = fc.constantFrom('required_qty', 'trust_level', 'count', 'task_id', 'name', 'delta');
    fc.assert(
      fc.property(fc.array(fc.tuple(k, scalar), { maxLength: 6 }), scalar, fc.boolean(), (entries, r, esc) => {
        const doc: Out = { ...Object.fromEntries(entries), prestige: { research: r, training: 3 }, nested: [Object.fromEntries(entries.slice().reverse())] };
        const want = oraclePyJsonDumps(doc, 2);
        expect(pyJsonDumps(doc, 2)).toBe(want);
        const sink = new BufferSink();
        pyJsonAppend(doc, 2, sink, esc);
        expect(sink.kept.toString('latin1')).toBe(esc ? JSON.stringify(want).slice(1, -1) : want);
      }),
      { numRuns: 2000 },
    );
    // The same keys hold an int, then the same number where a float is printed, then a string.
    expect(pyJsonDumps({ required_qty: 899, count: 899 })).toBe('{\n  "required_qty": 899.0,\n  "count": 899\n}');
    expect(pyJsonDumps({ rates: { a: 2 }, count: 2 ** 53 })).toBe('{\n  "rates": {\n    "a": 2.0\n  },\n  "count": 9007199254740992\n}');
    expect(pyJsonDumps({ count: 0.5, name: '\u00e9' })).toBe('{\n  "count": 0.5,\n  "name": "\\u00e9"\n}');
  });

  it('entries led by the lead that followed the last time (a hint): the same keys reordered, dropped, repeated, at other depths, escaped and plain alternately', () => {
    const keys = ['task_id', 'required_qty', 'status', 'prestige', 'count', 'caf\u00e9'];
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.shuffledSubarray(keys), fc.nat(3), fc.boolean()), { minLength: 1, maxLength: 12 }), (docs) => {
        for (const [ks, depth, esc] of docs) {
          let doc: Out = Object.fromEntries(ks.map((k, i) => [k, k === 'prestige' ? { research: i } : i]));
          for (let d = 0; d < depth; d++) doc = { tasks: [doc], count: d };
          const want = oraclePyJsonDumps(doc, 2);
          expect(pyJsonDumps(doc, 2)).toBe(want);
          const sink = new BufferSink();
          pyJsonAppend(doc, 2, sink, esc);
          expect(sink.kept.toString('latin1')).toBe(esc ? JSON.stringify(want).slice(1, -1) : want);
        }
      }),
      { numRuns: 1500 },
    );
    // One kind of object, then the same keys in another order, then the first order again.
    for (const doc of [{ a: 1, b: 2, c: 3 }, { a: 1, c: 3, b: 2 }, { b: 2, a: 1, c: 3 }, { a: 1, b: 2, c: 3 }, { a: 1, b: 2 }] as Out[]) {
      expect(pyJsonDumps(doc, 2)).toBe(oraclePyJsonDumps(doc, 2));
    }
  });

  it('object entries (their leads stored a word at a time) into a sink whose bytes are a window of a larger buffer: the text appended, nothing outside the window touched', () => {
    fc.assert(
      fc.property(value, fc.string({ maxLength: 12 }), fc.nat(7), fc.nat(40), fc.boolean(), (v, prefix, offset, spare, esc) => {
        const doc: Out = { tasks: [v, { task_id: 'Task-1', nested: { count: 3 } }], count: 1 };
        const want = prefix + (esc ? JSON.stringify(oraclePyJsonDumps(doc, 2)).slice(1, -1) : oraclePyJsonDumps(doc, 2));
        // The sink's bytes: `prefix` and `spare` free bytes in a window at `offset` of a buffer filled with 0xaa.
        const whole = Buffer.alloc(offset + prefix.length * 3 + spare + 8, 0xaa);
        const sink = new BufferSink();
        sink.bytes = whole.subarray(offset, whole.length - 8);
        sink.used = sink.bytes.write(prefix, 0, 'utf8');
        const window = sink.bytes;
        pyJsonAppend(doc, 2, sink, esc);
        expect(sink.kept.toString('latin1')).toBe(Buffer.from(want, 'utf8').toString('latin1'));
        // Bytes before and after the window are the filler still (when the sink grew, the window kept only the prefix).
        expect(whole.subarray(0, offset).every((b) => b === 0xaa)).toBe(true);
        expect(whole.subarray(whole.length - 8).every((b) => b === 0xaa)).toBe(true);
        if (sink.bytes !== window) expect(window.subarray(0, Buffer.byteLength(prefix)).toString('utf8')).toBe(prefix);
      }),
      { numRuns: 1500 },
    );
  });

  it('memoRendered deep-freezes', () => {
    const v = memoRendered({ a: [1, { b: 2 }] } as Out) as { a: [number, { b: number }] };
    expect(Object.isFrozen(v) && Object.isFrozen(v.a) && Object.isFrozen(v.a[1])).toBe(true);
  });

  it('every output of played commands, text and compact', () => {
    const cfg = loadPreset('default');
    const sim = Simulation.create(cfg, { seed: 3 });
    const lines = ['employee list', 'client list', 'company status'];
    for (let i = 0; i < 12; i++) {
      lines.push('market browse --limit 200', 'market browse --offset 3 --limit 7', `task accept --task-id Task-${i + 1}`, `task assign --task-id Task-${i + 1} --employees Emp_1,Emp_2`, `task dispatch --task-id Task-${i + 1}`, 'sim resume', 'task list', 'finance ledger', 'report monthly', 'client history');
    }
    for (const line of lines) {
      const r = sim.execute(line);
      expect(pyJsonDumps(r.value, 2), line).toBe(oraclePyJsonDumps(r.value, 2));
      expect(pyJsonDumps(r.value, null), line).toBe(oraclePyJsonDumps(r.value, null));
      const sink = new BufferSink();
      pyJsonAppend(r.value, 2, sink, true);
      expect(sink.kept.toString('latin1'), line).toBe(JSON.stringify(oraclePyJsonDumps(r.value, 2)).slice(1, -1));
    }
  });
});
