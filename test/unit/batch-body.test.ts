import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { BATCH_STRING_BODY_MAX_BYTES, BatchJob, batchBody, ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';

/** The straightforward frame: the whole reply encoded at once. */
function plainFrame(id: string | number | null, parts: readonly string[]): Buffer {
  const results = parts.length === 0 ? [] : (JSON.parse(parts.join('') + ']') as unknown[]);
  return Buffer.from(JSON.stringify({ v: 1, id, ok: true, result: { results } }), 'utf8');
}

function handler(): ProtocolHandler {
  const presets = listPresets();
  return new ProtocolHandler(new SessionManager({ presets, maxSessions: 8 }), { version: '0', presets, maxMessageBytes: 1 << 20 }, {});
}

function bytesOf(body: string | Buffer): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

describe('JSON step_batch reply body', () => {
  it('batchBody: the bytes of the whole reply encoded at once, a string up to the limit and a Buffer above it', () => {
    const entry = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.dictionary(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), { maxKeys: 3 }));
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 12 }), fc.oneof(fc.integer(), fc.string({ unit: 'binary' }), fc.constant(null)), (entries, id) => {
        const parts = entries.map((e, i) => (i === 0 ? '[' : ',') + JSON.stringify(e));
        const bytes = parts.reduce((a, p) => a + Buffer.byteLength(p, 'utf8'), 0);
        const want = plainFrame(id, parts);
        const body = batchBody(id, parts, bytes);
        expect(typeof body).toBe('string');
        expect(bytesOf(body).equals(want)).toBe(true);
        // Above the limit (the count says so): the same bytes, as a Buffer.
        const big = batchBody(id, parts, BATCH_STRING_BODY_MAX_BYTES + 1);
        expect(Buffer.isBuffer(big)).toBe(true);
        expect((big as Buffer).equals(want)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('a handled batch: the frame equals JSON.stringify of the reply, and its byte count is exact with non-ASCII text', () => {
    const h = handler();
    const sid = (h.handleValue({ v: 1, op: 'reset', seed: 1 }).reply as { result: { session: string } }).result.session;
    // An unknown command is echoed in the observation's text: '☕café' puts 2- and 3-byte UTF-8 characters in the reply.
    const steps = [
      { session: sid, action: 'company status' },
      { session: sid, action: '☕café status' },
      { session: 'nope', action: 'x' },
      { session: sid, action: 'employee list' },
    ];
    const job = h.beginPayload(Buffer.from(JSON.stringify({ v: 1, id: 'b1', op: 'step_batch', steps })), 1 << 20) as BatchJob;
    expect(job).toBeInstanceOf(BatchJob);
    job.keepResults = true;
    const r = job.run(Number.POSITIVE_INFINITY);
    expect(r).not.toBeNull();
    if (r === null) return;
    expect(typeof r.body).toBe('string');
    expect(r.frame.equals(Buffer.from(JSON.stringify(r.reply), 'utf8'))).toBe(true);
    expect(bytesOf(r.body).equals(r.frame)).toBe(true);
    expect(r.frame.toString('utf8')).toContain("'☕café'");
    // The reply's counted size is its UTF-8 size (the cap and the bytes in flight are counted with it), not its length in
    // UTF-16 code units: the head and the closing `]}}` are all it leaves out.
    const head = Buffer.byteLength('{"v":1,"id":"b1","ok":true,"result":{"results":');
    expect(job.replyBytes + head + 3).toBe(r.frame.length);
    expect(r.frame.length).toBeGreaterThan(r.frame.toString('utf8').length);
  });

  it('a reply above the string limit is sent as the same bytes in a Buffer', () => {
    const h = handler();
    const sid = (h.handleValue({ v: 1, op: 'reset', seed: 2 }).reply as { result: { session: string } }).result.session;
    const one = h.handleValue({ v: 1, op: 'step', session: sid, action: 'market browse --limit 200' }).frame.length;
    const n = Math.ceil((BATCH_STRING_BODY_MAX_BYTES * 1.2) / one);
    const steps = Array.from({ length: n }, () => ({ session: sid, action: 'market browse --limit 200' }));
    const r = h.handleValue({ v: 1, id: 7, op: 'step_batch', steps });
    expect(r.reply.ok).toBe(true);
    expect(Buffer.isBuffer(r.body)).toBe(true);
    expect(r.frame.length).toBeGreaterThan(BATCH_STRING_BODY_MAX_BYTES);
    expect(r.frame.equals(Buffer.from(JSON.stringify(r.reply), 'utf8'))).toBe(true);
  });
});
