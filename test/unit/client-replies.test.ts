/**
 * What the TypeScript client makes of replies a ycgym server never sends: a fake server (a ZeroMQ ROUTER) answers
 * each request with a crafted reply.
 */
import { Router } from 'zeromq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError } from '../../src/client/client.js';

describe('TS client: malformed error replies', () => {
  const router = new Router({ linger: 0 });
  let endpoint = '';
  /** The reply (its JSON fields besides v and id) to the next request. */
  let next: Record<string, unknown> = {};
  beforeAll(async () => {
    await router.bind('tcp://127.0.0.1:*');
    endpoint = router.lastEndpoint as string;
    void (async () => {
      for await (const [peer, ...frames] of router) {
        const req = JSON.parse((frames[frames.length - 1] as Buffer).toString('utf8')) as { id: number };
        await router.send([peer as Buffer, JSON.stringify({ v: 1, id: req.id, ...next })]);
      }
    })();
  });
  afterAll(() => router.close());

  const failure = async (reply: Record<string, unknown>): Promise<ProtocolError> => {
    next = reply;
    const c = new Client({ endpoint, timeoutMs: 5000 });
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
