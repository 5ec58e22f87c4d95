/**
 * What the TypeScript client makes of replies a ycgym server never sends: a fake server (a ZeroMQ ROUTER) answers
 * each request with a crafted reply.
 */
import fc from 'fast-check';
import { Router } from 'zeromq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Client, ProtocolError } from '../../src/client/client.js';
import { GAVE_UP_KEPT } from '../../src/protocol/limits.js';

/**
 * A fake server: a ROUTER on a loopback port that hands each request it reads (its peer, its id) to `answer`, which
 * sends what the test wants back with `router`. `endpoint()` is its address once `beforeAll` has bound it.
 */
function fakeServer(answer: (router: Router, peer: Buffer, id: number) => Promise<void>, unbounded = false): { endpoint: () => string } {
  // unbounded: no high-water mark on its sends (past 1,000 queued a ROUTER drops what it sends a peer).
  const router = new Router({ linger: 0, ...(unbounded ? { sendHighWaterMark: 0 } : {}) });
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

/** The client's state behind its rule for requests given up on (private fields, reached by the tests only). */
interface GaveUpInternals {
  gaveUp: Set<number>;
  gaveUpHeap: number[];
  pending: Map<number, { op: string; resolve: (v: unknown) => void; reject: (e: Error) => void; timer: null }>;
  unanswered: Map<number, number>;
  giveUp(id: number): void;
  release(id: number): void;
  settle(reply: unknown): void;
}
const internals = (c: Client): GaveUpInternals => c as unknown as GaveUpInternals;

/** A Set that counts the walks over its entries (iteration, `values`, `keys`, `entries`, `forEach`). */
class CountedWalks extends Set<number> {
  walks = 0;
  override [Symbol.iterator](): SetIterator<number> {
    this.walks++;
    return super[Symbol.iterator]();
  }
  override values(): SetIterator<number> {
    this.walks++;
    return super.values();
  }
  override keys(): SetIterator<number> {
    this.walks++;
    return super.keys();
  }
  override entries(): SetIterator<[number, number]> {
    this.walks++;
    return super.entries();
  }
  override forEach(f: (v: number, k: number, s: Set<number>) => void, self?: unknown): void {
    this.walks++;
    super.forEach(f, self);
  }
}

describe('TS client: requests given up on are forgotten without a walk per reply', () => {
  let answer: (router: Router, peer: Buffer, id: number) => Promise<void> = async () => {};
  const unnamed = { v: 1, id: null, ok: false, error: { code: 'message_too_large', message: 'payload is 99 bytes; the limit is 1' } };
  const fake = fakeServer((router, peer, id) => answer(router, peer, id), true);
  const settled = (p: Promise<unknown>): Promise<string> =>
    p.then(
      () => 'ok',
      (e: unknown) => (e instanceof ProtocolError ? e.code : String(e)),
    );

  it('late replies to the 4,096 kept do not each walk all of them (the rule is the same: checked after)', async () => {
    // Requests 1..4500 are given up on in chunks of 500 (a reply naming no request fails all awaiting), so 4,096 are
    // kept (405..4500). Then their late replies come, lowest first: each walked every one kept (4,096 walks).
    const chunk = 500;
    const total = 4500;
    let seen = 0;
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    answer = async (router, peer, id) => {
      seen++;
      if (seen <= total) {
        if (seen % chunk === 0) await router.send([peer, JSON.stringify(unnamed)]);
      } else if (id === total + 1) {
        for (let late = 1; late < total; late++) await router.send([peer, JSON.stringify({ v: 1, id: late, ok: true, result: { late } })]);
        await held;
        await router.send([peer, JSON.stringify({ v: 1, id, ok: true, result: { n: id } })]);
      } else {
        await router.send([peer, JSON.stringify(unnamed)]);
      }
    };
    const c = new Client({ endpoint: fake.endpoint(), timeoutMs: 30_000 });
    try {
      for (let k = 0; k < total / chunk; k++) {
        const codes = await Promise.all(Array.from({ length: chunk }, () => settled(c.request('hello'))));
        expect(new Set(codes)).toEqual(new Set(['bad_reply']));
      }
      const state = internals(c);
      expect(state.gaveUp.size).toBe(GAVE_UP_KEPT);
      expect(Math.min(...state.gaveUp)).toBe(total - GAVE_UP_KEPT + 1);
      const counted = new CountedWalks(state.gaveUp);
      state.gaveUp = counted;
      const last = c.request('hello');
      // Every late reply but the last one's (request 4500) forgets its own request only (none dropped: unbounded).
      await vi.waitFor(() => expect(counted.size).toBe(1), { timeout: 20_000, interval: 5 });
      expect(counted.walks).toBe(0); // it was 4,095: one for each of the late replies to 405..4499
      expect(counted.has(total)).toBe(true);
      release();
      // The reply to a request sent after 4500 forgets it: a reply naming no request is then the one awaiting's.
      expect(await last).toEqual({ n: total + 1 });
      expect(counted.size).toBe(0);
      expect(await settled(c.request('hello'))).toBe('message_too_large');
    } finally {
      release();
      c.close();
    }
  });

  it('the rule is unchanged: a seeded model across GAVE_UP_KEPT (sends, time-outs, replies, late replies, replies naming none)', () => {
    // The model is the rule as it was (a Set in the order given up, the oldest forgotten past the cap, a reply to a
    // request of this connection walking it for the ids below its own); the client keeps its state as it does.
    const kinds = 100;
    const op = fc.tuple(fc.integer({ min: 0, max: kinds - 1 }), fc.nat());
    let capped = 0;
    let rebuilt = 0;
    fc.assert(
      // Fills past 8,256 (twice the cap and 64) give the client's heap of ids enough stale entries to be rebuilt.
      fc.property(fc.integer({ min: 3000, max: 9000 }), fc.array(op, { minLength: 3000, maxLength: 6000 }), (fill, ops) => {
        const c = new Client({ endpoint: 'tcp://127.0.0.1:9', timeoutMs: 0 });
        try {
          const state = internals(c);
          const kept = new Set<number>();
          const awaiting = new Set<number>();
          let nextId = 1;
          const keep = (id: number): void => {
            kept.add(id);
            if (kept.size > GAVE_UP_KEPT) {
              kept.delete(kept.values().next().value as number);
              capped++;
            }
          };
          const nth = <T>(xs: Iterable<T>, size: number, pick: number): T => {
            let i = pick % size;
            for (const x of xs) if (i-- === 0) return x;
            throw new Error('unreachable');
          };
          const send = (): void => {
            const id = nextId++;
            state.pending.set(id, { op: 'hello', resolve: () => {}, reject: () => {}, timer: null });
            state.unanswered.set(id, 0);
            awaiting.add(id);
          };
          const timeOut = (id: number): void => {
            // What the request's timer does.
            state.pending.delete(id);
            if (state.unanswered.has(id)) state.giveUp(id);
            state.release(id);
            awaiting.delete(id);
            keep(id);
            // Just given up on: at most twice as many entries as ids kept, and 65.
            const h = state.gaveUpHeap.length;
            if (h > 2 * kept.size + 65) expect(h, `heap entries for ${kept.size} kept`).toBeLessThanOrEqual(2 * kept.size + 65);
          };
          const reply = (id: number): void => {
            state.settle({ v: 1, id, ok: true, result: null });
            if (kept.size > 0 && (kept.has(id) || awaiting.has(id))) for (const g of kept) if (g < id) kept.delete(g);
            if (kept.size > 0 && kept.delete(id)) return;
            awaiting.delete(id);
          };
          const replyNamingNone = (): void => {
            state.settle(unnamed);
            const n = awaiting.size + kept.size;
            if (n === 1 && awaiting.size === 1) awaiting.clear();
            else if (n === 1) kept.clear();
            else if (n > 1) {
              for (const id of awaiting) keep(id);
              awaiting.clear();
            }
          };
          const check = (full: boolean): void => {
            expect(state.gaveUp.size).toBe(kept.size);
            // The heap holds the ids kept and stale ones, bounded by the cap (it is rebuilt past twice the ids kept).
            const h = state.gaveUpHeap.length;
            if (h < kept.size) expect(h, 'heap entries').toBeGreaterThanOrEqual(kept.size);
            if (h > 2 * GAVE_UP_KEPT + 65) expect(h, 'heap entries').toBeLessThanOrEqual(2 * GAVE_UP_KEPT + 65);
            if (full) {
              expect([...state.gaveUp].join()).toBe([...kept].join());
              expect([...state.unanswered.keys()].join()).toBe([...awaiting].join());
            }
          };
          for (let step = 0; step < fill + ops.length; step++) {
            const [kind, pick] = step < fill ? [-1, step * 7919] : (ops[step - fill] as [number, number]);
            if (kind < 0) {
              // Filling past the cap: sent, then one of those awaiting times out (not always the oldest). No reply
              // comes, so the heap of ids only grows, but when rebuilt without the ids forgotten past the cap.
              send();
              const h = state.gaveUpHeap.length;
              if (awaiting.size > 3) timeOut(nth(awaiting, awaiting.size, pick));
              if (state.gaveUpHeap.length < h) rebuilt++;
            } else if (kind < 30 || (awaiting.size === 0 && kept.size === 0)) {
              if (awaiting.size < 600) send();
              else timeOut(nth(awaiting, awaiting.size, pick));
            } else if (kind < 55 && awaiting.size > 0) timeOut(nth(awaiting, awaiting.size, pick));
            else if (kind < 70 && awaiting.size > 0) reply(nth(awaiting, awaiting.size, pick));
            else if (kind < 90 && kept.size > 0) reply(1 + (pick % (nextId - 1))); // late, or to one forgotten or answered
            else if (kind < 97) reply(1 + (pick % (nextId + 5))); // to any id: given up and forgotten, not sent
            else replyNamingNone();
            check(step % 64 === 0 || kept.size < 8);
          }
          check(true);
        } finally {
          void c.close();
        }
      }),
      // endOnFailure: shrinking thousands of operations would take far longer than the test (the seed and path are reported).
      { numRuns: 8, seed: 20261130, endOnFailure: true },
    );
    expect(capped).toBeGreaterThan(1000);
    expect(rebuilt).toBeGreaterThan(0);
  });
});
