/**
 * The benchmark harness of `npm run bench` (bench/run.ts): suites measured `repeats` times, every figure summarised
 * over the repeats (median, p10, p90, the samples), and each ratio taken inside one repeat (a benchmark over its
 * baseline, both measured back to back in the same run) before it is summarised, so a loaded machine slows both
 * sides of a ratio alike. The machine (CPU model, cores, Node version, load average before and after) is recorded
 * with the results.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { arch, cpus, loadavg, platform, totalmem } from 'node:os';

/** Workload sizes: `full` (`npm run bench`), `quick` (`--quick`), `tiny` (tests: shape, not timings). */
export type Size = 'full' | 'quick' | 'tiny';

/** One benchmark of a suite. */
export interface MetricSpec {
  unit: string;
  better: 'higher' | 'lower';
  /** Other benchmarks of the same suite, measured in the same repeat: `ratios[b]` is this one's value over b's. */
  baselines?: readonly string[];
  doc?: string;
}

/** One repeat of a suite: a value per benchmark it measured. */
export type Sample = Record<string, number>;

/** A benchmark suite. */
export interface Suite<C = unknown> {
  name: string;
  /** Its benchmarks (the keys a repeat returns), in report order. */
  metrics: Record<string, MetricSpec>;
  /** Why it cannot run here (e.g. a setting is missing), or null. */
  skip?(): string | null;
  /** Untimed preparation (warm-up, inputs) once before the repeats; the result goes to every repeat. */
  setup?(size: Size): C | Promise<C>;
  /** One repeat. */
  run(ctx: C, size: Size, repeat: number): Sample | Promise<Sample>;
  teardown?(ctx: C): void | Promise<void>;
  /** The workload of a size (episodes, steps, ...), recorded with the results. */
  params?(size: Size): Record<string, unknown>;
  /** At most this many repeats (slow suites); default: all. */
  maxRepeats?(size: Size): number;
}

/** Median, 10th and 90th percentiles (linear interpolation between order statistics) and the samples. */
export interface Summary {
  median: number;
  p10: number;
  p90: number;
  samples: number[];
}

/** One benchmark's results. */
export interface BenchmarkResult extends Summary {
  unit: string;
  better: 'higher' | 'lower';
  doc?: string;
  /** Per baseline: this benchmark's value over the baseline's in the same repeat, summarised over the repeats. */
  ratios?: Record<string, Summary>;
}

/** One suite's results, or why it was skipped. */
export type SuiteResult =
  | { skipped: string }
  | { failed: string }
  | { params: Record<string, unknown>; repeats: number; seconds: number; benchmarks: Record<string, BenchmarkResult> };

/** The machine a run was measured on. */
export interface MachineInfo {
  cpu_model: string;
  cores: number;
  node: string;
  platform: string;
  arch: string;
  memory_gib: number;
  /** 1, 5 and 15 minute load averages when the run started and when it ended. */
  load_average_start: number[];
  load_average_end: number[];
}

/** The whole of `bench/results.json`. */
export interface BenchResults {
  format: 'ycgym-bench';
  version: 1;
  machine: MachineInfo;
  run: { size: Size; repeats: number; started_at: string; seconds: number; argv: string[] };
  suites: Record<string, SuiteResult>;
}

/** The `q` quantile (0-1) of a sample, interpolated linearly between order statistics (NumPy's default). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (pos - lo);
}

/** The median of a sample (the 0.5 quantile: the mean of the two middle values of an even count). */
export function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}

/**
 * The median of the per-round ratios `num[i] / den[i]` (two samples taken in the same rounds, so that each ratio's two
 * sides met the same load on the machine): steadier on a machine whose speed drifts than the ratio of the medians.
 */
export function medianPairRatio(num: readonly number[], den: readonly number[]): number {
  if (num.length !== den.length || num.length === 0) throw new Error(`medianPairRatio: ${num.length} and ${den.length} samples (one per round each)`);
  return median(num.map((x, i) => x / (den[i] as number)));
}

/**
 * `rounds` rounds of `here()` and, when given, `other()` (another build measured in the same process, so load on the
 * machine hits both alike), each first in every other round (neither always runs on the other's garbage), then
 * `after()` (outside the timings): the medians, and `speedup`, the median of the per-round ratios other/here.
 */
export function pairedRounds(rounds: number, here: () => number, other: (() => number) | null, after?: () => void): { here: number; other: number | null; speedup: number | null } {
  const a: number[] = [];
  const b: number[] = [];
  for (let k = 0; k < rounds; k++) {
    if (other !== null && k % 2 === 1) {
      b.push(other());
      a.push(here());
    } else {
      a.push(here());
      if (other) b.push(other());
    }
    after?.();
  }
  return { here: median(a), other: other ? median(b) : null, speedup: other ? medianPairRatio(b, a) : null };
}

/** The value after `--name` in `argv`, or null. */
export function flagValue(argv: readonly string[], name: string): string | null {
  const i = argv.indexOf(name);
  return i >= 0 ? (argv[i + 1] ?? null) : null;
}

/** Median, p10 and p90 of a sample. */
export function summarize(xs: readonly number[]): Summary {
  return { median: quantile(xs, 0.5), p10: quantile(xs, 0.1), p90: quantile(xs, 0.9), samples: [...xs] };
}

const loadAverage = (): number[] => loadavg().map((v) => Math.round(v * 100) / 100);

