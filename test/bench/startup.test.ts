/**
 * bench/startup.ts once, against the same build: the JSON it prints (never the timings themselves), the new bulk-run
 * start figures among them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const script = join(dist, 'bench', 'startup.js');

describe('bench/startup', () => {
  it.skipIf(!existsSync(script))("prints each start figure of this build and the other's, and their ratios", () => {
    const r = spawnSync(process.execPath, [script, '--repeats', '1', '--against', dist], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, number | string | null>;
    expect(out['repeats']).toBe(1);
    expect(out['other']).toBe(dist);
    for (const k of ['worker_start_cpu_ms', 'serve_ready_ms', 'run_start_ms', 'other_worker_start_cpu_ms', 'other_serve_ready_ms', 'other_run_start_ms']) {
      expect(out[k], k).toBeGreaterThan(0);
    }
    // A run of two episodes in two worker threads: its CPU (every thread, Linux) is at least what one worker's start costs.
    for (const k of ['run_start_cpu_ms', 'other_run_start_cpu_ms']) {
      if (process.platform === 'linux') expect(out[k], k).toBeGreaterThan(out['worker_start_cpu_ms'] as number);
      else expect(out[k], k).toBeNull();
    }
    for (const k of ['ratio_worker_start_other_vs_this', 'ratio_serve_ready_other_vs_this', 'ratio_run_start_other_vs_this', 'median_pair_ratio_run_start']) {
      expect(out[k], k).toBeGreaterThan(0);
    }
  }, 150_000);
});
