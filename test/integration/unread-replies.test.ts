/**
 * Replies a client does not read wait in ZeroMQ's queue for it (16 per connection, 64 before). A large JSON reply used to
 * be handed over as a string, which zeromq.js copies into memory the server cannot see: a client whose turn chat held 14 MB,
 * sending `turn_messages` without reading, made the server hold ~0.9 GB per connection (1.8 GB for two, still held
 * after the stall timeout), and the memory guard saw nothing. Now large bodies go as Buffers (ZeroMQ takes them
 * without a copy and holds them until the client takes them), which the guard counts, and the ops with bulk output
 * (`snapshot`, `turn_snapshot`, `turn_messages`) pass admission control like the ops that create bulk state.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { listPresets } from '../../src/config/load.js';
import { UNREAD_TOTAL_HEADROOM_DIVISOR } from '../../src/protocol/limits.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import { startServer } from '../../src/server/server.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

/** Wait until the server has stopped replying (its count unchanged for `quietMs`), at most `maxMs`. */
async function settled(replied: () => number, quietMs: number, maxMs: number): Promise<number> {
  const end = Date.now() + maxMs;
  let last = replied();
  let since = Date.now();
  while (Date.now() < end) {
    await new Promise((res) => setTimeout(res, 20));
    const now = replied();
    if (now !== last) [last, since] = [now, Date.now()];
    else if (Date.now() - since >= quietMs) break;
  }
  return last;
}

describe('replies a client does not read', () => {
  it('large ones are held as Buffers the memory guard counts', async () => {
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000 });
    const d = new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveTimeout: 10_000 });
    try {
      d.connect(s.endpoint);
      const call = async (req: Record<string, unknown>): Promise<Record<string, unknown>> => {
        await d.send(JSON.stringify({ v: 1, ...req }));
        const [f] = await d.receive();
        return JSON.parse((f as Buffer).toString('utf8')) as Record<string, unknown>;
      };
      const r = (await call({ op: 'turn_reset', seed: 1, options: { history_keep_rounds: 1000, max_turns: null } })) as { result: { session: string } };
      const session = r.result.session;
      await call({ op: 'turn_step', session, action: { content: 'x'.repeat(4 << 20) } });
      const before = process.memoryUsage().arrayBuffers;
      const n = 30;
      const req = JSON.stringify({ v: 1, op: 'turn_messages', session });
      for (let i = 0; i < n; i++) await d.send(req);
      // The server answers them until ZeroMQ's queue for the client is full (16 replies, its send high-water mark; a
      // few more may move on into the client's socket buffers), then keeps one in its outbox; the client reads none.
      const handed = (await settled(() => s.stats().replied, 500, 20_000)) - 2;
      // (16 less the two replies already read: ZeroMQ learns that its I/O thread took them 8 at a time.)
      expect(handed).toBeGreaterThanOrEqual(12);
      const held = process.memoryUsage().arrayBuffers - before;
      // The replies handed over wait in ZeroMQ's queue for the client as Buffers (a few may sit in its socket buffers).
      expect(held).toBeGreaterThan((handed / 2) * (4 << 20));
    } finally {
      d.close();
      await s.close();
    }
  }, 60_000);

  it('a connection that does not read holds only a few of its replies in the server (step, never refused)', async () => {
    // Before: ZeroMQ kept up to 64 replies per connection (the send high-water mark) plus one in the server's outbox,
    // and kept them after the stall drop while the connection stayed open: one connection pipelining `scratchpad
    // read` steps (1.7 MB replies, never refused under memory pressure) made the server hold ~80 MB.
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000 });
    const d = new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveTimeout: 10_000 });
    try {
      d.connect(s.endpoint);
      const call = async (req: Record<string, unknown>): Promise<Buffer> => {
        await d.send(JSON.stringify({ v: 1, ...req }));
        const [f] = await d.receive();
        return f as Buffer;
      };
      const session = (JSON.parse((await call({ op: 'reset', seed: 1 })).toString('utf8')) as { result: { session: string } }).result.session;
      // A full scratchpad of control characters: each is 7 bytes in the reply (JSON in JSON).
      for (let i = 0; i < 4; i++) await call({ op: 'step', session, action: `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}` });
      const read = JSON.stringify({ v: 1, op: 'step', session, action: 'yc-bench scratchpad read' });
      const replyBytes = (await call(JSON.parse(read) as Record<string, unknown>)).length;
      expect(replyBytes).toBeGreaterThan(1_500_000);
      gc();
      const before = process.memoryUsage().arrayBuffers;
      const n = 100;
      for (let i = 0; i < n; i++) await d.send(read);
      const replied = (await settled(() => s.stats().replied, 500, 20_000)) - 6;
      // (zeromq.js lets go of a reply's Buffer on this thread some time after ZeroMQ is done with it.)
      await new Promise((res) => setTimeout(res, 200));
      gc();
      const held = process.memoryUsage().arrayBuffers - before;
      // The server answered some (the client's socket buffers take a few), then its queue for the client filled.
      expect(replied).toBeGreaterThanOrEqual(10);
      expect(replied).toBeLessThan(n);
      // The send high-water mark (16) in ZeroMQ and one in the server's outbox, a few more taken by ZeroMQ (it learns
      // 8 at a time that its I/O thread took some) and one or two in this process's client socket: 64 before.
      expect(held).toBeLessThan(30 * replyBytes);
    } finally {
      d.close();
      await s.close();
    }
  }, 60_000);

  it('snapshot, turn_snapshot and turn_messages are refused with capacity under memory pressure', () => {
    const presets = listPresets();
    let over: string | null = null;
    const h = new ProtocolHandler(new SessionManager({ presets }), { version: '9.9.9', presets, maxMessageBytes: 1 << 20 }, { admit: () => over });
    const env = (h.handleValue({ v: 1, op: 'reset', seed: 1 }).reply as { result: { session: string } }).result.session;
    const turns = (h.handleValue({ v: 1, op: 'turn_reset', seed: 1 }).reply as { result: { session: string } }).result.session;
    over = 'server at capacity: test; retry later';
    for (const [op, session] of [['snapshot', env], ['turn_snapshot', turns], ['turn_messages', turns]] as const) {
      const r = h.handleValue({ v: 1, op, session }).reply;
      expect(r.ok ? 'ok' : r.error.code, op).toBe('capacity');
    }
    // Steps of live sessions and close are still served.
    expect(h.handleValue({ v: 1, op: 'step', session: env, action: 'company status' }).reply.ok).toBe(true);
    expect(h.handleValue({ v: 1, op: 'close', session: turns }).reply.ok).toBe(true);
  });
});

