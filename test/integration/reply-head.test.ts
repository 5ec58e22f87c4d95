/**
 * Every reply's JSON begins with its head, `{"v":1,"id":<id>,"ok":`, and a successful reply of an op that creates a
 * session goes on `true,"result":{"session":"<session>"` (docs/protocol.md, Replies). The Python client reads the head
 * of a reply whose rest it cannot decode, to fail the request it answers and close the session it made
 * (bindings/python/src/ycgym/client.py, `_REPLY_HEAD`): this checks the server's bytes on the wire, over a real
 * socket, for every kind of reply a client meets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { OP_TABLE } from '../../src/protocol/ops.js';
import { startServer, type Server } from '../../src/server/server.js';

let server: Server;
let d: Dealer;
beforeAll(async () => {
  // The server as `ycgym serve` runs it (no reply validation: its replies take the production encoding paths).
  server = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxSessions: 16 });
  d = new Dealer({ linger: 0, receiveTimeout: 20_000 });
  d.connect(server.endpoint);
});
afterAll(async () => {
  d.close();
  await server.close();
});

/** Send `payload` and return the first frame of its reply as text, plus the number of frames. */
async function raw(payload: string): Promise<{ head: string; frames: number }> {
  await d.send(payload);
  const parts = await d.receive();
  return { head: (parts[0] as Buffer).toString('utf8'), frames: parts.length };
}

const HEAD = /^\{"v":1,"id":(null|-?[0-9]+|"(?:[^"\\]|\\.)*"),"ok":(true|false)/;

/** The id and outcome the head of `text` names (fails the test when it has none). */
function headOf(text: string): { id: unknown; ok: boolean } {
  const m = HEAD.exec(text);
  expect(m, text.slice(0, 200)).not.toBeNull();
  const mm = m as RegExpExecArray;
  return { id: JSON.parse(mm[1] as string) as unknown, ok: mm[2] === 'true' };
}

async function call(id: unknown, req: Record<string, unknown>): Promise<{ text: string; ok: boolean }> {
  const { head } = await raw(JSON.stringify({ v: 1, id, ...req }));
  const h = headOf(head);
  expect(h.id).toEqual(id);
  return { text: head, ok: h.ok };
}

/** The session a creating op's successful reply names right after its head. */
function madeSession(text: string): string {
  const m = /^\{"v":1,"id":[^,]+,"ok":true,"result":\{"session":("(?:[^"\\]|\\.)*")[,}]/.exec(text);
  expect(m, text.slice(0, 200)).not.toBeNull();
  return JSON.parse((m as RegExpExecArray)[1] as string) as string;
}

describe('reply heads on the wire', () => {
  it('creating ops name their session first, and every reply begins with its head', async () => {
    const creating = Object.entries(OP_TABLE)
      .filter(([, o]) => o.creates === true)
      .map(([name]) => name)
      .sort();
    // The ops this test covers are all the creating ones: a new one must be added here.
    expect(creating).toEqual(['reset', 'restore', 'turn_reset', 'turn_restore']);

    const r = await call(1, { op: 'reset', seed: 3, preset: 'default' });
    expect(r.ok).toBe(true);
    const s = madeSession(r.text);
    expect((await call(2, { op: 'step', session: s, action: 'market browse --limit 3' })).ok).toBe(true);
    expect((await call(3, { op: 'step', session: s, action: 'no such command' })).ok).toBe(true);
    const snap = await call(4, { op: 'snapshot', session: s });
    expect(snap.ok).toBe(true);
    const snapshot = (JSON.parse(snap.text) as { result: { snapshot: unknown } }).result.snapshot;
    const restored = await call(5, { op: 'restore', snapshot });
    expect(madeSession(restored.text)).not.toBe(s);
    // In place (the session named): the reply still names it first.
    expect(madeSession((await call(6, { op: 'reset', session: s, seed: 4 })).text)).toBe(s);
    expect(madeSession((await call(7, { op: 'restore', session: s, snapshot })).text)).toBe(s);

    const t = madeSession((await call(8, { op: 'turn_reset', seed: 3 })).text);
    expect((await call(9, { op: 'turn_step', session: t, action: { commands: ['yc-bench company status'] } })).ok).toBe(true);
    const tsnap = await call(10, { op: 'turn_snapshot', session: t });
    const tsnapshot = (JSON.parse(tsnap.text) as { result: { snapshot: unknown } }).result.snapshot;
    expect(madeSession((await call(11, { op: 'turn_restore', snapshot: tsnapshot })).text)).not.toBe(t);

    // Batches, JSON and binary (the binary reply's arrays follow as frames; its first frame has the head too).
    expect((await call(12, { op: 'step_batch', steps: [{ session: s, action: 'company status' }, { session: 'nope', action: 'x' }] })).ok).toBe(true);
    const bin = await raw(JSON.stringify({ v: 1, id: 13, op: 'step_batch', steps: [{ session: s, action: 'sim resume' }], encoding: 'binary' }));
    expect(headOf(bin.head)).toEqual({ id: 13, ok: true });
    expect(bin.frames).toBeGreaterThan(1);

    // Errors: an unknown session, a schema violation, an unknown op, a string id, a large id.
    expect((await call(14, { op: 'step', session: 'nope', action: 'x' })).ok).toBe(false);
    expect((await call(15, { op: 'reset', seed: 'x' })).ok).toBe(false);
    expect((await call(16, { op: 'frobnicate' })).ok).toBe(false);
    expect((await call('a"b', { op: 'hello' })).ok).toBe(true);
    expect((await call(2 ** 53 - 1, { op: 'close', session: s })).ok).toBe(true);
  });

  it('a request that cannot be read is answered with a head naming no request', async () => {
    for (const payload of ['{"v":1,', 'not json', '[1]']) {
      const { head } = await raw(payload);
      expect(headOf(head)).toEqual({ id: null, ok: false });
    }
  });
});
