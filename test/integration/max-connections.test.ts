/**
 * Replies under 64 KiB are not counted in the unread-reply budgets (`UnreadReplies`): ZeroMQ may hold a connection's last
 * 17 of them (~1.1 MB) however much it reads, and nothing capped the connections, so one process opening N connections
 * that send without reading made the server hold N x ~1.1 MB outside every budget. `serve --max-connections` caps the
 * connections served: while more are open, the requests of a connection not served before are answered `capacity`,
 * unhandled, and the connections already served go on.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { curveKeyPair, Dealer } from 'zeromq';
import { DEFAULT_MAX_CONNECTIONS } from '../../src/protocol/limits.js';
import { startServer } from '../../src/server/server.js';

async function until(cond: () => boolean, maxMs = 10_000): Promise<void> {
  const end = Date.now() + maxMs;
  while (!cond() && Date.now() < end) await new Promise((res) => setTimeout(res, 10));
}

/** Whether a `hello` from `d`, connected to `endpoint` now, is served (`ok`); `d` is closed after. */
async function helloOk(d: Dealer, endpoint: string): Promise<boolean> {
  try {
    d.connect(endpoint);
    await d.send(JSON.stringify({ v: 1, id: 1, op: 'hello' }));
    const [f] = await d.receive();
    return (JSON.parse((f as Buffer).toString('utf8')) as { ok: boolean }).ok;
  } finally {
    d.close();
  }
}

