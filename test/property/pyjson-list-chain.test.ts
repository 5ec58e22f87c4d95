/**
 * Lists of a chain (`memoList`) print exactly what the plain writer prints (test/helpers/pyjson-oracle.ts) while their
 * text is copied in runs from the chain's last rendered version: versions that keep, drop, insert, repeat and reorder
 * memoised elements, that hold unmemoised objects changed between renders, primitives and nulls, rendered at any
 * depth, indent and float mode, and a played company's `market browse` listings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { listChain, memoList, memoRendered, PyFloat, pyJsonAppend, pyJsonDumps, type Out } from '../../src/sim/py/pyjson.js';
import { oraclePyJsonDumps } from '../helpers/pyjson-oracle.js';
import { BufferSink, EpochSink } from '../helpers/text-sink.js';

const key = fc.constantFrom('task_id', 'required_qty', 'prestige', 'name', 'tasks', 'n');
const leaf: fc.Arbitrary<Out> = fc.oneof(fc.constant(null), fc.boolean(), fc.integer({ min: -1000, max: 1000 }), fc.double({ noNaN: true }).map((x) => new PyFloat(x)), fc.string({ maxLength: 6 }));
const { value } = fc.letrec<{ value: Out }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(key, tie('value'), { maxKeys: 4 }) as fc.Arbitrary<Out>),
}));
const obj = fc.dictionary(key, value, { minKeys: 1, maxKeys: 4 }) as fc.Arbitrary<{ [k: string]: Out }>;

/** One step of a version history: an index into the pool (memoised, mutable or primitive) or an edit. */
const edit = fc.oneof(
  fc.record({ op: fc.constant('keep' as const) }),
  fc.record({ op: fc.constant('drop' as const), at: fc.nat(40), n: fc.integer({ min: 1, max: 12 }) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(40), pick: fc.nat(40), n: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ op: fc.constant('swap' as const), a: fc.nat(40), b: fc.nat(40) }),
  fc.record({ op: fc.constant('mutate' as const), pick: fc.nat(40) }),
);

