/**
 * Replies a client does not read wait in ZeroMQ's queue for it (16 per connection, 64 before). A large JSON reply used to
 * be handed over as a string, which zeromq.js copies into memory the server cannot see: a client whose turn chat held 14 MB,
 * sending `turn_messages` without reading, made the server hold ~0.9 GB per connection (1.8 GB for two, still held
 * after the stall timeout), and the memory guard saw nothing. Now large bodies go as Buffers (ZeroMQ takes them
 * without a copy and holds them until the client takes them), which the guard counts, and the ops with bulk output
 * (`snapshot`, `turn_snapshot`, `turn_messages`) pass admission control like the ops that create bulk state.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { listPresets } from '../../src/config/load.js';
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
