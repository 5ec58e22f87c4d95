/**
 * Replies a client does not read wait in ZeroMQ's queue for it (64 per connection). A large JSON reply used to be handed
 * over as a string, which zeromq.js copies into memory the server cannot see: a client whose turn chat held 14 MB,
 * sending `turn_messages` without reading, made the server hold ~0.9 GB per connection (1.8 GB for two, still held
 * after the stall timeout), and the memory guard saw nothing. Now large bodies go as Buffers (ZeroMQ takes them
 * without a copy and holds them until the client takes them), which the guard counts, and the ops with bulk output
 * (`snapshot`, `turn_snapshot`, `turn_messages`) pass admission control like the ops that create bulk state.
 */
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import { startServer } from '../../src/server/server.js';

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
      // The server answers them (all but one or two, kept in its outbox when ZeroMQ's queue for the client is full); the
      // client reads none.
      const deadline = Date.now() + 20_000;
      while (s.stats().replied < 3 + n - 2 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
      expect(s.stats().replied).toBeGreaterThanOrEqual(3 + n - 2);
      const held = process.memoryUsage().arrayBuffers - before;
      // About n replies of 4 MiB wait in ZeroMQ's queue for the client (a few may sit in its socket buffers).
      expect(held).toBeGreaterThan((n / 2) * (4 << 20));
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