describe('the unread-reply budget of a connection (maxUnreadReplyBytes, serve --max-unread-mib)', () => {
  it('a connection that never reads cannot make the server hold more than its budget; its requests beyond it are refused (capacity) and another client is served', async () => {
    // Before: nothing counted reply bytes per connection. ZeroMQ holds up to its send high-water mark (16) of a
    // connection's replies whatever their size, so a connection sending large-reply requests without reading made the
    // server hold 16 of them (plus one in its outbox): ~29 MB of 1.7 MB `scratchpad read` steps here, ~1.1 GB of 64 MiB
    // `step_batch` replies, before any memory guard looked.
    // (Above the ~6 MB of replies of the set-up below: a scratchpad append's reply is ~1 MB, a read's ~1.7 MB.)
    const budget = 8 << 20;
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadReplyBytes: budget });
    const d = new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveTimeout: 10_000 });
    const other = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    try {
      d.connect(s.endpoint);
      other.connect(s.endpoint);
      const call = async (sock: Dealer, req: Record<string, unknown>): Promise<Record<string, unknown> & { ok: boolean }> => {
        await sock.send(JSON.stringify({ v: 1, ...req }));
        const [f] = await sock.receive();
        return JSON.parse((f as Buffer).toString('utf8')) as Record<string, unknown> & { ok: boolean };
      };
      // `hello` announces the budget, so a client can size its requests to it.
      expect(((await call(other, { op: 'hello' })) as unknown as { result: { limits: Record<string, unknown> } }).result.limits.max_unread_reply_bytes).toBe(budget);
      const session = ((await call(d, { op: 'reset', seed: 1 })) as unknown as { result: { session: string } }).result.session;
      for (let i = 0; i < 4; i++) await call(d, { op: 'step', session, action: `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}` });
      await d.send(JSON.stringify({ v: 1, op: 'step', session, action: 'yc-bench scratchpad read' }));
      const replyBytes = ((await d.receive())[0] as Buffer).length;
      expect(replyBytes).toBeGreaterThan(1_500_000);
      // The other client's session is made before the baseline: generating its world allocates typed arrays of its own,
      // which are not replies.
      const mine = ((await call(other, { op: 'reset', seed: 2 })) as unknown as { result: { session: string } }).result.session;
      gc();
      const before = process.memoryUsage().arrayBuffers;
      const n = 60;
      for (let i = 0; i < n; i++) await d.send(JSON.stringify({ v: 1, id: i, op: 'step', session, action: 'yc-bench scratchpad read' }));
      // Another client is served meanwhile, its requests and replies as usual.
      for (let i = 0; i < 5; i++) expect((await call(other, { op: 'step', session: mine, action: 'company status' })).ok).toBe(true);
      await settled(() => s.stats().replied, 500, 20_000);
      // What the server still holds once ZeroMQ has released what it wrote out: zero-copy buffers come back through
      // zeromq.js's release callbacks on this thread, then a collection. The least of a few samples over a second, so
      // a release still on its way is not taken for a reply held.
      let held = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 5; k++) {
        await new Promise((res) => setTimeout(res, 200));
        gc();
        held = Math.min(held, process.memoryUsage().arrayBuffers - before);
      }
      // The budget, one reply admitted just below it and one waiting in the connection's outbox, and one more: ZeroMQ's
      // I/O thread may hold a reply beyond the 17 the count assumes (the one it encodes and the next it took from the
      // queue; one fresh-clone CI run under load measured 13.85 MB here against budget + 2 replies + 1 MiB, 12.8 MB,
      // where runs on an idle machine measure 0.7-6.7 MB). A little slack for the refusals and the other client's
      // replies. Without the budget the server holds ~23.5 MB here (every reply ZeroMQ queues).
      expect(held).toBeLessThan(budget + 3 * replyBytes + (1 << 20));
      // The refused requests were answered in order, with their ids, once the connection read.
      const codes: string[] = [];
      for (let i = 0; i < n; i++) {
        const r = JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as { id: number; ok: boolean; error?: { code: string; message: string } };
        expect(r.id).toBe(i);
        if (!r.ok) expect(r.error?.message).toMatch(/unread/);
        codes.push(r.ok ? 'ok' : (r.error?.code ?? '?'));
      }
      expect(codes.filter((c) => c === 'capacity').length).toBeGreaterThan(0);
      expect(codes.filter((c) => c === 'ok').length).toBeGreaterThan(1);
      // A connection that reads is served again: the server cannot see that it read, only that ZeroMQ holds at most its
      // last 17 replies (its send high-water mark and one being written), so the refusals (small replies) let its large
      // replies leave the count: at most 17 refusals in a row, and budget / reply size large replies every 17.
      let run = 0;
      let longest = 0;
      let served = 0;
      for (let i = 0; i < 51; i++) {
        const ok = (await call(d, { op: 'step', session, action: 'yc-bench scratchpad read' })).ok;
        run = ok ? 0 : run + 1;
        longest = Math.max(longest, run);
        if (ok) served++;
      }
      expect(longest).toBeLessThanOrEqual(17);
      expect(served).toBeGreaterThanOrEqual(3 * Math.floor(budget / replyBytes));
    } finally {
      d.close();
      other.close();
      await s.close();
    }
  }, 60_000);
});

