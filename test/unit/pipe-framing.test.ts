/**
 * The pipe transport's framing (src/server/pipe.ts): a message is a u32 frame count, then each frame's u32 length
 * and bytes. Messages cut anywhere are parsed once whole; counts and lengths outside the limits are refused.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeMessage, MAX_PIPE_FRAMES, MAX_PIPE_SPIN_US, parseMessages, PipeRouter, PIPE_ENVELOPE_BYTES } from '../../src/server/pipe.js';

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

  it('encodes any frames as their UTF-8 bytes with their lengths, small and large alike (the scratch buffer and beyond)', () => {
    const exact = (frames: (Buffer | string)[]): Buffer => {
      const parts: Buffer[] = [Buffer.alloc(4)];
      parts[0]!.writeUInt32LE(frames.length, 0);
      for (const f of asBuffers(frames)) {
        const n = Buffer.alloc(4);
        n.writeUInt32LE(f.length, 0);
        parts.push(n, f);
      }
      return Buffer.concat(parts);
    };
    const text = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), fc.string({ unit: fc.constantFrom('\ud800', '\udc00', 'é', '€', '😀', 'a', '"'), maxLength: 200 }));
    // Repeated up to ~90,000 code units: messages on both sides of the 64 KiB scratch buffer.
    const big = fc.tuple(text, fc.integer({ min: 1, max: 450 })).map(([t, k]) => t.repeat(k));
    fc.assert(
      fc.property(fc.array(fc.oneof(frameArb, text, big), { minLength: 1, maxLength: 4 }), (frames) => {
        expect(encodeMessage(frames).equals(exact(frames))).toBe(true);
      }),
      { numRuns: 300 },
    );
    // A returned message is its own copy: the next one does not overwrite it.
    const first = encodeMessage([Buffer.from('id'), 'one']);
    encodeMessage([Buffer.from('id'), 'two']);
    expect(parseMessages(first, 1 << 20).messages[0]?.[1]?.toString()).toBe('one');
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
    // A payload (the last frame after the routing id) above the limit stops the parse at its header, for the caller to
    // skip its bytes: the messages before it are whole, and parsing goes on after its bytes.
    const before = encodeMessage([Buffer.from('id0'), 'ok']);
    const head = Buffer.concat([count(2), count(3), Buffer.from('idX'), count(5000)]);
    const after = encodeMessage([Buffer.from('id1'), 'next']);
    const stream = Buffer.concat([before, head, Buffer.alloc(5000, 0x78), after]);
    const r = parseMessages(stream, 100);
    expect(r.messages.map((m) => m.map(String))).toEqual([['id0', 'ok']]);
    expect(r.used).toBe(before.length + head.length);
    expect(r.oversize).toEqual({ head: [Buffer.from('idX')], bytes: 5000 });
    // With an envelope before the payload, the whole head comes back.
    const enveloped = parseMessages(Buffer.concat([count(3), count(3), Buffer.from('idY'), count(0), count(5000)]), 100);
    expect(enveloped.oversize).toEqual({ head: [Buffer.from('idY'), Buffer.alloc(0)], bytes: 5000 });
    expect(parseMessages(stream.subarray(r.used + 5000), 100)).toMatchObject({ messages: [[Buffer.from('id1'), Buffer.from('next')]], oversize: null });
    // An oversized frame that is not the last of its message cannot be skipped alone.
    expect(() => parseMessages(Buffer.concat([count(3), count(3), Buffer.from('idX'), count(5000)]), 100)).toThrow(/5000 bytes/);
    // Many frames each within the limit cannot add up to more than one frame's limit plus an envelope's room.
    const frames = Buffer.concat([count(MAX_PIPE_FRAMES), ...Array.from({ length: MAX_PIPE_FRAMES }, () => Buffer.concat([count(1000), Buffer.alloc(1000)]))]);
    expect(() => parseMessages(frames, 1000)).toThrow(/message of more than/);
    // Up to that total, it is a message like any other (66 frames of 1000 bytes under a limit of 1000 bytes).
    const k = Math.floor((1000 + PIPE_ENVELOPE_BYTES) / 1000);
    const fits = Buffer.concat([count(k), ...Array.from({ length: k }, () => Buffer.concat([count(1000), Buffer.alloc(1000)]))]);
    expect(parseMessages(fits, 1000).messages[0]).toHaveLength(k);
  });
});

describe('PipeRouter output', () => {
  /** A PipeRouter on two FIFOs whose output is observed: the direct writes (cut as `takes` says) and the stream's. */
  function observed(takes: (number | string)[]) {
    const dir = mkdtempSync(join(tmpdir(), 'pipe-out-'));
    const fifo = (name: string): number => {
      execFileSync('mkfifo', [join(dir, name)]);
      return openSync(join(dir, name), 'r+');
    };
    const router = new PipeRouter(fifo('in'), fifo('out'), 1 << 20);
    const bytes: Buffer[] = [];
    const how: string[] = [];
    let queued = 0;
    const inner = router as unknown as { output: unknown; writeNow: (buf: Buffer, length: number) => number };
    inner.output = {
      get writableLength() {
        return queued;
      },
      write(b: Buffer) {
        bytes.push(Buffer.from(b));
        how.push(`stream ${b.length}`);
        queued += b.length;
        return false;
      },
      end() {},
      destroy() {},
      on() {},
    };
    inner.writeNow = (buf, length) => {
      const t = takes.shift() ?? length;
      if (typeof t === 'string') throw Object.assign(new Error(`${t}: refused, write`), { code: t });
      const n = Math.min(t, length);
      bytes.push(Buffer.from(buf.subarray(0, n)));
      how.push(`direct ${n}/${length}`);
      return n;
    };
    return { router, bytes, how, drain: () => (queued = 0), done: () => (router.close(), rmSync(dir, { recursive: true, force: true })) };
  }

  it('a reply the pipe takes in part: the rest goes to the stream, and later replies wait behind it there', () => {
    const o = observed([1000, 'EAGAIN']);
    const m = (i: number): (Buffer | string)[] => [Buffer.from('id'), `{"n":${i},"pad":"${'é'.repeat(1500 + i)}"}`];
    o.router.sendNow(m(1)); // direct, cut after 1000 bytes: the rest to the stream
    o.router.sendNow(m(2)); // the stream holds bytes: behind them
    o.drain();
    o.router.sendNow(m(3)); // direct: EAGAIN, all of it to the stream
    o.router.sendNow(m(4));
    o.drain();
    o.router.sendNow(m(5)); // direct, whole
    o.router.sendNow([Buffer.from('id'), 'x'.repeat(30_000)]); // beyond the scratch buffer: the stream
    const first = encodeMessage(m(1)).length;
    expect(o.how).toEqual([
      `direct 1000/${first}`,
      `stream ${first - 1000}`,
      `stream ${encodeMessage(m(2)).length}`,
      `stream ${encodeMessage(m(3)).length}`,
      `stream ${encodeMessage(m(4)).length}`,
      `direct ${encodeMessage(m(5)).length}/${encodeMessage(m(5)).length}`,
      'stream 30014',
    ]);
    expect(Buffer.concat(o.bytes).equals(Buffer.concat([1, 2, 3, 4, 5].map((i) => encodeMessage(m(i))).concat(encodeMessage([Buffer.from('id'), 'x'.repeat(30_000)]))))).toBe(true);
    o.done();
  });

  it('a failed direct write ends the transport as a failed stream write does', async () => {
    const o = observed(['EPIPE']);
    o.router.sendNow([Buffer.from('id'), '{}']); // handed over; the failure comes after
    expect(await o.router.ended).toEqual({ reason: 'pipe write failed: write EPIPE', clean: false });
    expect(() => o.router.sendNow([Buffer.from('id'), '{}'])).toThrow('pipe write failed: write EPIPE');
    o.done();
  });
});