describe('serve --max-connections', () => {
  it('refuses the requests of connections beyond the cap, structured, and serves the others', async () => {
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxConnections: 3 });
    const dealers: Dealer[] = [];
    const open = async (): Promise<Dealer> => {
      const d = new Dealer({ linger: 0, receiveTimeout: 10_000 });
      d.connect(s.endpoint);
      dealers.push(d);
      return d;
    };
    const call = async (d: Dealer, id: number): Promise<Record<string, unknown>> => {
      await d.send(JSON.stringify({ v: 1, id, op: 'hello' }));
      const [f] = await d.receive();
      return JSON.parse((f as Buffer).toString('utf8')) as Record<string, unknown>;
    };
    try {
      const first = [await open(), await open(), await open()];
      for (const [i, d] of first.entries()) expect((await call(d, i)).ok).toBe(true);
      await until(() => s.connections === 3);
      expect(s.connections).toBe(3);
      const extra = await open();
      await until(() => s.connections === 4);
      const refused = await call(extra, 7);
      expect(refused.ok).toBe(false);
      expect(refused.id).toBe(7);
      const err = refused.error as { code: string; message: string };
      expect(err.code).toBe('capacity');
      expect(err.message).toMatch(/4 connections are open, the limit is 3 .*--max-connections/);
      // The connections served before go on.
      for (const [i, d] of first.entries()) expect((await call(d, 10 + i)).ok).toBe(true);
      // Once one leaves, the new one is served.
      first[0]?.close();
      await until(() => s.connections === 3);
      expect((await call(extra, 8)).ok).toBe(true);
    } finally {
      for (const d of dealers) if (!d.closed) d.close();
      await s.close();
    }
  }, 30_000);

  it('serves a connection that owns live sessions although the connections served since pushed it out of memory', async () => {
    // Before: the server remembers the last 4 x the cap connections it served (nothing tells it which one left), in the
    // order first served; a client that had reset an episode and paused while 8 others came and went (cap 2) was
    // refused (`capacity`, "new to the server") once more than 2 were open, although its sessions lived.
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxConnections: 2 });
    const call = async (d: Dealer, req: Record<string, unknown>): Promise<{ ok: boolean; result?: { session: string }; error?: { code: string; message: string } }> => {
      await d.send(JSON.stringify({ v: 1, ...req }));
      const [f] = await d.receive();
      return JSON.parse((f as Buffer).toString('utf8')) as { ok: boolean };
    };
    const mine = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    const idle = [new Dealer({ linger: 0 }), new Dealer({ linger: 0 })];
    try {
      mine.connect(s.endpoint);
      const session = (await call(mine, { op: 'reset', seed: 1 })).result?.session as string;
      for (let i = 0; i < 12; i++) {
        await until(() => s.connections === 1);
        expect(await helloOk(new Dealer({ linger: 0, receiveTimeout: 10_000 }), s.endpoint)).toBe(true);
      }
      for (const d of idle) d.connect(s.endpoint);
      await until(() => s.connections === 3);
      expect(s.connections).toBe(3);
      const r = await call(mine, { op: 'step', session, action: 'company status' });
      expect(r.error?.message ?? 'ok').toBe('ok');
      // A connection new to the server is still refused.
      const fresh = new Dealer({ linger: 0, receiveTimeout: 10_000 });
      expect(await helloOk(fresh, s.endpoint)).toBe(false);
    } finally {
      mine.close();
      for (const d of idle) d.close();
      await s.close();
    }
  }, 30_000);

  it('keeps serving an active connection however many others came and went since it was first served', async () => {
    // Before: the server remembered the last 4 x the cap connections served in the order first served, not last served;
    // a client (no sessions: hello only) that sent after each of 7 others came and went (cap 2: 8 remembered) was the
    // one forgotten when the 8th came, as first served, and refused (`capacity`, "new to the server") once more than 2
    // were open, although it was served more recently than any of the 7 others kept.
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxConnections: 2 });
    const active = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    const idle = [new Dealer({ linger: 0 }), new Dealer({ linger: 0 })];
    const hello = async (id: number): Promise<{ ok: boolean; error?: { message: string } }> => {
      await active.send(JSON.stringify({ v: 1, id, op: 'hello' }));
      const [f] = await active.receive();
      return JSON.parse((f as Buffer).toString('utf8')) as { ok: boolean };
    };
    try {
      active.connect(s.endpoint);
      expect((await hello(0)).ok).toBe(true);
      for (let i = 0; i < 8; i++) {
        await until(() => s.connections === 1);
        expect(await helloOk(new Dealer({ linger: 0, receiveTimeout: 10_000 }), s.endpoint)).toBe(true);
        if (i < 7) expect((await hello(1 + i)).ok).toBe(true);
      }
      await until(() => s.connections === 1);
      for (const d of idle) d.connect(s.endpoint);
      await until(() => s.connections === 3);
      expect(s.connections).toBe(3);
      const r = await hello(100);
      expect(r.error?.message ?? 'ok').toBe('ok');
    } finally {
      active.close();
      for (const d of idle) d.close();
      await s.close();
    }
  }, 30_000);

  it('announces the cap in hello (limits.max_connections): the one given, or the default', async () => {
    for (const [given, want] of [
      [3, 3],
      [undefined, DEFAULT_MAX_CONNECTIONS],
    ] as const) {
      const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', ...(given === undefined ? {} : { maxConnections: given }) });
      const d = new Dealer({ linger: 0, receiveTimeout: 10_000 });
      try {
        d.connect(s.endpoint);
        await d.send(JSON.stringify({ v: 1, id: 1, op: 'hello' }));
        const [f] = await d.receive();
        const hello = JSON.parse((f as Buffer).toString('utf8')) as { ok: boolean; result: { limits: Record<string, unknown> } };
        expect(hello.ok).toBe(true);
        expect(hello.result.limits).toHaveProperty('max_connections', want);
      } finally {
        d.close();
        await s.close();
      }
    }
  }, 30_000);

  it('counts the connections that leave, however they leave, so the count does not creep up', async () => {
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxConnections: 2, maxMessageBytes: 1024 });
    const port = Number(s.endpoint.split(':').pop());
    try {
      // Clients that close after a reply, one that sends a frame ZeroMQ refuses (above 4x the message limit: it drops
      // the connection), raw TCP connections writing garbage or nothing.
      for (let i = 0; i < 6; i++) {
        const d = new Dealer({ linger: 0, receiveTimeout: 10_000 });
        d.connect(s.endpoint);
        await d.send(JSON.stringify({ v: 1, id: i, op: 'hello' }));
        await d.receive();
        d.close();
      }
      const big = new Dealer({ linger: 0, reconnectInterval: 600_000 });
      big.connect(s.endpoint);
      await big.send('x'.repeat(8192));
      for (const junk of ['GET / HTTP/1.1\r\n\r\n', '\xff'.repeat(64), '']) {
        const sock = connect(port, '127.0.0.1');
        await new Promise<void>((res) => sock.once('connect', () => res()));
        if (junk !== '') sock.write(junk);
        await new Promise((res) => setTimeout(res, 50));
        sock.destroy();
      }
      await until(() => s.connections === 0);
      big.close();
      expect(s.connections).toBe(0);
      // A new client is served.
      expect(await helloOk(new Dealer({ linger: 0, receiveTimeout: 10_000 }), s.endpoint)).toBe(true);
    } finally {
      await s.close();
    }
  }, 30_000);

  it('counts CURVE clients the allow-list refuses as leaving, however often they retry', async () => {
    const server = curveKeyPair();
    const listed = curveKeyPair();
    const other = curveKeyPair();
    const s = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxConnections: 1, curve: { secretKey: server.secretKey }, curveAllow: [listed.publicKey] });
    const refused = new Dealer({ linger: 0, reconnectInterval: 20, curveServerKey: server.publicKey, curveSecretKey: other.secretKey, curvePublicKey: other.publicKey });
    try {
      refused.connect(s.endpoint);
      await new Promise((res) => setTimeout(res, 500)); // ~25 handshakes refused
      refused.close();
      await until(() => s.connections === 0);
      expect(s.connections).toBe(0);
      const d = new Dealer({ linger: 0, receiveTimeout: 10_000, curveServerKey: server.publicKey, curveSecretKey: listed.secretKey, curvePublicKey: listed.publicKey });
      expect(await helloOk(d, s.endpoint)).toBe(true);
    } finally {
      if (!refused.closed) refused.close();
      await s.close();
    }
  }, 30_000);
});
