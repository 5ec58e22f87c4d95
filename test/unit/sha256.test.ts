import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Utf8 } from '../../src/sim/py/sha256.js';

const nodeSha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const ours = (s: string): string => Buffer.from(sha256Utf8(s)).toString('hex');

describe('sha256Utf8 (the stream keys\' hash) equals node:crypto', () => {
  it('FIPS 180-4 examples and every padding boundary (0..200 bytes)', () => {
    expect(ours('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(ours('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    for (let n = 0; n <= 200; n++) {
      const s = 'x'.repeat(n);
      expect(ours(s), `length ${n}`).toBe(nodeSha(s));
    }
  });

  it('random ASCII, BMP and astral strings, and lone surrogates (U+FFFD like Buffer)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 150 }), fc.string({ unit: 'grapheme', maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 })),
        (s) => {
          expect(ours(s)).toBe(nodeSha(s));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('the stream keys the world uses', () => {
    for (const seed of [0, 1, 7, 123456789, 2 ** 53 - 1])
      for (const k of ['tier_assignment', 'clients', 'task_1', 'task_200', 'replenish_99999', 'employee_8', 'bot_random_select:12']) {
        const s = `${seed}:${k}`;
        expect(ours(s), s).toBe(nodeSha(s));
      }
  });
});
