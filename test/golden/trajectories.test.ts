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

describe('a file that is not a golden trajectory file', () => {
  it('is refused with its path and what is wrong (before: "unexpected token at 9", "Cannot read properties of undefined")', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'golden-bad-'));
    const cases: [string, string][] = [
      ['{"bad": ', 'not JSON: unexpected token at 8'],
      ['{}', 'episode 0: no integer "seed"'],
      ['[{"seed": 1, "steps": 3}]', 'episode 0: no "steps" list'],
      ['[{"seed": 1, "steps": []}, {"seed": 2, "steps": [{"exit": 0}]}]', 'episode 1: step 0 has no "cmd" string'],
      ['[7]', 'episode 0: not an object'],
    ];
    for (const [i, [text, what]] of cases.entries()) {
      const path = join(dir, `f${i}.json`);
      writeFileSync(path, text);
      expect(() => readGoldenFile(path)).toThrow(new Error(`${path}: not a golden trajectory file (${what})`));
    }
  });
});
