/**
 * The pipe transport's framing (src/server/pipe.ts): a message is a u32 frame count, then each frame's u32 length
 * and bytes. Messages cut anywhere are parsed once whole; counts and lengths outside the limits are refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeMessage, MAX_PIPE_FRAMES, parseMessages, PIPE_ENVELOPE_BYTES } from '../../src/server/pipe.js';

const frameArb = fc.oneof(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), fc.string({ maxLength: 100 }));
const messageArb = fc.array(frameArb, { minLength: 1, maxLength: 6 });

function asBuffers(frames: (Buffer | string)[]): Buffer[] {
  return frames.map((f) => (typeof f === 'string' ? Buffer.from(f, 'utf8') : f));
}

describe('pipe framing', () => {
  it('encodes a count, then lengths and bytes (little-endian)', () => {
    const b = encodeMessage([Buffer.from('ab'), 'é']);
    expect([...b]).toEqual([2, 0, 0, 0, 2, 0, 0, 0, 0x61, 0x62, 2, 0, 0, 0, 0xc3, 0xa9]);
  });

  it('parses any sequence of messages, however the bytes are cut', () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 5 }), fc.array(fc.nat(), { maxLength: 8 }), (msgs, cuts) => {
        const bytes = Buffer.concat(msgs.map((m) => encodeMessage(m)));
        // Feed the stream in pieces, as a pipe delivers it, keeping the unparsed rest.
        const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const got: Buffer[][] = [];
        let rest = Buffer.alloc(0);
        let from = 0;
        for (const p of [...points, bytes.length]) {
          rest = Buffer.concat([rest, bytes.subarray(from, p)]);
          from = p;
          const r = parseMessages(rest, 1 << 20);
          got.push(...r.messages);
          rest = rest.subarray(r.used);
          // What is left is never a whole message, and `need` is more than what is there.
          expect(r.need).toBeGreaterThan(rest.length);
        }
        expect(rest.length).toBe(0);
        expect(got).toEqual(msgs.map(asBuffers));
      }),
      { numRuns: 300 },
    );
  });

  it('says how many bytes the next message needs once its headers are there', () => {
    const whole = encodeMessage([Buffer.alloc(10), Buffer.alloc(1000)]);
    expect(parseMessages(whole.subarray(0, 2), 1 << 20).need).toBe(4);
    expect(parseMessages(whole.subarray(0, 6), 1 << 20).need).toBe(8);
    expect(parseMessages(whole.subarray(0, 20), 1 << 20).need).toBe(4 + 4 + 10 + 4);
    expect(parseMessages(whole.subarray(0, 30), 1 << 20).need).toBe(whole.length);
    expect(parseMessages(whole, 1 << 20)).toMatchObject({ used: whole.length, messages: [[Buffer.alloc(10), Buffer.alloc(1000)]] });
  });

  it('refuses frame counts and lengths outside the limits (the stream cannot be resynchronised)', () => {
    const count = (k: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(k);
      return b;
    };
    expect(() => parseMessages(count(0), 100)).toThrow(/0 frames/);
    expect(() => parseMessages(count(MAX_PIPE_FRAMES + 1), 100)).toThrow(/frames/);
    expect(() => parseMessages(count(0xffffffff), 100)).toThrow(/frames/);
    // A frame longer than the limit is refused from its header, before its bytes arrive.
    expect(() => parseMessages(Buffer.concat([count(1), count(101)]), 100)).toThrow(/101 bytes/);
    expect(parseMessages(Buffer.concat([count(1), count(100)]), 100).need).toBe(108);
    // Many frames each within the limit cannot add up to more than one frame's limit plus an envelope's room.
    const frames = Buffer.concat([count(MAX_PIPE_FRAMES), ...Array.from({ length: MAX_PIPE_FRAMES }, () => Buffer.concat([count(1000), Buffer.alloc(1000)]))]);
    expect(() => parseMessages(frames, 1000)).toThrow(/message of more than/);
    // Up to that total, it is a message like any other (66 frames of 1000 bytes under a limit of 1000 bytes).
    const k = Math.floor((1000 + PIPE_ENVELOPE_BYTES) / 1000);
    const fits = Buffer.concat([count(k), ...Array.from({ length: k }, () => Buffer.concat([count(1000), Buffer.alloc(1000)]))]);
    expect(parseMessages(fits, 1000).messages[0]).toHaveLength(k);
  });
});