/** CPU model, cores, Node version and the load average now. */
export function machineInfo(): MachineInfo {
  const la = loadAverage();
  return {
    cpu_model: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    node: process.version,
    platform: platform(),
    arch: arch(),
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    load_average_start: la,
    load_average_end: la,
  };
}

/** Options of `runSuites`. */
export interface RunOptions {
  size: Size;
  repeats: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  argv?: string[];
}

/** Run every suite `repeats` times and summarise; a suite that throws is recorded as failed and the others still run. */
export async function runSuites(suites: readonly Suite[], opts: RunOptions): Promise<BenchResults> {
  if (!Number.isSafeInteger(opts.repeats) || opts.repeats < 1) throw new RangeError(`repeats must be a positive integer, got ${opts.repeats}`);
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  const machine = machineInfo();
  const out: BenchResults = {
    format: 'ycgym-bench',
    version: 1,
    machine,
    run: { size: opts.size, repeats: opts.repeats, started_at: new Date(started).toISOString(), seconds: 0, argv: opts.argv ?? [] },
    suites: {},
  };
  for (const suite of suites) {
    const why = suite.skip?.() ?? null;
    if (why !== null) {
      out.suites[suite.name] = { skipped: why };
      log(`${suite.name}: skipped (${why})`);
      continue;
    }
    const t0 = performance.now();
    const samples: Sample[] = [];
    const repeats = Math.max(1, Math.min(opts.repeats, suite.maxRepeats?.(opts.size) ?? opts.repeats));
    try {
      const ctx = await suite.setup?.(opts.size);
      try {
        for (let r = 0; r < repeats; r++) {
          samples.push(await suite.run(ctx, opts.size, r));
          log(`${suite.name}: repeat ${r + 1}/${repeats} done`);
        }
      } finally {
        await suite.teardown?.(ctx);
      }
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      out.suites[suite.name] = { failed: msg };
      log(`${suite.name}: failed: ${msg}`);
      continue;
    }
    const benchmarks: Record<string, BenchmarkResult> = {};
    for (const [name, spec] of Object.entries(suite.metrics)) {
      const xs = samples.map((s) => s[name]).filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
      if (xs.length === 0) continue;
      const b: BenchmarkResult = { unit: spec.unit, better: spec.better, ...(spec.doc ? { doc: spec.doc } : {}), ...summarize(xs) };
      for (const base of spec.baselines ?? []) {
        const ratios = samples.map((s) => (s[name] as number) / (s[base] as number)).filter((x) => Number.isFinite(x));
        if (ratios.length > 0) (b.ratios ??= {})[base] = summarize(ratios);
      }
      benchmarks[name] = b;
    }
    out.suites[suite.name] = { params: suite.params?.(opts.size) ?? {}, repeats, seconds: (performance.now() - t0) / 1000, benchmarks };
  }
  out.machine.load_average_end = loadAverage();
  out.run.seconds = (Date.now() - started) / 1000;
  return out;
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toPrecision(3);
}

/** The results as a Markdown table (median, p10-p90, and the ratio to the baseline where there is one). */
export function markdown(r: BenchResults): string {
  const m = r.machine;
  const lines = [
    `${m.cpu_model}, ${m.cores} cores, Node ${m.node}; load average ${m.load_average_start.join(' / ')} at the start, ${m.load_average_end.join(' / ')} at the end; ${r.run.size} size, ${r.run.repeats} repeat${r.run.repeats === 1 ? '' : 's'}, ${r.run.seconds.toFixed(0)} s`,
    '',
    '| suite | benchmark | median | p10-p90 | unit | ratios in the same run (median, p10-p90) |',
    '| --- | --- | ---: | ---: | --- | --- |',
  ];
  for (const [name, s] of Object.entries(r.suites)) {
    if ('skipped' in s || 'failed' in s) {
      lines.push(`| ${name} | ${'skipped' in s ? `skipped: ${s.skipped}` : `FAILED: ${s.failed}`} | | | | |`);
      continue;
    }
    for (const [b, x] of Object.entries(s.benchmarks)) {
      const ratio = Object.entries(x.ratios ?? {})
        .map(([base, r]) => `${fmt(r.median)} (${fmt(r.p10)}-${fmt(r.p90)}) × \`${base}\``)
        .join('; ');
      lines.push(`| ${name} | ${b} | ${fmt(x.median)} | ${fmt(x.p10)}-${fmt(x.p90)} | ${x.unit} | ${ratio} |`);
    }
  }
  return lines.join('\n');
}

let ticks: number | null = null;

/**
 * `node --version` of the node executable at `node` (a bench's `--node` / `--against-node`); throws, naming the path,
 * when it does not run as node.
 */
export function nodeVersion(node: string): string {
  const r = spawnSync(node, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0 || r.error !== undefined) throw new Error(`${node}: not a node executable (${r.error?.message ?? r.stderr.trim()})`);
  return r.stdout.trim();
}

/** Clock ticks per second of the CPU times in /proc (`getconf CLK_TCK`; 100 when it says nothing). */
export function clockTicks(): number {
  ticks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  return ticks;
}

/** CPU seconds (user + system) of this process's waited-for children so far, or null off Linux. */
export function childrenCpuS(): number | null {
  try {
    // Fields after the command name (which may hold spaces) start at field 3; cutime and cstime are fields 16 and 17.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[13]) + Number(f[14])) / clockTicks();
  } catch {
    return null;
  }
}
