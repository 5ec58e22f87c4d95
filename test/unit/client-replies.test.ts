/**
 * What the TypeScript client makes of replies a ycgym server never sends: a fake server (a ZeroMQ ROUTER) answers
 * each request with a crafted reply.
 */
import { Router } from 'zeromq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError } from '../../src/client/client.js';

/**
 * A fake server: a ROUTER on a loopback port that hands each request it reads (its peer, its id) to `answer`, which
 * sends what the test wants back with `router`. `endpoint()` is its address once `beforeAll` has bound it.
 */
function fakeServer(answer: (router: Router, peer: Buffer, id: number) => Promise<void>): { endpoint: () => string } {
  const router = new Router({ linger: 0 });
  beforeAll(async () => {
    await router.bind('tcp://127.0.0.1:*');
    void (async () => {
      for await (const [peer, ...frames] of router) {
        const req = JSON.parse((frames[frames.length - 1] as Buffer).toString('utf8')) as { id: number };
        await answer(router, peer as Buffer, req.id);
      }
    })();
  });
  afterAll(() => router.close());
  return { endpoint: () => router.lastEndpoint as string };
}

describe('TS client: malformed error replies', () => {
  /** The reply (its JSON fields besides v and id) to the next request. */
  let next: Record<string, unknown> = {};
  const fake = fakeServer(async (router, peer, id) => void (await router.send([peer, JSON.stringify({ v: 1, id, ...next })])));

  const failure = async (reply: Record<string, unknown>): Promise<ProtocolError> => {
    next = reply;
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 5000 });
    try {
      await c.request('hello');
    } catch (e) {
      return e as ProtocolError;
    } finally {
      c.close();
    }
    throw new Error('the request succeeded');
  };

  it('an error with a code and a string message is that error', async () => {
    const e = await failure({ ok: false, error: { code: 'unknown_session', message: 'unknown session "s1"' } });
    expect([e.code, e.message]).toEqual(['unknown_session', 'unknown_session: unknown session "s1"']);
  });

  it('an error whose message is not a string is a malformed reply (it read "[object Object]")', async () => {
    for (const message of [{ text: 'x' }, ['a'], 42]) {
      const e = await failure({ ok: false, error: { code: 'internal', message } });
      expect(e).toBeInstanceOf(ProtocolError);
      expect([e.code, e.message]).toEqual(['bad_reply', 'bad_reply: malformed error reply to hello']);
    }
    // No message at all: the code alone, as before.
    const e = await failure({ ok: false, error: { code: 'internal' } });
    expect([e.code, e.message]).toEqual(['internal', 'internal: ']);
  });
});

/**
 * A reply whose id names no request (null: the server could not read the request's id, e.g. message_too_large,
 * bad_frames, a capacity refusal of a large payload) belongs to a request only when exactly one request of the
 * connection still awaits its reply; a request given up on (timed out after it was sent) counts, as its late reply may
 * be that one. With more than one, it may answer any of them: every request awaiting its reply fails with `bad_reply`
 * (before: with two in flight it was dropped and both waited for their timeouts; with one in flight and one given up
 * on, it was handed to the one in flight). The rule is the Python client's (docs/protocol.md, Replies).
 */
