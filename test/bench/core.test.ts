import { describe, expect, it } from 'vitest';
import { coreSuite, greedyRound } from '../../bench/core.js';

describe('bench/core.ts (npm run bench, suite core)', () => {
  it('times its world-cached rounds on cached worlds and its fresh-world rounds on worlds generated in them', async () => {
    // Since worlds are retained from their second request, the setup's one round left them uncached and the fresh
    // round cleared the cache: the first "cached world" round generated the worlds of the seeds the warm-up skipped, and
    // every one after a fresh round all of them again.
    await coreSuite.setup?.('quick');
    const seeds = Array.from({ length: 10 }, (_, i) => i + 1); // the quick size's seeds
    for (let r = 0; r < 2; r++) {
      expect(greedyRound(seeds, false).worlds_generated).toBe(0);
      expect(greedyRound(seeds, true).worlds_generated).toBe(seeds.length);
    }
  }, 120_000);
});
