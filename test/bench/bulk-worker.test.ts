/**
 * bench/bulk-worker.ts on a few episodes against the same build: the JSON it prints (never the timings) and the byte
 * check between builds.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const script = join(root, 'dist', 'bench', 'bulk-worker.js');

describe('bench/bulk-worker', () => {
  it.skipIf(!existsSync(script))('times a worker episode of this build against another and checks both packed the same bytes', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '3', '--against', root], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    expect(Object.keys(out)).toEqual(['episodes', 'trajectories', 'cpu_us_per_episode', 'against_cpu_us_per_episode', 'speedup_vs_against', 'packed_identical', 'cpu_us_per_episode_mean', 'against_cpu_us_per_episode_mean', 'speedup_vs_against_mean']);
    expect(out['episodes']).toBe(3);
    expect(out['trajectories']).toBe(1);
    expect(out['packed_identical']).toBe(1);
    expect(out['speedup_vs_against']).toBeGreaterThan(0);
    expect(out['cpu_us_per_episode_mean']).toBeGreaterThan(0);
    expect(out['against_cpu_us_per_episode_mean']).toBeGreaterThan(0);
    expect(out['speedup_vs_against_mean']).toBeGreaterThan(0);
  });

  it.skipIf(!existsSync(script))('times the Parquet path (packed buffers) with --format parquet, and refuses another format', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '2', '--format', 'parquet', '--against', root], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    expect(Object.keys(out)).toEqual(['episodes', 'trajectories', 'cpu_us_per_episode', 'against_cpu_us_per_episode', 'speedup_vs_against', 'packed_identical', 'cpu_us_per_episode_mean', 'against_cpu_us_per_episode_mean', 'speedup_vs_against_mean']);
    expect(out['packed_identical']).toBe(1);
    const bad = spawnSync(process.execPath, [script, '--episodes', '1', '--format', 'csv'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--format csv');
  });

  it.skipIf(!existsSync(script))('plays without trajectories alone', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '2', '--no-trajectories'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(Object.keys(JSON.parse(r.stdout) as object)).toEqual(['episodes', 'trajectories', 'cpu_us_per_episode', 'cpu_us_per_episode_mean']);
  });

  it.skipIf(!existsSync(script))('reports the warm-up curve with --curve: the mean per range of episodes, and the first seeds played again', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '7', '--curve'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, any>;
    expect(Object.keys(out)).toEqual(['episodes', 'trajectories', 'cpu_us_per_episode', 'cpu_us_per_episode_mean', 'cpu_us_mean_by_episode', 'first_cpu_us_mean', 'replay_cpu_us_mean']);
    const curve = out['cpu_us_mean_by_episode'] as Record<string, number>;
    expect(Object.keys(curve)).toEqual(['1', '2-5', '6-7']);
    for (const v of Object.values(curve)) expect(v).toBeGreaterThan(0);
    // The ranges' means weighted by their sizes give back the mean of all the episodes (each mean rounded to 1 µs).
    const weighted = ((curve['1'] as number) + 4 * (curve['2-5'] as number) + 2 * (curve['6-7'] as number)) / 7;
    expect(Math.abs(weighted - out['cpu_us_per_episode_mean'])).toBeLessThanOrEqual(1);
    // Fewer episodes than 50: every one is played again; the first play's mean is then the mean of all.
    expect(out['first_cpu_us_mean']).toBe(out['cpu_us_per_episode_mean']);
    expect(out['replay_cpu_us_mean']).toBeGreaterThan(0);
    const bad = spawnSync(process.execPath, [script, '--episodes', '1', '--curve', '--against', root], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--curve times this build alone');
  });

  it('splits the episode numbers into the --curve ranges', async () => {
    const { curveRanges } = (await import(join(root, 'dist', 'bench', 'bulk-worker.js'))) as { curveRanges(n: number): [number, number][] };
    expect(curveRanges(1)).toEqual([[1, 1]]);
    expect(curveRanges(7)).toEqual([[1, 1], [2, 5], [6, 7]]);
    expect(curveRanges(300).map(([lo, hi]) => `${lo}-${hi}`)).toEqual(['1-1', '2-5', '6-10', '11-25', '26-50', '51-100', '101-200', '201-300']);
    expect(curveRanges(450).slice(-2)).toEqual([[301, 400], [401, 450]]);
    // Every episode in exactly one range, in order.
    for (const n of [1, 2, 49, 301, 1000]) expect(curveRanges(n).flatMap(([lo, hi]) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i))).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it.skipIf(!existsSync(script))('splits the trajectory work of an episode into its parts with --parts, and refuses it with a comparison', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '2', '--parts'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number>;
    expect(Object.keys(out)).toEqual(['episodes', 'cpu_us_per_episode_mean', 'rows_cpu_us_mean', 'text_render_us_mean', 'body_cpu_us_mean', 'zstd_text_us_mean', 'zstd_other_us_mean', 'zstd_other_calls']);
    expect(out['episodes']).toBe(2);
    for (const v of Object.values(out)) expect(Number.isFinite(v)).toBe(true);
    expect(out['rows_cpu_us_mean']).toBeGreaterThan(0);
    expect(out['body_cpu_us_mean']).toBeGreaterThanOrEqual(0);
    // Every buffer of the step table's body but the observation text's is compressed as a frame of its own.
    expect(out['zstd_other_calls']).toBeGreaterThan(10);
    for (const extra of [['--against', root], ['--no-trajectories'], ['--format', 'parquet']]) {
      const bad = spawnSync(process.execPath, [script, '--episodes', '1', '--parts', ...extra], { encoding: 'utf8' });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toContain('--parts');
    }
  });

  it.skipIf(!existsSync(script))('times another checkout\'s build alone with --root', () => {
    const r = spawnSync(process.execPath, [script, '--episodes', '2', '--no-trajectories', '--root', root], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(Object.keys(JSON.parse(r.stdout) as object)).toEqual(['episodes', 'trajectories', 'cpu_us_per_episode', 'cpu_us_per_episode_mean']);
    const missing = spawnSync(process.execPath, [script, '--episodes', '1', '--root', join(root, 'no-such-checkout')], { encoding: 'utf8' });
    expect(missing.status).not.toBe(0);
  });
});
