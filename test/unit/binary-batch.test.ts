/**
 * BinaryBatch (src/server/binary-batch.ts): its byte count bounds the reply from above whatever the strings hold
 * (escapes, control characters, multi-byte characters, lone surrogates), before and after it counts exactly, so the
 * reply cap holds. Before, a text counted as its UTF-8 bytes plus an eighth: a command's JSON output, whose quotes and
 * newlines are escaped again in the header, exceeded that.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BinaryBatch } from '../../src/server/binary-batch.js';
import type { StepResultWithoutStatus } from '../../src/env/env.js';

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
});
