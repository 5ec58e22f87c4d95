/**
 * Start-up costs (issue 14): median over repeats, in fresh processes, of
 * - `worker_start_cpu_ms`: CPU time of a `ycgym run` worker thread's start (its modules: baselines, the run job, the row
 *   builder, and the first `loadPreset('default')`);
 * - `serve_ready_ms`: wall time from spawning `ycgym serve --endpoint tcp://127.0.0.1:0` to its "listening" line;
 * - `run_start_ms`, `run_start_cpu_ms`: wall and CPU time (user + system, every thread; null off Linux) of
 *   `ycgym run --policy greedy --seeds 1-2 --workers 2 --max-steps 1` (two episodes of one step each, Arrow files with
 *   zstd, the default): what a bulk run costs before and around its episodes (the CLI's modules, the worker threads'
 *   start, the files), the part of a 1000-episode run that does not shrink with faster episodes.
 *
 * Usage: `npm run build && node dist/bench/startup.js [--repeats 7] [--against OTHER/dist]` (the other build is
 * measured alternately in the same run; prints JSON with both and their ratios).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenCpuS, median, medianPairRatio } from './harness.js';


/** CPU ms of loading what an export worker loads, in a fresh process of the build at `dist`. */
function workerStartCpuMs(dist: string): number {
  const url = (p: string): string => JSON.stringify(`file://${join(dist, p)}`);
  const code = `const c0 = process.cpuUsage();
await import(${url('baselines/index.js')}); await import(${url('src/export/jobs.js')});
const m = await import(${url('src/config/load.js')}); m.loadPreset('default');
const c = process.cpuUsage(c0); process.stdout.write(String((c.user + c.system) / 1000));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' }));
}

/** Wall ms from spawning `ycgym serve` of the build at `dist` to its listening line. */
function serveReadyMs(dist: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, [join(dist, 'src', 'cli', 'main.js'), 'serve', '--endpoint', 'tcp://127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      if (out.includes('listening')) {
        const ms = performance.now() - t0;
        p.kill('SIGTERM');
        p.on('exit', () => resolve(ms));
      }
    });
    p.on('error', reject);
  });
}

/** Wall and CPU ms (CPU: NaN off Linux) of a two-episode, one-step bulk run of the build at `dist`. */
function runStartMs(dist: string): { wall: number; cpu: number } {
  const out = mkdtempSync(join(tmpdir(), 'ycgym-start-'));
  try {
    const c0 = childrenCpuS();
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [join(dist, 'src', 'cli', 'main.js'), 'run', '--policy', 'greedy', '--seeds', '1-2', '--workers', '2', '--max-steps', '1', '--no-progress', '--out', out], { stdio: 'ignore' });
    const wall = performance.now() - t0;
    const c1 = childrenCpuS();
    if (r.status !== 0) throw new Error(`ycgym run of ${dist} exited with ${r.status ?? r.signal}`);
    return { wall, cpu: c0 === null || c1 === null ? NaN : (c1 - c0) * 1000 };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

interface Samples {
  worker: number[];
  serve: number[];
  run: number[];
  runCpu: number[];
}

async function measure(dist: string, into: Samples): Promise<void> {
  into.worker.push(workerStartCpuMs(dist));
  into.serve.push(await serveReadyMs(dist));
  const r = runStartMs(dist);
  into.run.push(r.wall);
  into.runCpu.push(r.cpu);
}

const cpuMedian = (xs: readonly number[]): number | null => (xs.some((x) => Number.isNaN(x)) ? null : median(xs));

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string, dflt: string): string => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : dflt;
  };
  const repeats = Number(arg('--repeats', '7'));
  const here = fileURLToPath(new URL('..', import.meta.url));
  const other = arg('--against', '');
  const mine: Samples = { worker: [], serve: [], run: [], runCpu: [] };
  const theirs: Samples = { worker: [], serve: [], run: [], runCpu: [] };
  for (let r = 0; r < repeats; r++) {
    // Each build goes first every other repeat.
    const order: [string, Samples][] = other === '' ? [[here, mine]] : r % 2 === 0 ? [[here, mine], [other, theirs]] : [[other, theirs], [here, mine]];
    for (const [dist, into] of order) await measure(dist, into);
  }
  const out: Record<string, unknown> = {
    repeats,
    worker_start_cpu_ms: median(mine.worker),
    serve_ready_ms: median(mine.serve),
    run_start_ms: median(mine.run),
    run_start_cpu_ms: cpuMedian(mine.runCpu),
  };
  if (other !== '') {
    out['other'] = other;
    out['other_worker_start_cpu_ms'] = median(theirs.worker);
    out['other_serve_ready_ms'] = median(theirs.serve);
    out['ratio_worker_start_other_vs_this'] = median(theirs.worker) / median(mine.worker);
    out['ratio_serve_ready_other_vs_this'] = median(theirs.serve) / median(mine.serve);
    out['other_run_start_ms'] = median(theirs.run);
    out['other_run_start_cpu_ms'] = cpuMedian(theirs.runCpu);
    out['ratio_run_start_other_vs_this'] = median(theirs.run) / median(mine.run);
    // The median of the per-repeat ratios too: the two builds' runs of one repeat meet the same load.
    out['median_pair_ratio_run_start'] = medianPairRatio(theirs.run, mine.run);
  }
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

await main();