describe('PipeRouter input polling (spinUs)', () => {
  /** A router whose input is a FIFO we write into synchronously (the event loop has not read it yet). */
  function polling(spinUs: number) {
    const dir = mkdtempSync(join(tmpdir(), 'pipe-spin-'));
    const path = (name: string): string => {
      execFileSync('mkfifo', [join(dir, name)]);
      return join(dir, name);
    };
    const inPath = path('in');
    const router = new PipeRouter(openSync(inPath, 'r+'), openSync(path('out'), 'r+'), 1 << 20, spinUs);
    const writer = openSync(inPath, 'w');
    const inner = router as unknown as { spinBackoff: number; spinSkip: number };
    return {
      router,
      write: (b: Buffer) => writeSync(writer, b),
      backoff: () => [inner.spinBackoff, inner.spinSkip],
      done: () => {
        router.close();
        closeSync(writer);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const msg = (i: number): Buffer => encodeMessage([Buffer.from('client'), `{"v":1,"id":${i},"op":"hello"}`]);
  const texts = (m: Buffer[]): string[] => m.map((f) => f.toString('utf8'));

  it('a request already in the pipe is read by the poll, before the event loop runs', async () => {
    const p = polling(200_000);
    p.write(msg(1));
    const got = p.router.receive(); // same tick: only the poll can have read it
    expect(p.router.spinCounts).toEqual({ hits: 1, misses: 0, skipped: 0 });
    expect(texts(await got)).toEqual(['client', '{"v":1,"id":1,"op":"hello"}']);
    p.done();
  });

  it('a poll that runs out leaves the request to the event loop, and the next receives skip polling, twice as many after each miss', async () => {
    const p = polling(1000);
    const first = p.router.receive(); // nothing there: polls 1 ms, then waits
    expect(p.router.spinCounts).toEqual({ hits: 0, misses: 1, skipped: 0 });
    expect(p.backoff()).toEqual([1, 1]);
    p.write(msg(1));
    expect(texts(await first)[1]).toBe('{"v":1,"id":1,"op":"hello"}');
    const second = p.router.receive(); // skipped
    expect(p.router.spinCounts).toEqual({ hits: 0, misses: 1, skipped: 1 });
    p.write(msg(2));
    expect(texts(await second)[1]).toBe('{"v":1,"id":2,"op":"hello"}');
    const third = p.router.receive(); // polls again, runs out: two receives skip now
    expect(p.router.spinCounts).toEqual({ hits: 0, misses: 2, skipped: 1 });
    expect(p.backoff()).toEqual([2, 2]);
    p.write(msg(3));
    await third;
    for (const i of [4, 5]) {
      p.write(msg(i));
      const m = p.router.receive(); // skipped: the event loop reads it
      expect(texts(await m)[1]).toBe(`{"v":1,"id":${i},"op":"hello"}`);
    }
    expect(p.router.spinCounts).toEqual({ hits: 0, misses: 2, skipped: 3 });
    p.write(msg(6));
    const hit = p.router.receive(); // polls: there it is; the backoff starts over
    expect(p.router.spinCounts).toEqual({ hits: 1, misses: 2, skipped: 3 });
    expect(p.backoff()).toEqual([0, 0]);
    expect(texts(await hit)[1]).toBe('{"v":1,"id":6,"op":"hello"}');
    p.done();
  });

  it('a request cut across the poll and the event loop arrives whole', async () => {
    const p = polling(1000);
    const whole = Buffer.concat([msg(7), msg(8)]);
    const cut = msg(7).length - 5;
    p.write(whole.subarray(0, cut));
    const first = p.router.receive(); // the poll reads the start, waits 1 ms for the rest, then leaves it
    expect(p.router.spinCounts.misses).toBe(1);
    p.write(whole.subarray(cut));
    expect(texts(await first)[1]).toBe('{"v":1,"id":7,"op":"hello"}');
    expect(texts(await p.router.receive())[1]).toBe('{"v":1,"id":8,"op":"hello"}'); // queued: no poll
    expect(p.router.spinCounts).toEqual({ hits: 0, misses: 1, skipped: 0 });
    p.done();
  });

  it('refuses a budget that is not a whole number of microseconds up to a second', () => {
    for (const bad of [-1, 0.5, MAX_PIPE_SPIN_US + 1, Number.NaN]) {
      expect(() => new PipeRouter(0, 1, 1 << 20, bad)).toThrow(RangeError);
    }
  });
});
