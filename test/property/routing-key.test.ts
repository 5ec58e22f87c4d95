/**
 * The server keys its peers by their routing ids' bytes as latin1, and finds the last peer's key again by comparing a
 * routing id's bytes with that key's characters (`latin1Equals`): that comparison says "same" exactly when decoding the
 * bytes would give the same key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { latin1Equals } from '../../src/server/server.js';

const bytes = fc.uint8Array({ minLength: 0, maxLength: 24 });

describe('latin1Equals', () => {
  it('is key === bytes decoded as latin1, for routing ids, their one-byte mutations and other lengths', () => {
    fc.assert(
      fc.property(bytes, bytes, fc.nat(), fc.integer({ min: 1, max: 255 }), (a, b, at, flip) => {
        const key = Buffer.from(a).toString('latin1');
        const mutated = Uint8Array.from(a);
        if (mutated.length > 0) mutated[at % mutated.length] = (mutated[at % mutated.length] as number) ^ flip;
        for (const other of [a, b, mutated, a.subarray(1), Uint8Array.of(...a, 0)]) {
          expect(latin1Equals(key, other)).toBe(key === Buffer.from(other).toString('latin1'));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('says no for a key with characters no byte decodes to', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 12 }), (s) => {
        const b = Buffer.from(s, 'latin1'); // characters above U+00FF lose their high bits
        expect(latin1Equals(s, b)).toBe(s === b.toString('latin1'));
      }),
      { numRuns: 300 },
    );
    expect(latin1Equals('\u0141', Uint8Array.of(0x41))).toBe(false);
    expect(latin1Equals('', new Uint8Array(0))).toBe(true);
  });

  it('reads a view of a larger buffer as its own bytes only', () => {
    const chunk = Buffer.from('xxABCyy', 'latin1');
    expect(latin1Equals('ABC', chunk.subarray(2, 5))).toBe(true);
    expect(latin1Equals('ABCy', chunk.subarray(2, 5))).toBe(false);
  });
});