describe('the unread-reply budget of the server, across connections (maxUnreadTotalBytes, serve --max-unread-total-mib)', () => {
  /**
   * Connections that never read, in the tests of a reading client: each takes a large reply (~1.7 MB) while it holds
   * nothing, 8 of them below the 16 MiB budget, and from then on holds something (the reply ZeroMQ cannot write out) and
   * is refused from the budget on; with their per-connection budget of 4 MiB they could hold twice the total. Their
   * socket buffers are kept small (64 KiB): unbounded, the kernel grows them up to tcp_rmem's maximum, and on a host
   * where that is 32 MiB every reply left the process, so what the tests saw depended on the host. 20 of them, each
   * taking a reply while it holds nothing, fill the headroom too, and a reading client then waits until they read or
   * close (docs/protocol.md; the test of that is in the next group): with 20 here the first test failed in CI (the
   * reader refused for 10 s), and with small socket buffers every time (21.8 MB held, 13 replies).
   */
  const HOLDING = 8;

  it('many connections that never read cannot make the server hold more than the total budget; a client that reads is still served', async () => {
    // Before: each connection had a budget of its own and nothing bounded their sum, so one process opening N DEALER
    // sockets that pipeline large-reply requests without reading made the server hold up to N budgets (with the default
    // 256 MiB budget and `step_batch`, N x 256 MiB). Measured then with 20 connections under a 4 MiB budget each
    // sending 1.7 MB `scratchpad read` steps: the server held ~37 MB once the socket buffers had taken what they could,
    // above the 16 MiB bound checked below.
    const perConnection = 4 << 20;
    const total = 16 << 20;
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadReplyBytes: perConnection, maxUnreadTotalBytes: total });
    const hostile = Array.from({ length: HOLDING }, () => new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveBufferSize: 64 << 10, receiveTimeout: 10_000 }));
    const reader = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    try {
      const call = async (sock: Dealer, req: Record<string, unknown>): Promise<Record<string, unknown> & { ok: boolean; error?: { code: string; message: string } }> => {
        await sock.send(JSON.stringify({ v: 1, ...req }));
        const [f] = await sock.receive();
        return JSON.parse((f as Buffer).toString('utf8')) as Record<string, unknown> & { ok: boolean };
      };
      reader.connect(s.endpoint);
      // `hello` announces the total budget next to the per-connection one, and the headroom above it (a quarter).
      const limits = ((await call(reader, { op: 'hello' })) as unknown as { result: { limits: Record<string, unknown> } }).result.limits;
      expect(limits.max_unread_reply_bytes).toBe(perConnection);
      expect(limits.max_unread_total_bytes).toBe(total);
      expect(limits.unread_total_headroom_bytes).toBe(total / UNREAD_TOTAL_HEADROOM_DIVISOR);
      const sessions: string[] = [];
      for (const d of hostile) {
        d.connect(s.endpoint);
        const session = ((await call(d, { op: 'reset', seed: 1 })) as unknown as { result: { session: string } }).result.session;
        for (let i = 0; i < 4; i++) await call(d, { op: 'step', session, action: `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}` });
        // 17 small replies move the appends' large replies out of the connection's count.
        for (let i = 0; i < 17; i++) await call(d, { op: 'hello' });
        sessions.push(session);
      }
      await hostile[0]?.send(JSON.stringify({ v: 1, op: 'step', session: sessions[0], action: 'yc-bench scratchpad read' }));
      const replyBytes = ((await hostile[0]?.receive())?.[0] as Buffer).length;
      expect(replyBytes).toBeGreaterThan(1_500_000);
      for (let i = 0; i < 17; i++) await call(hostile[0] as Dealer, { op: 'hello' });
      const mine = ((await call(reader, { op: 'reset', seed: 2 })) as unknown as { result: { session: string } }).result.session;
      for (let i = 0; i < 4; i++) await call(reader, { op: 'step', session: mine, action: `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}` });
      for (let i = 0; i < 17; i++) await call(reader, { op: 'hello' });
      gc();
      const before = process.memoryUsage().arrayBuffers;
      const n = 40;
      for (let i = 0; i < n; i++) {
        for (const [k, d] of hostile.entries()) await d.send(JSON.stringify({ v: 1, id: i, op: 'step', session: sessions[k], action: 'yc-bench scratchpad read' }));
      }
      await settled(() => s.stats().replied, 500, 30_000);
      let held = Number.POSITIVE_INFINITY;
      for (let k = 0; k < 5; k++) {
        await new Promise((res) => setTimeout(res, 200));
        gc();
        held = Math.min(held, process.memoryUsage().arrayBuffers - before);
      }
      // The total, one reply admitted just below it, one in an outbox and one ZeroMQ's I/O thread may hold beyond the
      // count (as for one connection above), and a little slack. Each connection alone stays within its own budget.
      expect(held).toBeLessThan(total + 3 * replyBytes + (1 << 20));
      // A client that reads its replies is still served, large replies too: the connections that do not read hold the
      // most and are the ones refused. The reader holds nothing counted, so it may be refused only for the total and
      // its headroom (what is held, the garbage of replies already taken included, can pass it until the server's
      // rate-limited collection runs): that refusal says "retry later", and the reader does, after 50 ms, for at most
      // 10 s. Any other refusal fails, with its message.
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        let r = await call(reader, { op: 'step', session: mine, action: 'company status' });
        while (!r.ok && /their budget plus its headroom .* retry later$/.test(r.error?.message ?? '') && performance.now() - t0 < 10_000) {
          await new Promise((res) => setTimeout(res, 50));
          r = await call(reader, { op: 'step', session: mine, action: 'company status' });
        }
        expect(r.ok, JSON.stringify(r.error)).toBe(true);
      }
      // 51 requests, retried after 50 ms when refused for the total budget (as that refusal says: retry later; the server
      // collects at most once every 20 times a collection's cost, so a burst of immediate retries on a loaded machine
      // could all fall between two collections: served 1 of 51 in a CI run beside other jobs) and at once when refused
      // for its own budget (the refusals move its window on).
      let served = 0;
      for (let i = 0; i < 51; i++) {
        const r = await call(reader, { op: 'step', session: mine, action: 'yc-bench scratchpad read' });
        if (!r.ok) expect(r.error?.code).toBe('capacity');
        if (r.ok) served++;
        else if (/--max-unread-total-mib/.test(r.error?.message ?? '')) await new Promise((res) => setTimeout(res, 50));
      }
      // Its own budget (4 MiB: 2-3 of its 1.7 MB replies every 17 requests) refuses most of them; the total budget
      // refused some too until the buffers were measured after a collection (the next test).
      expect(served).toBeGreaterThanOrEqual(2);
      // The refused requests were answered `capacity`, in order with their ids, naming the total budget.
      let refused = 0;
      let answered = 0;
      for (const d of hostile) {
        for (let i = 0; i < n; i++) {
          const r = JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as { id: number; ok: boolean; error?: { code: string; message: string } };
          expect(r.id).toBe(i);
          answered++;
          if (!r.ok) {
            expect(r.error?.code).toBe('capacity');
            if (/--max-unread-total-mib/.test(r.error?.message ?? '')) refused++;
          }
        }
      }
      expect(answered).toBe(n * hostile.length);
      expect(refused).toBeGreaterThan(0);
    } finally {
      for (const d of hostile) d.close();
      reader.close();
      await s.close();
    }
  }, 90_000);

  /** The server's collection (a private field), replaced by the test to watch it or to delay it. */
  type Collecting = { collect: (() => void) | null; collectMs: number; held: { bytes: number; size: number }; outboxBytes: number; unread: { total: number; size: number; unwatched: number } };

  /**
   * `HOLDING` connections that never read flood the server with large-reply requests; then a client that reads takes 12
   * large replies, retrying after 50 ms when refused for the total budget (as its message says: retry later) and at
   * once when refused for its own (4 MiB: 2-3 of its 1.7 MB replies every 17 requests; the refusals move its window
   * on), for at most 15 s. `beforeReading` runs when the flood has settled, with the server's collection to wrap. What
   * the server measured is kept for a failure's message.
   */
  async function readAfterFlood(beforeReading: (c: Collecting) => void = () => undefined): Promise<{ served: number; refused: number; notes: string }> {
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadReplyBytes: 4 << 20, maxUnreadTotalBytes: 16 << 20 });
    const hostile = Array.from({ length: HOLDING }, () => new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveBufferSize: 64 << 10, receiveTimeout: 10_000 }));
    const reader = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    type Reply = { id?: number; ok: boolean; result?: { session: string }; error?: { code: string; message: string } };
    const call = async (sock: Dealer, req: Record<string, unknown>): Promise<Reply> => {
      await sock.send(JSON.stringify({ v: 1, ...req }));
      return JSON.parse(((await sock.receive())[0] as Buffer).toString('utf8')) as Reply;
    };
    const totalBudget = (r: Reply): boolean => !r.ok && /--max-unread-total-mib/.test(r.error?.message ?? '');
    const c = s as unknown as Collecting;
    const collections: string[] = [];
    const t00 = performance.now();
    const collect = c.collect as () => void;
    c.collect = () => {
      const t = performance.now();
      collect();
      collections.push(`${(t - t00).toFixed(0)}:${(performance.now() - t).toFixed(0)}ms`);
    };
    const state = (): string =>
      `count ${c.unread.total} (${c.unread.size} connections, ${c.unread.unwatched} unwatched), outboxes ${c.outboxBytes}, ` +
      `reply Buffers not known collected ${c.held.bytes} (${c.held.size}), collection ${c.collectMs.toFixed(1)} ms`;
    try {
      const append = `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}`;
      const sessions: string[] = [];
      for (const d of [...hostile, reader]) {
        d.connect(s.endpoint);
        const session = (await call(d, { op: 'reset', seed: 1 })).result?.session as string;
        for (let i = 0; i < 4; i++) await call(d, { op: 'step', session, action: append });
        for (let i = 0; i < 17; i++) await call(d, { op: 'hello' });
        sessions.push(session);
      }
      const mine = sessions[hostile.length] as string;
      const n = 40;
      for (let i = 0; i < n; i++) {
        for (const [k, d] of hostile.entries()) await d.send(JSON.stringify({ v: 1, id: i, op: 'step', session: sessions[k], action: 'yc-bench scratchpad read' }));
      }
      await settled(() => s.stats().replied, 500, 30_000);
      const settledAt = `flood settled at ${(performance.now() - t00).toFixed(0)} ms: ${state()}`;
      beforeReading(c);
      const t0 = Date.now();
      let served = 0;
      let retries = 0;
      let lastTotal = '';
      while (served < 12 && Date.now() - t0 < 15_000) {
        const r = await call(reader, { op: 'step', session: mine, action: 'yc-bench scratchpad read' });
        if (r.ok) served++;
        else if (totalBudget(r)) {
          retries++;
          lastTotal = r.error?.message ?? '';
          await new Promise((res) => setTimeout(res, 50));
        } else expect(r.error?.message).toContain('`ycgym serve --max-unread-mib`');
      }
      const readFor = Date.now() - t0;
      const end = state();
      gc();
      const notes =
        `${served} of 12 in ${readFor} ms, ${retries} retries for the total budget (last: ${lastTotal || 'none'}); ${settledAt}; ` +
        `at the end: ${end}; buffers once collected now: ${process.memoryUsage().arrayBuffers}; collections (at:took): ${collections.join(' ')}`;
      // The connections that do not read were refused for the total budget.
      let refused = 0;
      for (const d of hostile) {
        for (let i = 0; i < n; i++) {
          const r = JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as Reply;
          expect(r.id).toBe(i);
          if (totalBudget(r)) refused++;
        }
      }
      return { served, refused, notes };
    } finally {
      for (const d of hostile) d.close();
      reader.close();
      await s.close();
    }
  }

  it('a client that reads is not refused for the total budget while the replies it took wait for a collection; connections that do not read are', async () => {
    // Before: at the total budget the count stays high (the server cannot see reads), so the buffers the process holds
    // decided, sampled with the garbage in them: the buffers of the replies a reading client had taken, released by
    // ZeroMQ and not yet collected, counted as held. Here the process held ~1-3 MB of buffers once collected after the
    // non-readers were refused, and ~20 MB uncollected (nothing allocated, so nothing collected): the reader was refused
    // for the total budget for the whole 15 s (0 of 12 replies, ~290 retries), and when it came after a collection, in
    // 30 of 51 requests sent without waiting (the garbage of its own replies). Now: all 12 in ~0.6-1.3 s, 0-3 retries.
    const { served, refused, notes } = await readAfterFlood();
    expect(served, notes).toBe(12);
    expect(refused, notes).toBeGreaterThan(0);
  }, 90_000);

  it('a collection the server was descheduled in does not space the next ones out: a client that reads is still served', async () => {
    // Before: the server collected at most once every 20 times the last collection's wall time, so a collection during
    // which the process got no CPU (a loaded machine) counted as a long one: one that took 1.5 s of wall time put off
    // the next for 30 s, and meanwhile the garbage of the replies the reader took counted as held: it was refused for
    // the total budget until then (~10 of 12 replies in the 15 s, then refusals only; once 0 of 12 in a fresh-clone CI
    // run under load). Now a collection's cost is the CPU time the process spent in it (at most its wall time).
    let delay = true;
    const { served, refused, notes } = await readAfterFlood((c) => {
      const collect = c.collect as () => void;
      c.collect = () => {
        // The thread sleeps (no CPU) as if descheduled, once, then collects.
        if (delay) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
        delay = false;
        collect();
      };
    });
    expect(delay, notes).toBe(false);
    expect(served, notes).toBe(12);
    expect(refused, notes).toBeGreaterThan(0);
  }, 90_000);

  it("the process's other buffers do not count against the budget: connections that read their replies and went quiet do not lock a client out beside 24 MiB of them", async () => {
    // Before: past the budget the count (which cannot see reads) was bounded by every buffer of the process
    // (\`process.memoryUsage().arrayBuffers\`), replies or not. 13 connections that each took and read one ~1.7 MB reply
    // and then sent nothing more keep it counted (21.8 MB, over the 16 MiB budget and its headroom); beside 24 MiB of
    // buffers that are not replies (an embedding process's, a test's), the server refused a client holding nothing,
    // after a collection too, for as long as they stayed quiet (retrying for 10 s). Now only the reply Buffers ZeroMQ
    // may still hold count (none, once collected), and the counted replies handed over below a quarter of the budget,
    // whose Buffers the server does not watch.
    const total = 16 << 20;
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadReplyBytes: 4 << 20, maxUnreadTotalBytes: total });
    const c = s as unknown as Collecting;
    const quiet = Array.from({ length: 13 }, () => new Dealer({ linger: 0, receiveTimeout: 10_000 }));
    const reader = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    type Reply = { ok: boolean; result?: { session: string }; error?: { code: string; message: string } };
    const call = async (sock: Dealer, req: Record<string, unknown>): Promise<Reply> => {
      await sock.send(JSON.stringify({ v: 1, ...req }));
      return JSON.parse(((await sock.receive())[0] as Buffer).toString('utf8')) as Reply;
    };
    const other = Buffer.alloc(24 << 20, 1);
    try {
      // Every request retried after 50 ms when refused \`capacity\` for the total budget, for at most 10 s, as a client
      // does: the replies a client took are garbage until the server's rate-limited collection runs, and until then they
      // count (these connections take ~6 MB each).
      const served = async (d: Dealer, req: Record<string, unknown>): Promise<Reply> => {
        const t0 = performance.now();
        let r = await call(d, req);
        while (!r.ok && /--max-unread-total-mib/.test(r.error?.message ?? '') && performance.now() - t0 < 10_000) {
          await new Promise((res) => setTimeout(res, 50));
          r = await call(d, req);
        }
        expect(r.ok, `${JSON.stringify(r.error)}; other buffers ${other.length}`).toBe(true);
        return r;
      };
      const append = `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}`;
      for (const d of quiet) {
        d.connect(s.endpoint);
        const session = (await served(d, { op: 'reset', seed: 1 })).result?.session as string;
        for (let i = 0; i < 4; i++) await served(d, { op: 'step', session, action: append });
        for (let i = 0; i < 17; i++) await call(d, { op: 'hello' });
        await served(d, { op: 'step', session, action: 'yc-bench scratchpad read' });
      }
      expect(c.unread.total).toBeGreaterThanOrEqual(total + total / UNREAD_TOTAL_HEADROOM_DIVISOR);
      // The client holding nothing: served, five steps.
      reader.connect(s.endpoint);
      const mine = (await served(reader, { op: 'reset', seed: 2 })).result?.session as string;
      for (let i = 0; i < 5; i++) await served(reader, { op: 'step', session: mine, action: 'company status' });
    } finally {
      for (const d of [...quiet, reader]) d.close();
      await s.close();
    }
  }, 90_000);
});

