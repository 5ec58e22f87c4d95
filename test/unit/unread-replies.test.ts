import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { UNREAD_TOTAL_HEADROOM_DIVISOR } from '../../src/protocol/limits.js';
import { HeldReplyBuffers, UnreadReplies, unreadRefusalMessage, unreadVerdict } from '../../src/server/server.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

const LARGE = 1 << 16;

describe('UnreadReplies (the per-connection count of large replies ZeroMQ may still hold)', () => {
  it('counts at most its cap of connections: connections that left with large replies do not grow it without bound', () => {
    const u = new UnreadReplies(64);
    for (let i = 0; i < 10_000; i++) u.sent(`peer-${i}`, LARGE);
    expect(u.size).toBe(64);
    // The most recent connections are the ones kept; the oldest were forgotten.
    expect(u.bytes('peer-9999')).toBe(LARGE);
    expect(u.bytes('peer-0')).toBe(0);
  });

  it('keeps a connection that keeps sending, however many others come and go', () => {
    const u = new UnreadReplies(8);
    for (let i = 0; i < 1000; i++) {
      u.sent('hostile', LARGE);
      u.sent(`short-${i}`, LARGE);
    }
    // Its window holds the last 17 replies handed over (16 queued, 1 being written).
    expect(u.bytes('hostile')).toBe(17 * LARGE);
    expect(u.size).toBe(8);
  });

  it('the default cap is in the thousands, and small replies alone leave no entry', () => {
    const u = new UnreadReplies();
    for (let i = 0; i < 5000; i++) u.sent(`p${i}`, LARGE);
    expect(u.size).toBe(4096);
    const v = new UnreadReplies();
    for (let i = 0; i < 100; i++) v.sent(`q${i}`, 100);
    expect(v.size).toBe(0);
  });
});

