/**
 * bench/bulk-run.ts on a tiny run against the same build: the JSON it prints (never the timings), the byte check
 * between builds, and its refusals.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { withNodeWrapper } from '../helpers/node-wrapper.js';

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const script = join(dist, 'bench', 'bulk-run.js');

describe('bench/bulk-run', () => {
  it.skipIf(!existsSync(script))('times ycgym run per format against another build and checks both wrote the same bytes', () => {
    const r = spawnSync(process.execPath, [script, '--seeds', '1-2', '--workers', '1', '--repeats', '1', '--formats', 'none,arrow,arrow_plain', '--against', dist], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, any>;
    expect(out['run']).toEqual({ seeds: '1-2', policy: 'greedy', workers: 1, formats: ['none', 'arrow', 'arrow_plain'], repeats: 1 });
    for (const build of ['this', 'other']) {
      // The default files are zstd-compressed: far smaller than the plain ones.
      expect(out[build]['arrow'].files['trajectories.arrow'] * 10).toBeLessThan(out[build]['arrow_plain'].files['trajectories.arrow']);
      for (const f of ['none', 'arrow', 'arrow_plain']) {
        const m = out[build][f];
        expect(m.runs.length).toBe(1);
        expect(m.wall_s).toBeGreaterThan(0);
        expect(m.cpu_s === null || m.cpu_s >= 0).toBe(true);
        // The writer thread's part of the CPU (Linux: read from /proc while the run lives).
        if (process.platform === 'linux') {
          expect(m.main_thread_cpu_s).toBeGreaterThan(0);
          expect(m.main_thread_cpu_s).toBeLessThanOrEqual(m.cpu_s);
          // Every thread's CPU, the main thread first; with one worker the episodes run on the main thread, so
          // every other thread is background (V8's compiler and collector, libuv's pool).
          const threads = m.runs[0].thread_cpu_s as number[];
          expect(threads[0]).toBeCloseTo(m.main_thread_cpu_s, 2);
          expect(threads.slice(1)).toEqual([...threads.slice(1)].sort((a, b) => b - a));
          expect(m.background_threads_cpu_s).toBeCloseTo(threads.slice(1).reduce((a, b) => a + b, 0), 1);
          expect(threads.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(m.cpu_s + 0.05);
        }
      }
      expect(Object.keys(out[build]['arrow'].files)).toEqual(['episodes.arrow', 'summary.json', 'trajectories.arrow']);
      expect(Object.keys(out[build]['none'].files)).toEqual(['episodes.arrow', 'summary.json']);
    }
    expect(out['identical_files']).toEqual({ none: true, arrow: true, arrow_plain: true });
    expect(Object.keys(out['ratio_other_over_this'])).toEqual(['none', 'arrow', 'arrow_plain']);
    expect(Object.keys(out['ratio_other_over_this']['arrow'])).toEqual(['wall', 'cpu', 'main_thread_cpu']);
  });

  it.skipIf(!existsSync(script) || process.platform !== 'linux')('with worker threads, background CPU is every thread but the main one and the --workers busiest', () => {
    const r = spawnSync(process.execPath, [script, '--seeds', '1-4', '--workers', '2', '--repeats', '1', '--formats', 'none'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const m = (JSON.parse(r.stdout) as Record<string, any>)['this']['none'];
    const threads = m.runs[0].thread_cpu_s as number[];
    // The main thread, two worker threads and V8's own threads at least.
    expect(threads.length).toBeGreaterThanOrEqual(4);
    expect(m.background_threads_cpu_s).toBeCloseTo(threads.slice(3).reduce((a, b) => a + b, 0), 1);
    expect(m.background_threads_cpu_s).toBeLessThanOrEqual(threads.slice(1).reduce((a, b) => a + b, 0));
  });

  it.skipIf(!existsSync(script))('compares one build with and without node flags, run by run, and checks the flags change no byte', () => {
    const flags = '--max-inlined-bytecode-size-cumulative=460 --max-inlined-bytecode-size=230';
    const r = spawnSync(process.execPath, [script, '--seeds', '1-2', '--workers', '1', '--repeats', '2', '--formats', 'arrow', '--against', dist, '--against-node-flags', flags], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, any>;
    expect(out['run']).toEqual({ seeds: '1-2', policy: 'greedy', workers: 1, formats: ['arrow'], repeats: 2, against_node_flags: flags.split(' ') });
    expect(out['identical_files']).toEqual({ arrow: true });
    const pair = out['median_pair_ratio_other_over_this']['arrow'];
    expect(Object.keys(pair)).toEqual(['wall', 'cpu']);
    expect(pair.wall).toBeGreaterThan(0);
    // The median of the two repeats' ratios, each the other run's wall time over this one's.
    const ratios = [0, 1].map((i) => out['other']['arrow'].runs[i].wall_s / out['this']['arrow'].runs[i].wall_s);
    expect(pair.wall).toBeCloseTo(((ratios[0] as number) + (ratios[1] as number)) / 2, 6);
  });

  it.skipIf(!existsSync(script))('passes --node-flags to the node running ycgym run (a bad one fails the run), and refuses --against-node-flags alone', () => {
    const bad = spawnSync(process.execPath, [script, '--seeds', '1-1', '--workers', '1', '--repeats', '1', '--formats', 'none', '--node-flags', '--no-such-node-flag-ycgym'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/no-such-node-flag-ycgym/);
    const alone = spawnSync(process.execPath, [script, '--formats', 'none', '--against-node-flags', '--max-inlined-bytecode-size=230'], { encoding: 'utf8' });
    expect(alone.status).not.toBe(0);
    expect(alone.stderr).toMatch(/--against-node-flags needs --against/);
  });

  it.skipIf(!existsSync(script) || process.platform === 'win32')('runs the other side on the node executable --against-node names, and refuses one that is not node or that comes without --against', () => {
    withNodeWrapper((node) => {
      const r = spawnSync(process.execPath, [script, '--seeds', '1-2', '--workers', '1', '--repeats', '1', '--formats', 'arrow', '--against', dist, '--against-node', node.path], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, any>;
      expect(out['node_versions']).toEqual({ this: process.version, other: process.version });
      expect(out['identical_files']).toEqual({ arrow: true });
      // The wrapper ran `--version` and the other side's one `ycgym run`; this side's run did not go through it.
      const runs = node.runs();
      expect(runs[0]).toBe('--version');
      expect(runs.slice(1).map((l) => l.includes(' run --policy greedy --seeds 1-2 '))).toEqual([true]);
      const bad = spawnSync(process.execPath, [script, '--seeds', '1-1', '--formats', 'none', '--against', dist, '--against-node', node.missing], { encoding: 'utf8' });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/no-such-node: not a node executable/);
      const badThis = spawnSync(process.execPath, [script, '--seeds', '1-1', '--formats', 'none', '--node', node.missing], { encoding: 'utf8' });
      expect(badThis.status).not.toBe(0);
      expect(badThis.stderr).toMatch(/no-such-node: not a node executable/);
      const alone = spawnSync(process.execPath, [script, '--formats', 'none', '--against-node', node.path], { encoding: 'utf8' });
      expect(alone.status).not.toBe(0);
      expect(alone.stderr).toMatch(/--against-node needs --against/);
    });
  });

  it.skipIf(!existsSync(script))('refuses an unknown format and a build without the CLI', () => {
    const bad = spawnSync(process.execPath, [script, '--formats', 'csv'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown format csv/);
    const nowhere = spawnSync(process.execPath, [script, '--against', '/nonexistent/dist'], { encoding: 'utf8' });
    expect(nowhere.status).not.toBe(0);
    expect(nowhere.stderr).toMatch(/no src\/cli\/main.js there/);
  });
});