describe('connections that never read and hold the total unread budget (the headroom of the connections holding nothing)', () => {
  type Reply = { id?: number | string; ok: boolean; result?: { session: string }; error?: { code: string; message: string } };
  const call = async (sock: Dealer, req: Record<string, unknown>): Promise<Reply> => {
    await sock.send(JSON.stringify({ v: 1, ...req }));
    return JSON.parse(((await sock.receive())[0] as Buffer).toString('utf8')) as Reply;
  };
  const append = `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}`;
  /** A session with a full scratchpad of `sock`'s (each `scratchpad read` reply is ~1.7 MB), its large replies out of the count. */
  const fullScratchpad = async (sock: Dealer): Promise<string> => {
    const session = (await call(sock, { op: 'reset', seed: 1 })).result?.session as string;
    for (let i = 0; i < 4; i++) expect((await call(sock, { op: 'step', session, action: append })).ok).toBe(true);
    for (let i = 0; i < 17; i++) await call(sock, { op: 'hello' });
    return session;
  };
  /** A `step_batch` of 6 `scratchpad read`s: a ~10 MB reply, more than the socket buffers take, so the server holds it. */
  const batch = (session: string, id: number | string): string =>
    JSON.stringify({ v: 1, id, op: 'step_batch', steps: Array.from({ length: 6 }, () => ({ session, action: 'yc-bench scratchpad read' })) });

  /**
   * Connect `hostile` (connections that never read) to `s`, each with a full scratchpad and nothing counted, then have
   * each send 3 small requests and one \`batch\`: the replies the client does not read fill its queue first, then the
   * batch's, which the server holds (when admitted). Their sessions.
   */
  const holdBatches = async (s: Awaited<ReturnType<typeof startServer>>, hostile: Dealer[]): Promise<string[]> => {
    const sessions: string[] = [];
    for (const d of hostile) {
      d.connect(s.endpoint);
      sessions.push(await fullScratchpad(d));
    }
    expect((s as unknown as { unread: { total: number } }).unread.total).toBe(0);
    for (const [k, d] of hostile.entries()) {
      const before = s.stats().replied;
      for (let i = 0; i < 3; i++) await d.send(JSON.stringify({ v: 1, id: `pad-${i}`, op: 'hello' }));
      await d.send(batch(sessions[k] as string, 'big'));
      // Its 4 replies handed to ZeroMQ (bounded wait: a loaded machine may take a while over the batch).
      for (const end = Date.now() + 30_000; s.stats().replied < before + 4 && Date.now() < end; ) await new Promise((res) => setTimeout(res, 20));
    }
    return sessions;
  };

  /** The size of `batch`'s reply (deterministic), measured on a server of its own: the tests set budgets from it. */
  const batchReplyBytes = async (): Promise<number> => {
    const probe = await startServer({ endpoint: 'tcp://127.0.0.1:0' });
    const p = new Dealer({ linger: 0, receiveTimeout: 20_000 });
    try {
      p.connect(probe.endpoint);
      const session = await fullScratchpad(p);
      await p.send(batch(session, 'probe'));
      const replyBytes = ((await p.receive())[0] as Buffer).length;
      expect(replyBytes).toBeGreaterThan(9_000_000);
      return replyBytes;
    } finally {
      p.close();
      await probe.close();
    }
  };

  it('a lockstep client (small replies, nothing counted) is served while they hold more than the budget; they are refused', async () => {
    // Before: from the total budget on, every request of every connection was refused `capacity` until the connections
    // that never read read or closed (possibly never), a lockstep client's whose replies are all small and never counted
    // included: replies admitted just below the budget put what they hold over it (measured once at 17.7 MB against a
    // 16 MiB budget), and from then on nobody was served. Here 2 connections that never read each take one ~10 MB reply
    // (the second admitted below 3/4 of the budget), making the server hold ~1.18 x the budget: every one of the lockstep
    // client's 20 `company status` steps was refused.
    const replyBytes = await batchReplyBytes();
    // Two such replies are over the budget and below the budget and its headroom (1.25 x), one is below 3/4 of it.
    const total = Math.round(1.7 * replyBytes);
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadTotalBytes: total });
    // Connections that never read: the client takes one reply into its queue (and one more it decodes), and its socket
    // buffer is kept small (unbounded, the kernel grows it up to tcp_rmem's maximum, tens of MB).
    const hostile = Array.from({ length: 2 }, () => new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveBufferSize: 64 << 10, receiveTimeout: 20_000 }));
    const lockstep = new Dealer({ linger: 0, receiveTimeout: 20_000 });
    const c = s as unknown as { unread: { total: number; bytes: (key: string) => number } };
    try {
      lockstep.connect(s.endpoint);
      const mine = (await call(lockstep, { op: 'reset', seed: 2 })).result?.session as string;
      expect((await call(lockstep, { op: 'step', session: mine, action: 'company status' })).ok).toBe(true);
      const sessions = await holdBatches(s, hostile);
      // Both were admitted: what the connections that never read hold is over the budget (and below its headroom).
      expect(c.unread.total).toBeGreaterThanOrEqual(total);
      expect(c.unread.total).toBeLessThan(total + total / 4);
      // The lockstep client, which holds nothing counted, is served: every one of its steps.
      const codes: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await call(lockstep, { id: i, op: 'step', session: mine, action: 'company status' });
        expect(r.id).toBe(i);
        codes.push(r.ok ? 'ok' : `${r.error?.code}: ${r.error?.message}`);
      }
      expect(codes).toEqual(Array.from({ length: 20 }, () => 'ok'));
      // The connections that never read are refused, for the total budget: the server holds over it (the buffers, measured
      // after a collection, bound the count: a refusal for the total budget says what they held).
      for (const [k, d] of hostile.entries()) for (let i = 0; i < 3; i++) await d.send(batch(sessions[k] as string, i));
      const held: number[] = [];
      for (const d of hostile) {
        const ids: (number | string | undefined)[] = [];
        for (let i = 0; i < 7; i++) {
          const r = JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as Reply;
          ids.push(r.id);
          if (typeof r.id !== 'number') {
            expect(r.ok).toBe(true);
            continue;
          }
          expect(r.error?.code).toBe('capacity');
          expect(r.error?.message).toContain('`ycgym serve --max-unread-total-mib`');
          const m = /hold (\d+) bytes, their budget is (\d+)[^,]*: the request was not handled; retry later$/.exec(r.error?.message ?? '');
          if (m !== null) held.push(Number(m[1]));
        }
        expect(ids).toEqual(['pad-0', 'pad-1', 'pad-2', 'big', 0, 1, 2]);
      }
      expect(held.length).toBeGreaterThan(0);
      for (const h of held) expect(h).toBeGreaterThanOrEqual(total);
    } finally {
      for (const d of hostile) d.close();
      lockstep.close();
      await s.close();
    }
  }, 90_000);

  it('new connections that never read, each taking one reply while holding nothing, fill the budget and its headroom: a client holding nothing is refused (retry later) until they close', async () => {
    // The limit docs/protocol.md states: a connection holding nothing may take a large reply from the headroom, so
    // enough new connections that never read, one reply each, hold the budget and its headroom, and then a client that
    // holds nothing is refused too (not handled; the refusal says retry later) until they read or close. What they hold
    // stays bounded: the budget, its headroom and the reply admitted just below them.
    const replyBytes = await batchReplyBytes();
    // Budget 4 replies, headroom 1: 5 connections holding nothing are admitted, the 6th is not (a little below, as the
    // replies here, with a shorter id, are 2 bytes smaller than the probe's).
    const total = 4 * replyBytes - 4096;
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', stallTimeoutMs: 60_000, maxUnreadTotalBytes: total });
    const c = s as unknown as { held: { bytes: number; size: number }; unread: { total: number; unwatched: number } };
    const hostile = Array.from({ length: 7 }, () => new Dealer({ linger: 0, receiveHighWaterMark: 1, receiveBufferSize: 64 << 10, receiveTimeout: 20_000 }));
    const lockstep = new Dealer({ linger: 0, receiveTimeout: 20_000 });
    // What the server takes as held: the reply Buffers it watches (from a quarter of the budget on) and the counted replies
    // handed over before.
    const held = (): number => c.held.bytes + c.unread.unwatched;
    const state = (): string => `count ${c.unread.total}, reply Buffers ${c.held.bytes} (${c.held.size}), unwatched ${c.unread.unwatched}, reply ${replyBytes}`;
    let closed = false;
    try {
      lockstep.connect(s.endpoint);
      const mine = (await call(lockstep, { op: 'reset', seed: 2 })).result?.session as string;
      await holdBatches(s, hostile);
      // Five replies held (a ~10 MB reply cannot leave the process past a 64 KiB socket buffer): the budget and its headroom.
      const r = await call(lockstep, { op: 'step', session: mine, action: 'company status' });
      expect(r.ok, state()).toBe(false);
      expect(r.error?.code).toBe('capacity');
      expect(r.error?.message).toMatch(/their budget plus its headroom is \d+ .* retry later$/);
      expect(held(), state()).toBeGreaterThanOrEqual(total + total / UNREAD_TOTAL_HEADROOM_DIVISOR);
      expect(held(), state()).toBeLessThan(total + total / UNREAD_TOTAL_HEADROOM_DIVISOR + replyBytes);
      // The 6th and 7th connections were refused, for the budget and its headroom, as the lockstep client is.
      for (const d of hostile.slice(5)) {
        for (let i = 0; i < 3; i++) expect((JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as Reply).id).toBe(`pad-${i}`);
        const refused = JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as Reply;
        expect(refused.error?.message).toMatch(/their budget plus its headroom is \d+ .* retry later$/);
      }
      // They close: ZeroMQ lets their replies go, and the client is served (retrying after 50 ms, as the refusal says).
      for (const d of hostile) d.close();
      closed = true;
      const t0 = performance.now();
      let after = await call(lockstep, { op: 'step', session: mine, action: 'company status' });
      while (!after.ok && performance.now() - t0 < 10_000) {
        expect(after.error?.message).toMatch(/retry later$/);
        await new Promise((res) => setTimeout(res, 50));
        after = await call(lockstep, { op: 'step', session: mine, action: 'company status' });
      }
      expect(after.ok, `${JSON.stringify(after.error)}; ${state()}`).toBe(true);
    } finally {
      if (!closed) for (const d of hostile) d.close();
      lockstep.close();
      await s.close();
    }
  }, 90_000);
});