describe('UnreadReplies.total and unreadVerdict (the budget of every connection together)', () => {
  it('total is the sum of the windows; a connection forgotten past the cap leaves it', () => {
    const u = new UnreadReplies(4);
    for (let i = 0; i < 17; i++) u.sent('a', LARGE);
    u.sent('b', 2 * LARGE);
    expect(u.tracked).toBe(19 * LARGE);
    expect(u.total).toBe(19 * LARGE);
    // The window moves: a reply 17 sends old leaves the count, and a small one moves it too.
    u.sent('a', 100);
    expect(u.bytes('a')).toBe(16 * LARGE);
    expect(u.total).toBe(18 * LARGE);
    // A connection ZeroMQ refused (gone) leaves the total with what it held.
    u.forget('b');
    expect(u.total).toBe(16 * LARGE);
    // Forgotten past the cap: out of its own count, the average and the total (what it may still hold, its last 17
    // replies, is counted nowhere: docs/protocol.md).
    for (let i = 0; i < 4; i++) u.sent(`c${i}`, LARGE);
    expect(u.bytes('a')).toBe(0);
    expect(u.tracked).toBe(4 * LARGE);
    expect(u.total).toBe(4 * LARGE);
  });

  it('a connection forgotten past the cap leaves the total: a reading client is served afterwards, whatever else the buffers hold', () => {
    // Before: the bytes of connections forgotten past the cap stayed in the total for good, so once connections that
    // left had been forgotten with as much as the budget, the count stayed at it and only the buffers the process
    // holds (sessions' typed arrays among them) decided: every client was refused for good when they held as much.
    const u = new UnreadReplies(4);
    for (let i = 0; i < 17; i++) u.sent('gone', LARGE);
    for (let i = 0; i < 4; i++) u.sent(`c${i}`, LARGE);
    expect(u.bytes('gone')).toBe(0);
    const otherBuffers = (): number => 64 * LARGE;
    expect(unreadVerdict(u, 'c3', 0, 16 * LARGE, 16 * LARGE, otherBuffers)).toBeNull();
  });

  it('refuses the connections holding the most from 3/4 of the total, every connection at it, and none below', () => {
    const M = LARGE;
    const u = new UnreadReplies();
    // 20 connections that never read, 2 replies each (40 M), and one that read (1 reply).
    for (let c = 0; c < 20; c++) for (let i = 0; i < 2; i++) u.sent(`hostile-${c}`, M);
    u.sent('reader', M);
    const plenty = (): number => Number.POSITIVE_INFINITY;
    // Per connection budget 16 M: nobody is at it. Total budget 64 M: 41 M is below 3/4 (48 M), everyone is served,
    // and the buffers are not even looked at.
    const noLook = (): number => {
      throw new Error('sampled below 3/4 of the budget');
    };
    expect(unreadVerdict(u, 'hostile-0', 0, 16 * M, 64 * M, noLook)).toBeNull();
    // Total budget 52 M: 41 M is above 3/4 (39 M). The connections holding at least the average are refused, the one
    // below it and a new one are served.
    expect(unreadVerdict(u, 'hostile-0', 0, 16 * M, 52 * M, plenty)?.kind).toBe('share');
    expect(unreadVerdict(u, 'reader', 0, 16 * M, 52 * M, plenty)).toBeNull();
    expect(unreadVerdict(u, 'new', 0, 16 * M, 52 * M, plenty)).toBeNull();
    // Outboxes count: with 11 M more waiting there, 52 M is reached: every connection holding something counted is
    // refused (one holding less than the average too), a connection holding nothing only beyond the headroom (next test).
    const full = unreadVerdict(u, 'reader', 11 * M, 16 * M, 52 * M, plenty);
    expect(full?.kind).toBe('total');
    expect(full?.held).toBe(52 * M);
    // Its own budget first.
    expect(unreadVerdict(u, 'hostile-0', 0, 2 * M, 52 * M, plenty)?.kind).toBe('connection');
    // The buffers the process holds bound the count: connections that left (their replies freed, their count kept)
    // do not hold the budget for good.
    expect(unreadVerdict(u, 'new', 11 * M, 16 * M, 52 * M, () => 10 * M)).toBeNull();
    expect(unreadVerdict(u, 'hostile-0', 11 * M, 16 * M, 52 * M, () => 45 * M)?.kind).toBe('share');
  });

  it('at the total budget a connection holding nothing counted is served, up to a headroom above it; one holding something is refused', () => {
    // Before: from the total budget on every connection's requests were refused, a lockstep client's whose replies are
    // all small (never counted, it holds nothing) included, for as long as connections that never read held it
    // (possibly for good): the replies admitted just below the budget can put what they hold over it.
    const M = LARGE;
    const u = new UnreadReplies();
    // 4 connections that never read, 17 replies each (68 M), and one that reads (1 reply).
    for (let c = 0; c < 4; c++) for (let i = 0; i < 17; i++) u.sent(`hostile-${c}`, M);
    u.sent('reader', M);
    const total = 64 * M;
    const headroom = total / UNREAD_TOTAL_HEADROOM_DIVISOR;
    expect(headroom).toBe(16 * M);
    const plenty = (): number => Number.POSITIVE_INFINITY;
    // 69 M counted, over the 64 M budget: the lockstep client (nothing counted) is served, the others are refused.
    expect(unreadVerdict(u, 'lockstep', 0, 32 * M, total, plenty)).toBeNull();
    expect(unreadVerdict(u, 'reader', 0, 32 * M, total, plenty)?.kind).toBe('total');
    expect(unreadVerdict(u, 'hostile-0', 0, 32 * M, total, plenty)?.kind).toBe('total');
    // Up to the headroom (outboxes count): 79 M served, 80 M (budget + headroom) and beyond refused.
    expect(unreadVerdict(u, 'lockstep', 10 * M, 32 * M, total, plenty)).toBeNull();
    const beyond = unreadVerdict(u, 'lockstep', 11 * M, 32 * M, total, plenty);
    expect(beyond?.kind).toBe('total');
    expect(beyond?.mine).toBe(0);
    expect(beyond?.held).toBe(total + headroom);
    expect(unreadVerdict(u, 'lockstep', 40 * M, 32 * M, total, plenty)?.kind).toBe('total');
    // The buffers still bound the count, measured again after a collection only when they would refuse.
    const asked: boolean[] = [];
    expect(unreadVerdict(u, 'lockstep', 11 * M, 32 * M, total, (after) => (asked.push(after), after ? 70 * M : 90 * M))).toBeNull();
    expect(asked).toEqual([false, true]);
    asked.length = 0;
    expect(unreadVerdict(u, 'lockstep', 11 * M, 32 * M, total, (after) => (asked.push(after), 85 * M))?.kind).toBe('total');
    expect(asked).toEqual([false, true]);
    // In the headroom no collection is asked for: a lockstep client served there costs none.
    asked.length = 0;
    expect(unreadVerdict(u, 'lockstep', 0, 32 * M, total, (after) => (asked.push(after), 75 * M))).toBeNull();
    expect(asked).toEqual([false]);
    // Its own budget still first, and the headroom is not a connection's own budget: one that got a large reply from it
    // holds something and is refused at the total again.
    u.sent('lockstep', M);
    expect(unreadVerdict(u, 'lockstep', 0, 32 * M, total, plenty)?.kind).toBe('total');
  });

  it('the refusal says which bound refused it: the total budget, or the budget plus its headroom, in bytes and MiB', () => {
    // Before: both said only "their budget is B": a connection holding nothing refused beyond the budget plus its
    // headroom was told of the budget alone (which it had been served above), not of the bound that refused it.
    const M = LARGE;
    const u = new UnreadReplies();
    for (let c = 0; c < 4; c++) for (let i = 0; i < 17; i++) u.sent(`hostile-${c}`, M);
    const total = 64 * M; // 4 MiB
    const headroom = total / UNREAD_TOTAL_HEADROOM_DIVISOR; // 1 MiB
    const plenty = (): number => Number.POSITIVE_INFINITY;
    // A connection holding some: refused at the budget (68 M held).
    const atBudget = unreadVerdict(u, 'hostile-0', 0, 32 * M, total, plenty);
    expect(atBudget).toMatchObject({ kind: 'total', bound: total });
    const m1 = unreadRefusalMessage(atBudget!, 32 * M, total);
    expect(m1).toBe(
      `the unread replies of every connection together hold ${68 * M} bytes, their budget is ${total} (4 MiB; ` +
        `\`ycgym serve --max-unread-total-mib\`) and this connection holds ${17 * M} bytes of them: the request was not handled; retry later`,
    );
    // The integration test's reading of it still holds (the bytes held, the budget, no comma before the end).
    expect(/hold (\d+) bytes, their budget is (\d+)[^,]*: the request was not handled; retry later$/.exec(m1)?.slice(1)).toEqual([String(68 * M), String(total)]);
    // A connection holding nothing: refused only beyond the budget plus its headroom (80 M held, with the outboxes).
    const beyond = unreadVerdict(u, 'lockstep', 12 * M, 32 * M, total, plenty);
    expect(beyond).toMatchObject({ kind: 'total', mine: 0, bound: total + headroom });
    expect(unreadRefusalMessage(beyond!, 32 * M, total)).toBe(
      `the unread replies of every connection together hold ${80 * M} bytes, their budget plus its headroom is ${total + headroom} ` +
        `(5 MiB: the budget ${total} of \`ycgym serve --max-unread-total-mib\` and a quarter of it, ${headroom}, which serves only ` +
        `connections holding no large unread reply, as this one): the request was not handled; retry later`,
    );
    // The other refusals keep their texts: a connection's own budget, and the share of those holding the most.
    u.sent('reader', M);
    const share = unreadVerdict(u, 'hostile-0', 0, 32 * M, 80 * M, plenty);
    expect(share).toMatchObject({ kind: 'share', bound: 60 * M });
    expect(unreadRefusalMessage(share!, 32 * M, 80 * M)).toBe(
      `the unread replies of every connection together hold ${69 * M} bytes, their budget is ${80 * M} (\`ycgym serve --max-unread-total-mib\`), ` +
        `and this connection's (${17 * M} bytes) are among the most: the request was not handled; read the replies before sending more`,
    );
    const own = unreadVerdict(u, 'hostile-0', 0, 16 * M, 80 * M, plenty);
    expect(own).toMatchObject({ kind: 'connection', bound: 16 * M });
    expect(unreadRefusalMessage(own!, 16 * M, 80 * M)).toBe(
      `this connection's unread replies hold ${17 * M} bytes, its budget is ${16 * M} (\`ycgym serve --max-unread-mib\`): the request was not handled; read the replies before sending more`,
    );
  });

  it('when the buffers decide a refusal they are measured again after a collection (garbage is not held replies)', () => {
    // Before: the buffers were sampled once, garbage included: replies a reading client had taken, released by ZeroMQ
    // but not yet collected, counted as held, and the reader was refused (`total`, `share`) until a collection ran.
    const M = LARGE;
    const u = new UnreadReplies();
    for (let c = 0; c < 4; c++) for (let i = 0; i < 17; i++) u.sent(`hostile-${c}`, M);
    for (let i = 0; i < 17; i++) u.sent('reader', M);
    // Counted: 85 M. The process holds 60 M in buffers of which 50 M are garbage; 10 M once collected.
    const asked: boolean[] = [];
    const buffers = (afterCollection: boolean): number => {
      asked.push(afterCollection);
      return afterCollection ? 10 * M : 60 * M;
    };
    expect(unreadVerdict(u, 'reader', 0, 32 * M, 52 * M, buffers)).toBeNull();
    expect(asked).toEqual([false, true]);
    // What the collection leaves still decides: held replies are refused.
    expect(unreadVerdict(u, 'reader', 0, 32 * M, 52 * M, (after) => (after ? 55 * M : 60 * M))?.kind).toBe('total');
    expect(unreadVerdict(u, 'hostile-0', 0, 32 * M, 52 * M, (after) => (after ? 45 * M : 60 * M))?.kind).toBe('share');
    // Also when the buffers sampled hold more than the count: the count alone is no evidence of held replies.
    asked.length = 0;
    expect(unreadVerdict(u, 'reader', 0, 32 * M, 52 * M, (after) => (asked.push(after), after ? 10 * M : 100 * M))).toBeNull();
    expect(asked).toEqual([false, true]);
    // Served without a collection when nothing would refuse.
    asked.length = 0;
    expect(unreadVerdict(u, 'new', 0, 32 * M, 100 * M, (after) => (asked.push(after), 60 * M))).toBeNull();
    expect(asked).toEqual([false]);
  });
});

