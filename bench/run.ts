/**
 * `npm run bench`: every benchmark suite, repeated, summarised (median, p10, p90 over the repeats) with ratios
 * taken in the same run, written to bench/results.json and printed as a Markdown table.
 *
 *   npm run bench                          full size, 5 repeats
 *   npm run bench -- --quick               smaller workloads, 3 repeats
 *   npm run bench -- --repeats 7           repeats of every suite (a slow suite may cap its own)
 *   npm run bench -- --only core,server    some suites (core, episodes, server, export, reference)
 *   npm run bench -- --out FILE            write the results elsewhere
 *   YCB_REF=/path/to/yc-bench npm run bench -- --only reference    a greedy year through the reference's CLI vs ycgym
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { coreSuite } from './core.js';
import { episodeRates } from './episodes.js';
import { exportSuite } from './export.js';
import { markdown, runSuites, type BenchResults, type Size, type Suite } from './harness.js';
import { referenceSuite } from './reference.js';
import { serverSuite } from './server.js';

const EPISODE_SEEDS: Record<Size, number> = { full: 50, quick: 10, tiny: 2 };

/** bench/episodes.ts's greedy episodes per second with and without observation text, one round per repeat. */
const episodesSuite: Suite = {
  name: 'episodes',
  metrics: {
    text_episodes_per_s: { unit: 'episodes/s', better: 'higher', baselines: ['no_text_episodes_per_s'], doc: 'full greedy episodes in process reading every observation text; ratio: over the same without text' },
    text_bytes_episodes_per_s: { unit: 'episodes/s', better: 'higher', baselines: ['text_episodes_per_s'], doc: 'every text appended to a byte buffer as the exporter and the servers take it (no string, no observation)' },
    no_text_episodes_per_s: { unit: 'episodes/s', better: 'higher', doc: 'the same with the reset option text: false' },
    text_fresh_world_episodes_per_s: { unit: 'episodes/s', better: 'higher', baselines: ['text_episodes_per_s'], doc: 'with text, every world generated afresh' },
  },
  params: (size) => ({ seeds: EPISODE_SEEDS[size], preset: 'default' }),
  run: (_ctx, size) => {
    const r = episodeRates(EPISODE_SEEDS[size], 1, ['text', 'text_bytes', 'no_text', 'text_fresh_world']);
    return Object.fromEntries(Object.entries(r).filter((e): e is [string, number] => e[0].endsWith('_episodes_per_s') && typeof e[1] === 'number'));
  },
};

/** Every suite, in run order. */
export const SUITES: readonly Suite[] = [coreSuite as Suite, episodesSuite, serverSuite as Suite, exportSuite as Suite, referenceSuite as Suite];

/** Where `npm run bench` writes its results. */
export const RESULTS_PATH = fileURLToPath(new URL(import.meta.url.endsWith('.js') ? '../../bench/results.json' : './results.json', import.meta.url));

/** Options of `runBench`. */
export interface BenchOptions {
  size?: Size;
  /** Repeats of every suite (default 5; 3 with `quick`). */
  repeats?: number;
  /** Suite names (default: all). */
  only?: readonly string[] | null;
  /** Results file (default bench/results.json; null: none). */
  out?: string | null;
  log?: (line: string) => void;
  argv?: string[];
}

/** Run the suites and write the results file. */
export async function runBench(opts: BenchOptions = {}): Promise<BenchResults> {
  const size = opts.size ?? 'full';
  const repeats = opts.repeats ?? (size === 'full' ? 5 : 3);
  const only = opts.only ?? null;
  const unknown = (only ?? []).filter((n) => !SUITES.some((s) => s.name === n));
  if (unknown.length > 0) throw new Error(`unknown suite(s): ${unknown.join(', ')} (suites: ${SUITES.map((s) => s.name).join(', ')})`);
  const suites = SUITES.filter((s) => only === null || only.includes(s.name));
  const results = await runSuites(suites, { size, repeats, ...(opts.log ? { log: opts.log } : {}), argv: opts.argv ?? [] });
  const out = opts.out === undefined ? RESULTS_PATH : opts.out;
  if (out !== null) writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
  return results;
}

/** Parse the command line (see the module comment). */
export function parseArgs(args: readonly string[]): BenchOptions {
  const o: BenchOptions = { size: 'full' };
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--quick') o.size = 'quick';
    else if (a === '--repeats') {
      const v = value();
      const n = Number(v);
      if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < 1) throw new Error(`--repeats must be a positive integer, got ${v}`);
      o.repeats = n;
    } else if (a === '--only') o.only = value().split(',').filter((s) => s !== '');
    else if (a === '--out') o.out = value();
    else throw new Error(`unknown argument ${a} (--quick, --repeats N, --only a,b, --out FILE)`);
  }
  return o;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let opts: BenchOptions;
  try {
    opts = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  }
  const r = await runBench({ ...opts, argv, log: (l) => process.stderr.write(`${l}\n`) });
  process.stdout.write(`${markdown(r)}\n`);
  const failed = Object.entries(r.suites).filter(([, s]) => 'failed' in s);
  if (failed.length > 0) process.exitCode = 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
