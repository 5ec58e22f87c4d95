import { describe, expect, it } from 'vitest';
import { UnreadReplies } from '../../src/server/server.js';

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
