/**
 * bench/export-path.ts on one episode against the same checkout: the JSON it prints (never the timings) and its
 * refusal of an unknown part.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const script = join(root, 'dist', 'bench', 'export-path.js');

describe('bench/export-path', () => {
  it.skipIf(!existsSync(script))('times each part of the export path per episode against another checkout', () => {
    const r = spawnSync(process.execPath, [script, '--rounds', '1', '--episodes', '1', '--against', root], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    expect(out['episodes']).toBe(1);
    expect(out['rows']).toBeGreaterThan(10);
    // The rows carry the episode's texts (seed 100, the first the bench records), as an env with text shows them.
    let text = 0;
    runEpisode(new Env(), new GreedyPolicy(), { seed: 100 }, { onStep: ({ result }) => void (text += Buffer.byteLength(result.observation.text, 'utf8')) });
    expect(out['text_bytes']).toBe(text);
    for (const p of ['record', 'write_zstd', 'write_plain', 'write_parquet', 'record_body', 'write_body']) {
      expect(out[`${p}_cpu_us`]).toBeGreaterThan(0);
      expect(out[`against_${p}_cpu_us`]).toBeGreaterThan(0);
      expect(out[`${p}_speedup_vs_against`]).toBeGreaterThan(0);
    }
  });

  it.skipIf(!existsSync(script))('refuses an unknown part', () => {
    const bad = spawnSync(process.execPath, [script, '--parts', 'record,csv'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown part "csv"/);
  });
});
