/**
 * The server's scheduling and batch safeguards (src/server): a step_batch runs in slices so other clients'
 * requests are served in between, a peer's requests still run in order, and the reply of one batch is capped
 * (later entries fail alone with message_too_large and do not run). In-process server; every wait bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { Client } from '../../src/client/client.js';
import { Env } from '../../src/env/env.js';
import { listPresets } from '../../src/config/load.js';
import { BatchJob, ProtocolHandler } from '../../src/server/protocol-handler.js';
import type { Reply } from '../../src/protocol/protocol.js';
import { startServer, type Server } from '../../src/server/server.js';
import { SessionManager } from '../../src/server/sessions.js';

const LOOPBACK = 'tcp://127.0.0.1:0';

function handler(maxBatchReplyBytes?: number): ProtocolHandler {
  const presets = listPresets();
  return new ProtocolHandler(new SessionManager({ presets }), { version: '0', presets, maxMessageBytes: 1 << 20 }, { validateReplies: true, ...(maxBatchReplyBytes !== undefined ? { maxBatchReplyBytes } : {}) });
}

type BatchReply = { results: { ok: boolean; result?: { info: { step: number } }; error?: { code: string; message: string } }[] };

describe('BatchJob', () => {
  it('a batch run in slices gives the same bytes as a batch run at once', () => {
    const run = (sliced: boolean): Buffer => {
      const h = handler();
      h.handleValue({ v: 1, op: 'reset', seed: 3 });
      const req = { v: 1, id: 'b', op: 'step_batch', steps: ['market browse --limit 5', 'task accept --task-id Task-1', 'bogus', 'sim resume', 'company status'].map((action) => ({ session: 's1', action })) };
      const job = h.beginPayload(Buffer.from(JSON.stringify(req)), 1 << 20);
      expect(job).toBeInstanceOf(BatchJob);
      const b = job as BatchJob;
      if (!sliced) return (b.run(Number.POSITIVE_INFINITY) as { frame: Buffer }).frame;
      let slices = 0;
      for (;;) {
        slices++;
        const r = b.run(0); // a deadline in the past: exactly one entry per call
        if (r !== null) {
          expect(slices).toBe(5);
          return r.frame;
        }
      }
    };
    const a = run(false);
    expect(run(true).equals(a)).toBe(true);
    const reply = JSON.parse(a.toString()) as Reply;
    expect(reply).toMatchObject({ v: 1, id: 'b', ok: true });
  });

  it("a JSON batch's frame is the UTF-8 of JSON.stringify of its whole reply, run at once or in slices (non-ASCII id and texts, errors)", () => {
    // The reply is assembled from entries encoded as they ran (their UTF-8 byte counts summed for the cap): the same
    // bytes as encoding the finished reply in one go, whatever the characters.
    for (const sliced of [false, true]) {
      const h = handler();
      h.handleValue({ v: 1, op: 'reset', seed: 4, options: { stall_steps: 0 } });
      const actions = ['company status', 'employee list', 'bogus-é✓😀', 'market browse --limit 3', 'task accept --task-id Tâche-\u0001', 'company status'];
      const steps = [...actions.map((action) => ({ session: 's1', action })), { session: 'nope', action: 'x' }];
      const b = h.beginPayload(Buffer.from(JSON.stringify({ v: 1, id: 'é-✓-😀', op: 'step_batch', steps })), 1 << 20) as BatchJob;
      b.keepResults = true;
      let r = b.run(sliced ? 0 : Number.POSITIVE_INFINITY);
      while (r === null) r = b.run(0);
      expect((r.reply as { result: BatchReply }).result.results).toHaveLength(steps.length);
      expect(r.frame.equals(Buffer.from(JSON.stringify(r.reply), 'utf8'))).toBe(true);
      // Multi-byte characters made it into the entries: more extra UTF-8 bytes than the id's 5.
      expect(r.frame.length - JSON.stringify(r.reply).length).toBeGreaterThan(5);
      expect(b.replyBytes).toBe(r.frame.length - Buffer.byteLength('{"v":1,"id":"é-✓-😀","ok":true,"result":{"results":]}}'));
    }
  });

  it('a slice ends after the entry that crosses its byte limit, whatever the time left (memory bounded by bytes)', () => {
    const h = handler();
    h.handleValue({ v: 1, op: 'reset', seed: 3 });
    const steps = Array.from({ length: 40 }, () => ({ session: 's1', action: 'market browse --limit 20' }));
    const b = h.beginPayload(Buffer.from(JSON.stringify({ v: 1, id: 'c', op: 'step_batch', steps })), 1 << 20) as BatchJob;
    const limit = 30_000;
    let before = 0;
    let calls = 0;
    for (;;) {
      calls++;
      const r = b.run(Number.POSITIVE_INFINITY, limit);
      if (r !== null) break;
      const slice = b.replyBytes - before;
      // At least the limit (a slice stops only after crossing it), at most the limit plus one entry.
      expect(slice).toBeGreaterThanOrEqual(limit);
      expect(slice).toBeLessThan(limit + 20_000);
      before = b.replyBytes;
    }
    expect(calls).toBeGreaterThan(3);
  });

  it('the cap holds with the refusals counted: 4096 entries of a large output stay within the cap plus one entry (JSON and binary)', () => {
    // Each entry past the cap still adds its refusal to the reply (~200 bytes): 4096 of them took a 1 MiB-capped reply
    // to 1.77 MB (40 entries ran) before the reply kept room for them. A binary reply counted its texts by an estimate
    // (UTF-8 bytes plus an eighth) that a listing's JSON text, escaped again inside the header, exceeds, and added its
    // refusals past the cap too: 1.8 MB.
    const cap = 1 << 20;
    for (const encoding of ['json', 'binary'] as const) {
      const h = handler(cap);
      h.handleValue({ v: 1, op: 'reset', seed: 100, options: { stall_steps: 0 } });
      const steps = Array.from({ length: 4096 }, () => ({ session: 's1', action: 'market browse --limit 200' }));
      const r = h.handleValue({ v: 1, op: 'step_batch', steps, ...(encoding === 'binary' ? { encoding } : {}) });
      expect(r.reply.ok).toBe(true);
      const size = (r.frame?.length ?? 0) + (r.arrays ?? []).reduce((a, f) => a + f.length, 0);
      const one = h.handleValue({ v: 1, op: 'step', session: 's1', action: 'market browse --limit 200' });
      expect(size, encoding).toBeLessThan(cap + (one.frame?.length ?? 0));
      const after = (h.handleValue({ v: 1, op: 'step', session: 's1', action: 'company status' }).reply as { result: { info: { step: number } } }).result.info.step;
      // Some entries ran (the step count moved by them and the probe), the rest were refused without running.
      expect(after).toBeGreaterThan(2);
      expect(after).toBeLessThan(4096);
      // The refused entries are the last ones: none runs again once one was refused.
      const ran = after - 2;
      if (encoding === 'json') {
        const items = (r.reply as { result: BatchReply }).result.results;
        expect(items.slice(0, ran).every((x) => x.ok)).toBe(true);
        expect(items.slice(ran).every((x) => !x.ok && x.error?.code === 'message_too_large')).toBe(true);
      } else {
        const errors = (r.reply as { result: { errors: { index: number; error: { code: string } }[] } }).result.errors;
        expect(errors.map((e) => e.index)).toEqual(Array.from({ length: 4096 - ran }, (_, k) => ran + k));
        expect(errors.every((e) => e.error.code === 'message_too_large')).toBe(true);
      }
    }
  });

  it('caps the reply: entries past the cap fail alone with message_too_large and do not run', () => {
    const h = handler(20_000);
    h.handleValue({ v: 1, op: 'reset', seed: 1 });
    const r = h.handleValue({ v: 1, op: 'step_batch', steps: Array.from({ length: 12 }, () => ({ session: 's1', action: 'market browse --limit 20' })) }).reply;
    expect(r.ok).toBe(true);
    const items = (r as { result: BatchReply }).result.results;
    const ran = items.filter((x) => x.ok);
    expect(ran.length).toBeGreaterThan(0);
    expect(ran.length).toBeLessThan(12);
    expect(items.slice(ran.length).every((x) => !x.ok && x.error?.code === 'message_too_large' && x.error.message.startsWith('not executed'))).toBe(true);
    const after = h.handleValue({ v: 1, op: 'step', session: 's1', action: 'company status' }).reply as { result: { info: { step: number } } };
    expect(after.result.info.step).toBe(ran.length + 1);
  });
});

describe('fair scheduling over a socket', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer({ endpoint: LOOPBACK, validateReplies: true });
  });
  afterAll(async () => {
    await server.close();
  });

  it('serves a lockstep client between the slices of a huge batch, and keeps each peer in order', async () => {
    const big = new Client({ endpoint: server.endpoint, timeoutMs: 120_000 });
    const small = new Client({ endpoint: server.endpoint, timeoutMs: 120_000 });
    // Hundreds of steps that never advance time: the stall rule is off.
    const { session: bs } = await big.reset({ seed: 8, options: { stall_steps: 0 } });
    const { session: ss } = await small.reset({ seed: 9, options: { stall_steps: 0 } });
    // Long enough on a fast engine (listings are reused since 2812b58: 600 steps took ~0.2 s on a loaded 2-core box,
    // too close to the lockstep latency there); ~25 KB a step keeps the reply far under the 64 MiB cap.
    const n = 1500;
    const t0 = performance.now();
    // Pipelined on one connection: the batch, then a step on the same session that must run after it.
    const batch = big.stepBatch(Array.from({ length: n }, () => ({ session: bs, action: 'market browse --limit 60' })));
    const after = big.step(bs, 'company status');
    let batchDone = 0;
    void batch.then(() => (batchDone = performance.now() - t0));
    const lat: number[] = [];
    while (batchDone === 0 && lat.length < 2000) {
      const t = performance.now();
      await small.step(ss, 'company status');
      lat.push(performance.now() - t);
    }
    const items = await batch;
    expect(items.every((x) => x.ok)).toBe(true);
    expect((await after).info.step).toBe(n + 1);
    // The lockstep client kept going while the batch ran, each step far quicker than the batch.
    expect(lat.length).toBeGreaterThan(5);
    lat.sort((a, b) => a - b);
    expect(lat[Math.floor(lat.length / 2)] as number).toBeLessThan(batchDone / 4);
    expect(server.stats().sliced_batches).toBeGreaterThan(0);
    await big.close();
    await small.close();
  });

  it('answers every pipelined request of a peer in order, with other peers interleaved', async () => {
    const d = new Dealer({ linger: 0, receiveTimeout: 30_000 });
    d.connect(server.endpoint);
    const other = new Client({ endpoint: server.endpoint, timeoutMs: 30_000 });
    // 240 steps that never advance time: the stall rule is off.
    await d.send(JSON.stringify({ v: 1, id: 0, op: 'reset', seed: 4, options: { stall_steps: 0 } }));
    const sid = (JSON.parse((await d.receive())[0]?.toString() ?? '{}') as { result: { session: string } }).result.session;
    const { session: os } = await other.reset({ seed: 5 });
    const local = new Env();
    local.reset({ seed: 4, options: { stall_steps: 0 } });
    const actions: string[] = [];
    for (let i = 1; i <= 40; i++) {
      if (i % 10 === 0) {
        const steps = Array.from({ length: 50 }, (_, j) => ({ session: sid, action: j % 2 === 0 ? 'market browse --limit 30' : 'company status' }));
        actions.push(...steps.map((s) => s.action));
        await d.send(JSON.stringify({ v: 1, id: i, op: 'step_batch', steps }));
      } else {
        actions.push('employee list');
        await d.send(JSON.stringify({ v: 1, id: i, op: 'step', session: sid, action: 'employee list' }));
      }
    }
    const busy = (async () => {
      for (let k = 0; k < 50; k++) await other.step(os, 'company status');
    })();
    const got: unknown[] = [];
    for (let i = 1; i <= 40; i++) {
      const r = JSON.parse((await d.receive())[0]?.toString() ?? '{}') as { id: number; result: { results?: { result: unknown }[] } & Record<string, unknown> };
      expect(r.id).toBe(i);
      if (r.result.results) got.push(...r.result.results.map((x) => x.result));
      else got.push(r.result);
    }
    await busy;
    expect(JSON.stringify(got)).toBe(JSON.stringify(actions.map((a) => local.step(a))));
    d.close();
    await other.close();
  });
});