describe('TS client: replies that name no request', () => {
  /** What the fake server does with each request it reads (its peer, its id): the replies it sends back. */
  let answer: (router: Router, peer: Buffer, id: number) => Promise<void> = async () => {};
  const unnamed = { v: 1, id: null, ok: false, error: { code: 'message_too_large', message: 'payload is 99 bytes; the limit is 1' } };
  const fake = fakeServer((router, peer, id) => answer(router, peer, id));
  const settled = (p: Promise<unknown>): Promise<string> =>
    p.then(
      () => 'ok',
      (e: unknown) => (e instanceof ProtocolError ? e.code : String(e)),
    );

  it('with one request awaiting its reply, it is that request\'s', async () => {
    answer = async (router, peer) => void (await router.send([peer, JSON.stringify(unnamed)]));
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 5000 });
    try {
      expect(await settled(c.request('hello'))).toBe('message_too_large');
    } finally {
      c.close();
    }
  });

  it('with two awaiting their replies, both fail with bad_reply at once (not at their timeouts)', async () => {
    let seen = 0;
    answer = async (router, peer) => {
      if (++seen === 2) await router.send([peer, JSON.stringify(unnamed)]); // once both are in
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 20_000 });
    try {
      const t = Date.now();
      const both = await Promise.all([settled(c.request('hello')), settled(c.request('hello'))]);
      expect(both).toEqual(['bad_reply', 'bad_reply']);
      expect(Date.now() - t).toBeLessThan(15_000);
      expect(c.inFlight).toBe(0);
    } finally {
      c.close();
    }
  });

  it('with one awaiting and one given up on, it may be the late reply: the one awaiting fails with bad_reply', async () => {
    let seen = 0;
    answer = async (router, peer) => {
      if (++seen === 2) await router.send([peer, JSON.stringify(unnamed)]); // the first timed out unanswered
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 20_000 });
    try {
      expect(await settled(c.request('hello', {}, { timeoutMs: 100 }))).toBe('timeout');
      const e = await c.request('hello').catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ProtocolError);
      expect((e as ProtocolError).code).toBe('bad_reply');
      expect((e as ProtocolError).message).toMatch(/names no request/);
    } finally {
      c.close();
    }
  });

  it('the late reply of a request given up on is dropped, and no longer counts once it came', async () => {
    let seen = 0;
    answer = async (router, peer, id) => {
      seen++;
      if (seen === 2) await router.send([peer, JSON.stringify({ v: 1, id: id - 1, ok: true, result: { late: true } })]);
      if (seen === 2) await router.send([peer, JSON.stringify(unnamed)]); // then the only request awaiting is the second
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 20_000 });
    try {
      expect(await settled(c.request('hello', {}, { timeoutMs: 100 }))).toBe('timeout');
      expect(await settled(c.request('hello'))).toBe('message_too_large');
    } finally {
      c.close();
    }
  });

  it('after an ambiguous reply, the reply to a later request settles the connection (the id it answered was kept for ever)', async () => {
    // Requests 1 and 2 fail on a reply that names neither (it was 1's: 2's own reply follows). 1's reply never comes
    // again, so its id stayed given up on, and every later reply naming no request was ambiguous. The server answers
    // a connection's requests in order: once the reply to request 3 came, 1's had come.
    let seen = 0;
    answer = async (router, peer, id) => {
      seen++;
      if (seen === 2) {
        await router.send([peer, JSON.stringify(unnamed)]);
        await router.send([peer, JSON.stringify({ v: 1, id, ok: true, result: { late: true } })]);
      }
      if (seen === 3) await router.send([peer, JSON.stringify({ v: 1, id, ok: true, result: { n: 3 } })]);
      if (seen === 4) await router.send([peer, JSON.stringify(unnamed)]);
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 20_000 });
    try {
      expect(await Promise.all([settled(c.request('hello')), settled(c.request('hello'))])).toEqual(['bad_reply', 'bad_reply']);
      expect(await c.request('hello')).toEqual({ n: 3 });
      expect(await settled(c.request('hello'))).toBe('message_too_large');
    } finally {
      c.close();
    }
  });

  it('a reply to a request sent before the one given up on settles nothing', async () => {
    let seen = 0;
    let first = 0;
    answer = async (router, peer, id) => {
      seen++;
      if (seen === 1) first = id;
      if (seen === 2) await router.send([peer, JSON.stringify({ v: 1, id: first, ok: true, result: { n: 1 } })]); // the second timed out
      if (seen === 3) await router.send([peer, JSON.stringify(unnamed)]); // may be the second's
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 20_000 });
    try {
      const one = c.request('hello');
      expect(await settled(c.request('hello', {}, { timeoutMs: 200 }))).toBe('timeout');
      expect(await one).toEqual({ n: 1 });
      expect(await settled(c.request('hello'))).toBe('bad_reply');
    } finally {
      c.close();
    }
  });
});
