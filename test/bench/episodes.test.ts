import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { episodeRates } from '../../bench/episodes.js';
import { withNodeWrapper } from '../helpers/node-wrapper.js';

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const script = join(dist, 'bench', 'episodes.js');

describe('bench/episodes.ts', () => {
  it('times the cached-world modes on cached worlds and the fresh-world mode on worlds generated in the round', () => {
    // The fresh-world round used to clear the world cache, so the rounds after it in the same repeat (no_text,
    // value_only) generated their worlds again and were timed as "world cached" with world generation in them.
    const out = episodeRates(3, 2, ['text', 'text_fresh_world', 'text_bytes', 'no_text', 'value_only']) as { worlds_generated_per_round: Record<string, number> };
    expect(out.worlds_generated_per_round).toEqual({ text: 0, text_fresh_world: 3, text_bytes: 0, no_text: 0, value_only: 0 });
  }, 120_000);

  it('text_bytes reads the same text as text, as bytes', () => {
    const text = episodeRates(2, 1, ['text']) as { text_chars_per_round: number };
    const bytes = episodeRates(2, 1, ['text_bytes']) as { text_bytes_chars_per_round: number };
    expect(bytes.text_bytes_chars_per_round).toBeGreaterThan(100_000);
    expect(bytes.text_bytes_chars_per_round).toBe(text.text_chars_per_round);
  }, 120_000);

  it.skipIf(!existsSync(script) || process.platform === 'win32')('--against-node runs the other build\'s processes on that node executable, and needs --against', () => {
    withNodeWrapper((node) => {
      const r = spawnSync(process.execPath, [script, '--against', dist, '--against-node', node.path, '--seeds', '1', '--repeats', '2', '--modes', 'value_only'], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, any>;
      expect(out['node_versions']).toEqual({ this: process.version, other: process.version });
      expect(out['value_only'].other_episodes_per_cpu_s).toBeGreaterThan(0);
      // `--version`, then the other build's process of each repeat (this build's ran on this node).
      const runs = node.runs();
      expect(runs[0]).toBe('--version');
      expect(runs.slice(1).map((l) => l.startsWith(script) && l.includes('--modes value_only'))).toEqual([true, true]);
      const bad = spawnSync(process.execPath, [script, '--against', dist, '--against-node', node.missing, '--seeds', '1', '--repeats', '1', '--modes', 'value_only'], { encoding: 'utf8' });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/no-such-node: not a node executable/);
      const alone = spawnSync(process.execPath, [script, '--against-node', node.path], { encoding: 'utf8' });
      expect(alone.status).not.toBe(0);
      expect(alone.stderr).toMatch(/--against-node needs --against/);
    });
  }, 120_000);
});