describe('UnreadReplies.unwatched (the counted replies whose Buffers no HeldReplyBuffers watches)', () => {
  it('counts the unwatched replies while they are in their window, and lets them go with it, with the connection and past the cap', () => {
    const u = new UnreadReplies(2);
    u.sent('a', LARGE);
    u.sent('a', 2 * LARGE, true);
    u.sent('b', 3 * LARGE);
    expect(u.total).toBe(6 * LARGE);
    expect(u.unwatched).toBe(4 * LARGE);
    // 'a''s first reply leaves its window after 17 later ones (small ones move it too), and its unwatched bytes with it.
    for (let i = 0; i < 16; i++) u.sent('a', 100);
    expect(u.bytes('a')).toBe(2 * LARGE);
    expect(u.unwatched).toBe(3 * LARGE);
    // A connection ZeroMQ refused leaves with its unwatched bytes.
    u.forget('b');
    expect(u.unwatched).toBe(0);
    // Forgotten past the cap (2 connections): 'a' (a watched reply only) goes first, then 'c' with its unwatched one.
    u.sent('c', LARGE);
    u.sent('d', LARGE, true);
    expect([u.size, u.total, u.unwatched]).toEqual([2, 2 * LARGE, LARGE]);
    u.sent('e', LARGE, true);
    expect([u.size, u.total, u.unwatched]).toEqual([2, 2 * LARGE, 0]);
  });
});

