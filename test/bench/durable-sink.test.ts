import { describe, expect, it } from 'vitest';
import { durableSinkBench } from '../../bench/durable-sink.js';

describe('durable-sink bench (smoke)', () => {
  it('writes the same file plain and durable, footers only when durable, and reports per-batch times', async () => {
    const r = (await durableSinkBench(400, 1, null)) as Record<string, Record<string, number>>;
    const plain = r['plain'] as Record<string, number>;
    const durable = r['durable'] as Record<string, number>;
    expect(durable['file_bytes']).toBe(plain['file_bytes']);
    expect(plain['footer_bytes']).toBe(0);
    expect(durable['footer_bytes']).toBeGreaterThan(0);
    for (const m of [plain, durable]) for (const k of ['seconds', 'first_tenth_us_per_batch', 'last_tenth_us_per_batch']) expect(m[k]).toBeGreaterThan(0);
  });
});