describe('ycgym serve --max-unread-mib and --max-unread-total-mib', () => {
  const MAIN = join(fileURLToPath(new URL('../..', import.meta.url)), 'dist', 'src', 'cli', 'main.js');

  it('is documented in the help with its default, checked, and passed to the server', async () => {
    const help = spawnSync(process.execPath, [MAIN, 'serve', '--help'], { encoding: 'utf8' }).stdout;
    expect(help).toMatch(/--max-unread-mib <MiB>[^]*?default:\s+256\)/);
    expect(help).toMatch(/--max-unread-total-mib <MiB>[^]*?default:\s+1024\)/);
    for (const flag of ['--max-unread-mib', '--max-unread-total-mib']) {
      const bad = spawnSync(process.execPath, [MAIN, 'serve', flag, '0'], { encoding: 'utf8' });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toContain(flag);
    }
    const child = spawn(process.execPath, [MAIN, 'serve', '--endpoint', 'tcp://127.0.0.1:0', '--quiet', '--max-unread-mib', '1', '--max-unread-total-mib', '3'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const d = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    try {
      const first = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
      d.connect((JSON.parse(first) as { endpoint: string }).endpoint);
      const call = async (req: Record<string, unknown>): Promise<{ ok: boolean; result?: { session: string }; error?: { code: string; message: string } }> => {
        await d.send(JSON.stringify({ v: 1, ...req }));
        return JSON.parse(((await d.receive())[0] as Buffer).toString('utf8')) as { ok: boolean };
      };
      const limits = ((await call({ op: 'hello' })) as unknown as { result: { limits: Record<string, unknown> } }).result.limits;
      expect([limits.max_unread_reply_bytes, limits.max_unread_total_bytes, limits.unread_total_headroom_bytes]).toEqual([1 << 20, 3 << 20, (3 << 20) / 4]);
      const session = (await call({ op: 'reset', seed: 1 })).result?.session;
      // Each append's reply is ~1 MB (its control characters escaped twice): the second reaches the 1 MiB budget.
      const append = { op: 'step', session, action: `yc-bench scratchpad append --content ${'\x01'.repeat(60_000)}` };
      expect((await call(append)).ok).toBe(true);
      expect((await call(append)).ok).toBe(true);
      const refused = await call(append);
      expect(refused.error?.code).toBe('capacity');
      expect(refused.error?.message).toContain('`ycgym serve --max-unread-mib`');
    } finally {
      d.close();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 30_000);
});
