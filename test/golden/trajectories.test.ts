import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { readGoldenFile, replayEpisode } from '../../src/cli/parity.js';

const DIR = 'test/fixtures/parity/trajectories';

describe('golden trajectories replay with zero mismatches', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.json.gz')).sort();
  it('has the fixture files', () => {
    expect(files.length).toBeGreaterThanOrEqual(11);
  });
  for (const f of files) {
    it(f, () => {
      const eps = readGoldenFile(`${DIR}/${f}`);
      expect(eps.length).toBeGreaterThan(0);
      eps.forEach((ep, i) => {
        const r = replayEpisode(ep, loadPreset(ep.preset), f, i);
        expect(r.first, JSON.stringify(r.first, null, 1)?.slice(0, 4000)).toBeNull();
        expect(r.mismatches).toBe(0);
        expect(r.steps).toBe(ep.steps.length);
      });
    });
  }
});
