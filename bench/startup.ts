/**
 * Start-up costs (issue 14): median over repeats, in fresh processes, of
 * - `worker_start_cpu_ms`: CPU time of a `ycgym run` worker thread's start (its modules: baselines, the run job, the row
 *   builder, and the first `loadPreset('default')`);
 * - `serve_ready_ms`: wall time from spawning `ycgym serve --endpoint tcp://127.0.0.1:0` to its "listening" line.
 *
 * Usage: `npm run build && node dist/bench/startup.js [--repeats 7] [--against OTHER/dist]` (the other build is
 * measured alternately in the same run; prints JSON with both and their ratios).
 */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './harness.js';


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

async function measure(dist: string, into: { worker: number[]; serve: number[] }): Promise<void> {
  into.worker.push(workerStartCpuMs(dist));
  into.serve.push(await serveReadyMs(dist));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string, dflt: string): string => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : dflt;
  };
  const repeats = Number(arg('--repeats', '7'));
  const here = fileURLToPath(new URL('..', import.meta.url));
  const other = arg('--against', '');
  const mine = { worker: [] as number[], serve: [] as number[] };
  const theirs = { worker: [] as number[], serve: [] as number[] };
  for (let r = 0; r < repeats; r++) {
    await measure(here, mine);
    if (other !== '') await measure(other, theirs);
  }
  const out: Record<string, unknown> = { repeats, worker_start_cpu_ms: median(mine.worker), serve_ready_ms: median(mine.serve) };
  if (other !== '') {
    out['other'] = other;
    out['other_worker_start_cpu_ms'] = median(theirs.worker);
    out['other_serve_ready_ms'] = median(theirs.serve);
    out['ratio_worker_start_other_vs_this'] = median(theirs.worker) / median(mine.worker);
    out['ratio_serve_ready_other_vs_this'] = median(theirs.serve) / median(mine.serve);
  }
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

await main();