describe('HeldReplyBuffers (the reply Buffers ZeroMQ may still hold: weak references, exact after a collection)', () => {
  it('counts the Buffer frames ZeroMQ takes by reference, per connection, and only those: not strings, not frames it copies, not other buffers', () => {
    const h = new HeldReplyBuffers();
    const other = Buffer.alloc(8 << 20);
    const a = Buffer.alloc(1000);
    const b = Buffer.alloc(5000);
    h.add('c1', [Buffer.from([0, 1, 2, 3, 4]), 'x'.repeat(100_000), a]);
    h.add('c2', [Buffer.alloc(128), b]);
    expect(h.bytes).toBe(6000);
    expect(h.size).toBe(2);
    expect(h.bytesOf('c1')).toBe(1000);
    expect(h.bytesOf('c2')).toBe(5000);
    expect(h.bytesOf('c3')).toBe(0);
    expect(other.length + a.length + b.length).toBe((8 << 20) + 6000);
  });

  it('forgets a Buffer once V8 collected it (prune after a full collection), and keeps those still referenced', () => {
    const h = new HeldReplyBuffers();
    const kept = Buffer.alloc(3000);
    (() => {
      h.add('gone', [Buffer.alloc(2000), Buffer.alloc(2000)]);
    })();
    h.add('kept', ['head', kept]);
    expect(h.bytes).toBe(7000);
    // A WeakRef's target made in this job stays alive until the job ends: collect in a later one.
    return new Promise<void>((resolve) => {
      setTimeout(() => {
        gc();
        h.prune();
        expect(h.bytes).toBe(3000);
        expect(h.size).toBe(1);
        expect(h.bytesOf('gone')).toBe(0);
        expect(h.bytesOf('kept')).toBe(kept.length);
        resolve();
      }, 0);
    });
  });
});

describe('unreadVerdict with the Buffers a connection may still hold (heldBy)', () => {
  const M = 1 << 20;
  it('a connection whose count is empty but whose reply ZeroMQ still holds is refused from the budget, not its headroom', () => {
    const u = new UnreadReplies();
    // Others hold 17 MiB counted: over a 16 MiB budget, below it and its headroom.
    for (let i = 0; i < 17; i++) u.sent(`other-${i}`, M);
    const buffers = (): number => 17 * M;
    expect(unreadVerdict(u, 'stuck', 0, 4 * M, 16 * M, buffers)).toBeNull();
    const v = unreadVerdict(u, 'stuck', 0, 4 * M, 16 * M, buffers, (k) => (k === 'stuck' ? M : 0));
    expect(v).toEqual({ kind: 'total', mine: M, held: 17 * M, bound: 16 * M });
    // After a collection the Buffer is known gone: its headroom again.
    let collected = false;
    const v2 = unreadVerdict(u, 'stuck', 0, 4 * M, 16 * M, (after) => ((collected ||= after), 17 * M), () => (collected ? 0 : M));
    expect(collected).toBe(true);
    expect(v2).toBeNull();
  });
});