describe('memoList: chained lists print as the plain writer prints them', () => {
  it('random version histories at random depths and indents', () => {
    fc.assert(
      fc.property(
        fc.array(obj, { minLength: 1, maxLength: 8 }),
        fc.array(obj, { maxLength: 4 }),
        fc.array(leaf, { maxLength: 3 }),
        fc.array(fc.tuple(edit, fc.nat(2), fc.constantFrom<number | null>(2, null, 0, 4), key, fc.boolean()), { minLength: 1, maxLength: 12 }),
        (memoPool, mutablePool, prims, steps) => {
          const memo = memoPool.map((v) => memoRendered(structuredClone(v)));
          const pool: Out[] = [...memo, ...mutablePool, ...prims];
          const chain = listChain();
          let list: Out[] = memo.slice();
          for (const [e, depth, ind, k, esc] of steps) {
            list = list.slice();
            if (e.op === 'drop' && list.length > 0) list.splice(e.at % list.length, e.n);
            if (e.op === 'insert') for (let i = 0; i < e.n; i++) list.splice(e.at % (list.length + 1), 0, pool[(e.pick + i) % pool.length] as Out);
            if (e.op === 'swap' && list.length > 0) {
              const a = e.a % list.length;
              const b = e.b % list.length;
              [list[a], list[b]] = [list[b] as Out, list[a] as Out];
            }
            if (e.op === 'mutate' && mutablePool.length > 0) (mutablePool[e.pick % mutablePool.length] as { [k: string]: Out })['n'] = e.pick;
            if (list.length === 0) list.push(pool[0] as Out);
            memoList(list, chain);
            let doc: Out = { [k]: list };
            for (let i = 0; i < depth; i++) doc = [doc, { [k]: doc }];
            expect(pyJsonDumps(doc, ind)).toBe(oraclePyJsonDumps(doc, ind));
            // escaped (a reply's JSON string), then plain again: each copies only text of its own escaping
            if (esc) {
              const escSink = new BufferSink();
              pyJsonAppend(doc, ind, escSink, true);
              expect(escSink.kept.toString('latin1')).toBe(JSON.stringify(oraclePyJsonDumps(doc, ind)).slice(1, -1));
              expect(pyJsonDumps(doc, ind)).toBe(oraclePyJsonDumps(doc, ind));
            }
            // appended to a sink after a kept prefix: the list is now the chain's own last text
            const sink = new BufferSink('[');
            pyJsonAppend(doc, ind, sink);
            expect(sink.kept.toString('latin1')).toBe('[' + oraclePyJsonDumps(doc, ind));
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('lists read back from append-only sinks (TextSink.epoch): other text between, other sinks, a new epoch, pyJsonDumps', () => {
    fc.assert(
      fc.property(
        fc.array(obj, { minLength: 2, maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(40), fc.nat(40), fc.constantFrom('a', 'b', 'text', 'restart', 'dumps', 'escaped'), fc.constantFrom<number | null>(2, null)), { minLength: 1, maxLength: 14 }),
        (memoPool, steps) => {
          const memo = memoPool.map((v) => memoRendered(structuredClone(v)));
          const chain = listChain();
          const sinks = { a: new EpochSink(), b: new EpochSink() };
          let list: Out[] = memo.slice();
          for (const [at, pick, where, ind] of steps) {
            // the next version: one element dropped, another inserted (a listing after an accept)
            list = list.slice();
            list.splice(at % list.length, 1);
            list.splice(pick % (list.length + 1), 0, memo[pick % memo.length] as Out);
            memoList(list, chain);
            const doc: Out = { total: list.length, tasks: list };
            const want = oraclePyJsonDumps(doc, ind);
            if (where === 'dumps') {
              expect(pyJsonDumps(doc, ind)).toBe(want);
              continue;
            }
            if (where === 'escaped') {
              const from = sinks.a.used;
              pyJsonAppend(doc, ind, sinks.a, true);
              expect(sinks.a.bytes.toString('latin1', from, sinks.a.used)).toBe(JSON.stringify(want).slice(1, -1));
              continue;
            }
            if (where === 'text') sinks.a.string('{"x": 1}');
            if (where === 'restart') sinks.a.restart();
            const sink = where === 'b' ? sinks.b : sinks.a;
            const from = sink.used;
            pyJsonAppend(doc, ind, sink);
            expect(sink.bytes.toString('latin1', from, sink.used)).toBe(want);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a list is not read back from a sink that started a new epoch, even with its bytes where they were', () => {
    const a = [1, 2, 3, 4].map((i) => memoRendered({ task_id: `T${i}`, required_qty: new PyFloat(i) } as Out));
    const chain = listChain();
    const sink = new EpochSink();
    pyJsonAppend({ tasks: memoList(a.slice(), chain) }, 2, sink);
    // The same bytes object and length, other bytes in it, a new epoch: the next version renders its elements again.
    sink.restart();
    sink.string('x'.repeat(200));
    sink.restart();
    pyJsonAppend({ tasks: memoList(a.slice(1), chain) }, 2, sink);
    expect(sink.kept.toString('latin1')).toBe(oraclePyJsonDumps({ tasks: a.slice(1) }, 2));
  });

  it('a list written by a pyJsonAppend that failed is not read back from the sink, which writes over it', () => {
    const a = [1, 2, 3, 4].map((i) => memoRendered({ task_id: `T${i}`, required_qty: new PyFloat(i) } as Out));
    const chain = listChain();
    const sink = new EpochSink();
    const bad = Object.defineProperty({}, 'n', {
      enumerable: true,
      get: () => {
        throw new Error('unprintable');
      },
    }) as Out;
    expect(() => pyJsonAppend({ tasks: memoList(a.slice(), chain), bad }, 2, sink)).toThrow('unprintable');
    expect(sink.used).toBe(0);
    sink.string('z'.repeat(400));
    const from = sink.used;
    pyJsonAppend({ tasks: memoList(a.slice(1), chain) }, 2, sink);
    expect(sink.bytes.toString('latin1', from, sink.used)).toBe(oraclePyJsonDumps({ tasks: a.slice(1) }, 2));
  });

  it('a list written by a pyJsonDumps that failed is not read back (it returned no string), nor one written earlier in the same call', () => {
    const a = [1, 2, 3, 4, 5].map((i) => memoRendered({ task_id: `T${i}`, required_qty: new PyFloat(i) } as Out));
    const chain = listChain();
    const bad = Object.defineProperty({}, 'n', {
      enumerable: true,
      get: () => {
        throw new Error('unprintable');
      },
    }) as Out;
    expect(pyJsonDumps({ tasks: memoList(a.slice(), chain) }, 2)).toBe(oraclePyJsonDumps({ tasks: a }, 2));
    // The failed call renders the next version (from the string of the first), then throws before its string exists.
    expect(() => pyJsonDumps({ tasks: memoList(a.slice(1), chain), bad }, 2)).toThrow('unprintable');
    // A longer text in between fills the output buffer where the failed version was written.
    expect(pyJsonDumps({ other: 'y'.repeat(3000) }, 2)).toBe(oraclePyJsonDumps({ other: 'y'.repeat(3000) }, 2));
    for (const version of [a.slice(1, 4), a.slice(0, 4), a.slice(2), a.slice(2)]) {
      const doc = { tasks: memoList(version.slice(), chain) };
      expect(pyJsonDumps(doc, 2)).toBe(oraclePyJsonDumps(doc, 2));
    }
    // Two versions of one chain in one output: the second is rendered after the first, whose string does not exist yet.
    const l1 = memoList(a.slice(0, 3), chain);
    const l2 = memoList(a.slice(1), chain);
    const both = { first: l1, second: l2 };
    expect(pyJsonDumps(both, 2)).toBe(oraclePyJsonDumps(both, 2));
    const after = { tasks: memoList(a.slice(1, 5), chain) };
    expect(pyJsonDumps(after, 2)).toBe(oraclePyJsonDumps(after, 2));
    // Then appended to sinks, escaped and not, and dumped again: each reads back only text of its own kind.
    for (const version of [a.slice(0, 2), a.slice(0, 3), a.slice(1, 3)]) {
      const doc = { tasks: memoList(version.slice(), chain) };
      const esc = new BufferSink();
      pyJsonAppend(doc, 2, esc, true);
      expect(esc.kept.toString('latin1')).toBe(JSON.stringify(oraclePyJsonDumps(doc, 2)).slice(1, -1));
      const doc2 = { tasks: memoList(version.slice(), chain) };
      expect(pyJsonDumps(doc2, 2)).toBe(oraclePyJsonDumps(doc2, 2));
      const doc3 = { tasks: memoList(version.slice(1), chain) };
      const sink = new EpochSink();
      pyJsonAppend(doc3, 2, sink);
      expect(sink.kept.toString('latin1')).toBe(oraclePyJsonDumps(doc3, 2));
    }
  });

  it('versions that grow one element at a time past the first room of their offsets, then shrink, with an element changed in place and keys reordered', () => {
    const pool = Array.from({ length: 160 }, (_, i) => memoRendered({ task_id: `T${i}`, required_qty: i, name: 'caf\u00e9' } as Out));
    const loose: { [k: string]: Out } = { task_id: 'loose', required_qty: 1 };
    const c = listChain();
    const sink = new EpochSink();
    const lengths = [...Array.from({ length: 150 }, (_, i) => i + 1), ...Array.from({ length: 150 }, (_, i) => 150 - i)];
    for (const [r, n] of lengths.entries()) {
      // Every fifth version: the unmemoised element changed in place (an int, then a float's value), or its keys reordered.
      if (r % 5 === 0) loose['required_qty'] = r % 10 === 0 ? r : r + 0.5;
      if (r % 7 === 0) {
        const q = loose['required_qty'] as Out;
        delete loose['task_id'];
        loose['task_id'] = `loose${r}`;
        loose['required_qty'] = q;
      }
      const list = memoList([...pool.slice(0, n >> 1), loose, ...pool.slice(n >> 1, n)], c);
      const doc: Out = { total: n, tasks: list };
      if (r % 2 === 0) expect(pyJsonDumps(doc, 2)).toBe(oraclePyJsonDumps(doc, 2));
      else {
        const before = sink.used;
        pyJsonAppend(doc, 2, sink);
        expect(sink.kept.subarray(before).toString('latin1')).toBe(oraclePyJsonDumps(doc, 2));
      }
    }
  });

  it('a list rendered by pyJsonDumps is read back from its own string, not that of a later call that wrote no list', () => {
    const pool = Array.from({ length: 6 }, (_, i) => memoRendered({ task_id: `T${i}`, required_qty: i } as Out));
    const c = listChain();
    for (let r = 0; r < 4; r++) {
      const doc: Out = { tasks: memoList(pool.slice(r % 2, 6 - (r >> 1)), c) };
      expect(pyJsonDumps(doc, 2)).toBe(oraclePyJsonDumps(doc, 2));
      // Calls between two versions that write no list (their strings are not the list's).
      expect(pyJsonDumps({ count: r, tasks: [] }, 2)).toBe(oraclePyJsonDumps({ count: r, tasks: [] }, 2));
      expect(pyJsonDumps({ task_id: 'x'.repeat(40 * r) }, 2)).toBe(oraclePyJsonDumps({ task_id: 'x'.repeat(40 * r) }, 2));
    }
  });

  it('lists of several chains rendered long after they were listed, some after more lists than are looked up (RECENT_CHAINS), print as plain lists', () => {
    const pool = Array.from({ length: 10 }, (_, i) => memoRendered({ task_id: `T${i}`, required_qty: new PyFloat(i + 0.25) } as Out));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(3), fc.nat(9), fc.nat(9), fc.nat(20), fc.constantFrom<number | null>(2, null)), { minLength: 1, maxLength: 40 }),
        (steps) => {
          const chains = [listChain(), listChain(), listChain(), listChain()];
          const listed: Out[][] = [];
          for (const [c, from, to, back, ind] of steps) {
            // A new list of chain c, or (to < from) an earlier list given chain c again; then a list listed `back` lists ago rendered.
            const list = to >= from || listed.length === 0 ? pool.slice(from, to + 1) : (listed[from % listed.length] as Out[]);
            listed.push(memoList(list, chains[c] as ReturnType<typeof listChain>));
            const doc: Out = { tasks: listed[Math.max(0, listed.length - 1 - back)] as Out[] };
            expect(pyJsonDumps(doc, ind)).toBe(oraclePyJsonDumps(doc, ind));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a list just given a chain renders as its next version (the chain takes its text); one listed more than RECENT_CHAINS lists ago prints plainly', () => {
    const pool = Array.from({ length: 4 }, (_, i) => memoRendered({ task_id: `T${i}` } as Out));
    const c = listChain();
    const first = memoList(pool.slice(), c);
    expect(pyJsonDumps({ tasks: first }, 2)).toBe(oraclePyJsonDumps({ tasks: first }, 2));
    const taken = c.text;
    expect(taken).not.toBeNull();
    const others = Array.from({ length: 8 }, () => memoList(pool.slice(1), listChain()));
    expect(others.length).toBe(8);
    // `first` is no longer among the recent lists: rendered as any list, the chain keeps its text.
    expect(pyJsonDumps({ tasks: first }, 2)).toBe(oraclePyJsonDumps({ tasks: first }, 2));
    expect(c.text).toBe(taken);
    const again = memoList(pool.slice(0, 3), c);
    expect(pyJsonDumps({ tasks: again }, 2)).toBe(oraclePyJsonDumps({ tasks: again }, 2));
    expect(c.text).not.toBe(taken);
  });

  it('two chains rendered alternately share nothing but their elements', () => {
    const a = [1, 2, 3, 4, 5].map((i) => memoRendered({ task_id: `T${i}`, required_qty: new PyFloat(i) } as Out));
    const c1 = listChain();
    const c2 = listChain();
    for (let r = 0; r < 4; r++) {
      const l1 = memoList(a.slice(r), c1);
      const l2 = memoList(a.slice(0, 5 - r).reverse(), c2);
      expect(pyJsonDumps({ tasks: l1 }, 2)).toBe(oraclePyJsonDumps({ tasks: l1 }, 2));
      expect(pyJsonDumps({ tasks: l2 }, null)).toBe(oraclePyJsonDumps({ tasks: l2 }, null));
    }
  });

  it('every market browse of played greedy episodes', () => {
    const env = new Env();
    let n = 0;
    for (const seed of [1, 2]) {
      runEpisode(env, new GreedyPolicy(), { seed, preset: loadPreset('default') }, {
        onStep: ({ result }) => {
          if (result.observation.command !== 'market browse') return;
          n++;
          expect(result.observation.text).toBe(oraclePyJsonDumps(env.lastValue as Out, 2));
        },
      });
    }
    expect(n).toBeGreaterThan(20);
  });
});
