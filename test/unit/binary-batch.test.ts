/**
 * BinaryBatch (src/server/binary-batch.ts): its byte count bounds the reply from above whatever the strings hold
 * (escapes, control characters, multi-byte characters, lone surrogates), before and after it counts exactly, so the
 * reply cap holds. Before, a text counted as its UTF-8 bytes plus an eighth: a command's JSON output, whose quotes and
 * newlines are escaped again in the header, exceeded that.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BinaryBatch } from '../../src/server/binary-batch.js';
import { JsonWriter } from '../../src/server/json-writer.js';
import { OutputText, type StepResultWithoutStatus } from '../../src/env/env.js';
import type { TextSink } from '../../src/sim/index.js';

/** Strings heavy in what JSON escapes or writes in several bytes. */
const nasty = fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\t', '\u0001', 'a', 'é', '€', '😀', '\ud800'), maxLength: 40 });
const text = fc.oneof(fc.string({ maxLength: 40 }), nasty, fc.constant(''));

interface Entry {
  kind: 'ok' | 'fail';
  text: string;
  command: string | null;
  actionText: string | undefined;
  admissible: string[] | undefined;
  message: string;
}
const entry: fc.Arbitrary<Entry> = fc.record({
  kind: fc.constantFrom('ok', 'ok', 'fail'),
  text,
  command: fc.option(text, { nil: null }),
  actionText: fc.option(text, { nil: undefined }),
  admissible: fc.option(fc.array(text, { maxLength: 4 }), { nil: undefined }),
  message: text,
});

function result(e: Entry, discrete: { obs: number; actions: number } | null): StepResultWithoutStatus {
  const info: StepResultWithoutStatus['info'] = { reward_cents: -1234, step: 7, funds_cents: 99, terminal_reason: null };
  if (e.actionText !== undefined) info.action_text = e.actionText;
  if (e.admissible !== undefined) info.admissible_commands = e.admissible;
  const observation: StepResultWithoutStatus['observation'] = { text: e.text, ok: true, exit_code: 0, command: e.command };
  if (discrete !== null) {
    (observation as { discrete?: unknown }).discrete = { obs: new Array<number>(discrete.obs).fill(0.5), mask: Array.from({ length: discrete.actions }, (_, k) => k % 2 === 0) };
  }
  return { observation, reward: -12.34, terminated: false, truncated: false, info };
}

describe('BinaryBatch header', () => {
  it('counts an upper bound of the reply, by the bound and exactly, switching at any entry', () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 12 }), fc.boolean(), fc.nat(12), (entries, isDiscrete, switchAt) => {
        const shape = isDiscrete ? { obs: 3, actions: 5 } : null;
        const b = new BinaryBatch(entries.length, shape);
        const bounds: number[] = [];
        entries.forEach((e, i) => {
          if (i === switchAt) {
            const before = b.bytes;
            expect(b.countExactly()).toBeLessThanOrEqual(before);
          }
          if (e.kind === 'ok') b.put(i, result(e, shape));
          else b.fail(i, { code: 'invalid_request', message: e.message });
          bounds.push(b.bytes);
        });
        const { result: r, frames } = b.finish();
        const actual = Buffer.byteLength(JSON.stringify(r), 'utf8') + frames.reduce((a, f) => a + f.length, 0);
        expect(b.bytes).toBeGreaterThanOrEqual(actual);
        // Counted exactly, only the fixed part's allowance (1 KiB + 16 bytes per entry) and separators remain above.
        const exact = b.countExactly();
        expect(exact).toBeGreaterThanOrEqual(actual);
        expect(exact - actual).toBeLessThanOrEqual(1024 + 16 * entries.length + 8 * entries.length);
      }),
      { numRuns: 300 },
    );
  });

  it('counts an escaped text at least at its JSON size (the old estimate, UTF-8 bytes plus an eighth, fell short)', () => {
    const t = '{\n  "a": "\\"x\\""\n}'.repeat(2000);
    const json = Buffer.byteLength(JSON.stringify(t));
    expect(json).toBeGreaterThan(Buffer.byteLength(t) + 2 + (t.length >> 3));
    const b = new BinaryBatch(2, null);
    const e = { kind: 'ok' as const, text: t, command: null, actionText: undefined, admissible: undefined, message: '' };
    expect(b.put(0, result(e, null))).toBeGreaterThanOrEqual(json);
    b.countExactly();
    expect(b.put(1, result(e, null))).toBe(json);
  });

  it('leaves a failed entry\'s rows zero when its frame does not fit the batch', () => {
    const b = new BinaryBatch(1, { obs: 3, actions: 5 });
    expect(() => b.put(0, result({ kind: 'ok', text: 'x', command: null, actionText: undefined, admissible: undefined, message: '' }, { obs: 2, actions: 5 }))).toThrow(/shape/);
    const { frames } = b.finish();
    expect(frames.every((f) => f.every((x) => x === 0))).toBe(true);
  });

  it('writes the header as JSON.stringify writes it, its texts given as strings or as OutputText, in entry order', () => {
    /** An OutputText over a text, written as a command's escaped output is (`appendEscapedText`). */
    const wire = (t: string): OutputText => new OutputText({ text: t, appendEscapedText: (sink: TextSink) => sink.string(JSON.stringify(t).slice(1, -1)) });
    fc.assert(
      fc.property(fc.array(fc.tuple(entry, fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 12 }), (entries) => {
        const b = new BinaryBatch(entries.length, null);
        const texts: string[] = [];
        entries.forEach(([e, asWire, skip], i) => {
          // A skipped entry (neither put nor failed: a bug's entry) has "" as a failed one has.
          if (skip) texts.push('');
          else if (e.kind === 'fail') {
            b.fail(i, { code: 'invalid_request', message: e.message });
            texts.push('');
          } else {
            const r = result(e, null);
            b.put(i, asWire ? { ...r, observation: { ...r.observation, text: wire(e.text) } } : r);
            texts.push(e.text);
          }
        });
        const { result: res } = b.finish();
        const w = new JsonWriter(16);
        w.value({ v: 1, id: 3, ok: true, result: res });
        const plain = { ...res, text: texts };
        expect(w.written().toString('utf8')).toBe(JSON.stringify({ v: 1, id: 3, ok: true, result: plain }));
        expect(JSON.stringify(res)).toBe(JSON.stringify(plain));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses an entry before the last one written; a text whose writer throws leaves nothing of it', () => {
    const e = { kind: 'ok' as const, text: 'a "b"', command: null, actionText: undefined, admissible: undefined, message: '' };
    const b = new BinaryBatch(3, null);
    b.put(1, result(e, null));
    expect(() => b.put(0, result(e, null))).toThrow(/comes after/);
    const bad = new OutputText({
      text: '',
      appendEscapedText: (sink: TextSink) => {
        sink.string('partial');
        throw new Error('boom');
      },
    });
    const r = result(e, null);
    expect(() => b.put(2, { ...r, observation: { ...r.observation, text: bad } })).toThrow(/boom/);
    b.fail(2, { code: 'internal', message: 'x' });
    const { result: res, frames } = b.finish();
    expect(JSON.stringify(res.text)).toBe(JSON.stringify(['', 'a "b"', '']));
    // Entry 2's rows stay zero (entry 1's are written).
    expect(res.arrays[0]?.name).toBe('reward');
    expect(Array.from(new Float64Array(Uint8Array.from(frames[0] as Buffer).buffer))).toEqual([0, -12.34, 0]);
  });
});
