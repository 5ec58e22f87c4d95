/**
 * The server's admission control (`memoryGuard`) sees the buffers the process holds, not only the V8 heap. Before, a
 * client that never reads its replies could make the server hold its `step_batch` replies (up to 64 MiB each, handed to
 * ZeroMQ without copying) in ZeroMQ's queue for it: 30 such batches took the server from 95 MiB to 2 GB of resident
 * memory while the heap stayed at 17 MiB, so the heap guard never refused anything, and more connections doing the same
 * grew it without bound. Now bulk work is refused (`capacity`) once the heap and those buffers together pass 85% of
 * the heap's limit.
 */
import { describe, expect, it } from 'vitest';
import { getHeapStatistics } from 'node:v8';
import { memoryGuard } from '../../src/server/server.js';

const limit = getHeapStatistics().heap_size_limit;

function usage(heapUsed: number, arrayBuffers: number): NodeJS.MemoryUsage {
  return { rss: heapUsed + arrayBuffers, heapTotal: heapUsed, heapUsed, external: arrayBuffers, arrayBuffers };
}

describe('memoryGuard', () => {
  it('admits while the heap and the buffers are small', () => {
    expect(memoryGuard(undefined, () => usage(50 << 20, 50 << 20))()).toBeNull();
  });

  it('refuses when the heap is near its limit (as before)', () => {
    expect(memoryGuard(undefined, () => usage(Math.ceil(limit * 0.9), 0))()).toMatch(/^server at capacity: .*retry later$/);
  });

  it('refuses when buffers held (replies queued for clients) take heap and buffers past 85% of the heap limit', () => {
    const verdict = memoryGuard(undefined, () => usage(20 << 20, Math.ceil(limit * 0.9)))();
    expect(verdict).toMatch(/^server at capacity: the JavaScript heap \(\d+ MiB\) and its buffers \(\d+ MiB: replies not yet taken by their clients, among others\) hold \d+ MiB, above 85% of its \d+ MiB limit; retry later$/);
  });

  it('refuses above the --max-memory budget (as before)', () => {
    expect(memoryGuard(64 << 20, () => usage(50 << 20, 50 << 20))()).toMatch(/above its memory budget of 64 MiB \(--max-memory\); retry later$/);
  });
});
