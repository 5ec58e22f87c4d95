/**
 * `ycgym run`, `ycgym shard` and `ycgym report` on the command line: their options and actions, registered without
 * loading what they run (./run.ts, ./shard.ts, ./report.ts and with them Arrow, Parquet and the worker pool are
 * imported when one of these commands runs), so that every other command, `ycgym serve` first (each Python process's
 * local server), starts without them.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { POLICY_NAMES } from '../../baselines/index.js';
import { ARROW_COMPRESSIONS, TABLE_FORMATS, type ArrowCompression, type TableFormat } from '../export/compression.js';
import { discardStaged } from '../export/dirs.js';
import { intOption, MAX_WORKERS, parseSeedList } from './args.js';
import { addPresetOption } from './preset-option.js';
import { bodyMode, defaultWorkers, poolSize, startWorkers } from './prestart.js';
import type { RunSpec } from './run.js';
import { addSplitOptions } from './splits.js';

function policyList(v: string): string[] {
  const names = v.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  for (const n of names) if (!POLICY_NAMES.includes(n)) throw new InvalidArgumentError(`unknown policy ${n} (available: ${POLICY_NAMES.join(', ')})`);
  if (names.length === 0) throw new InvalidArgumentError('no policy given');
  return [...new Set(names)];
}

/** Parsed values of the options `addRunOptions` registers. */
export interface RunSpecFlags {
  policy: string[];
  seeds: number[];
  preset: string;
  maxSteps?: number;
  trajectories: boolean;
  rollouts?: boolean;
  runId?: string;
  format?: TableFormat;
  compression?: ArrowCompression;
}

/** Register the options that decide a run's output (shared by `ycgym run` and `ycgym shard`, so both accept the same flags). */
export function addRunOptions(cmd: Command): Command {
  cmd
    .requiredOption('--policy <list>', `comma-separated policies (${POLICY_NAMES.join(', ')})`, policyList)
    .option('--seeds <list>', 'seeds, e.g. 1-100 or 1,5,9', parseSeedList, [1]);
  addSplitOptions(cmd);
  return addPresetOption(cmd, 'preset name or TOML path', 'default')
    .option('--max-steps <n>', 'truncate each episode after this many actions', intOption(1, Number.MAX_SAFE_INTEGER, '--max-steps'))
    .addOption(new Option('--no-trajectories', 'skip DIR/trajectories.FORMAT (episodes and summary only)'))
    .addOption(new Option('--format <format>', 'table files: Arrow IPC (DIR/*.arrow) or zstd-compressed Parquet (DIR/*.parquet)').choices([...TABLE_FORMATS]).default('arrow'))
    .addOption(new Option('--compression <codec>', 'Arrow IPC body compression: zstd (each buffer, as the Arrow format defines it) or none (Parquet is always zstd)').choices([...ARROW_COMPRESSIONS]).default('zstd'))
    .option('--rollouts', "also write the reference's rollout JSON per episode to DIR/rollouts/")
    .option('--run-id <id>', 'run identifier stored in every row (default: derived from the parameters)');
}

/** The run spec of parsed `addRunOptions` flags. */
export function runSpecFrom(o: RunSpecFlags): RunSpec {
  const spec: RunSpec = { policies: o.policy, seeds: o.seeds, preset: o.preset, trajectories: o.trajectories, rollouts: o.rollouts === true };
  if (o.maxSteps !== undefined) spec.maxSteps = o.maxSteps;
  if (o.runId !== undefined) spec.runId = o.runId;
  if (o.format !== undefined) spec.format = o.format;
  if (o.compression !== undefined) spec.compression = o.compression;
  return spec;
}

/**
 * On Ctrl-C (SIGINT) or SIGTERM, remove the files of an output still being written (staged beside their place: what
 * is in place stays whole) and exit with the status the signal's default would give (130, 143).
 */
function discardOnSignal(): void {
  for (const [signal, status] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      if (discardStaged() > 0) process.stderr.write(`\nycgym: stopped by ${signal}; its partial files are removed, the files already in the output directory are as they were\n`);
      process.exit(status);
    });
  }
}

/**
 * Start the worker threads a bulk run of `spec` with `workers` will use, before the caller imports ./run.ts (see
 * ./prestart.ts): they load while it does.
 */
export function startRunWorkers(spec: RunSpec, workers: number): void {
  const preload = { preset: spec.preset, zstd: bodyMode(spec.trajectories !== false, spec.format ?? 'arrow', spec.compression ?? 'zstd') === 'zstd' };
  startWorkers(poolSize(workers, spec.policies.length * spec.seeds.length), preload);
}

/** Register `ycgym run` on a commander program. */
export function registerRun(program: Command): void {
  addRunOptions(program.command('run').description('run baseline policies on many seeds in parallel; write Arrow or Parquet trajectories, episodes and a summary'))
    .option('--workers <n>', `worker threads (1 runs in the main thread; at most ${MAX_WORKERS})`, intOption(1, MAX_WORKERS, '--workers'), defaultWorkers())
    .requiredOption('--out <dir>', 'output directory')
    .option('--no-progress', 'no progress bar')
    .action(async (o: RunSpecFlags & { workers: number; out: string; progress: boolean }) => {
      discardOnSignal();
      const spec = runSpecFrom(o);
      startRunWorkers(spec, o.workers);
      const { runBulk, summaryTable } = await import('./run.js');
      const r = await runBulk({ ...spec, workers: o.workers, out: o.out, progress: o.progress });
      process.stdout.write(`${summaryTable(r.summary)}\n\n`);
      const files = [r.files.trajectories, r.files.episodes, r.files.summary].filter((f): f is string => f !== null);
      process.stdout.write(`${r.episodes.length} episodes in ${r.seconds.toFixed(1)} s; wrote ${files.join(', ')}\n`);
    });
}


/** Register `ycgym shard plan|worker|merge` on a commander program. */
export function registerShard(program: Command): void {
  const shard = program.command('shard').description('a bulk run cut into shards that run elsewhere (used by python -m ycgym.ray) and merged back into `ycgym run` output');
  addRunOptions(shard.command('plan').description("print the run's plan as one JSON line: run_id, preset, policies, jobs")).action(async (o: RunSpecFlags) => {
    const [{ planInfo }, { planRun }] = await Promise.all([import('./shard.js'), import('./run.js')]);
    process.stdout.write(JSON.stringify(planInfo(planRun(runSpecFrom(o)))) + '\n');
  });
  addRunOptions(shard.command('worker').description('play job ranges read as JSON lines on stdin ({"start","end","out"}); one JSON reply line each')).action(async (o: RunSpecFlags) => {
    discardOnSignal();
    const [{ planInfo, serveShardRequests }, { planRun }, { createInterface }] = await Promise.all([import('./shard.js'), import('./run.js'), import('node:readline')]);
    const p = planRun(runSpecFrom(o));
    process.stdout.write(JSON.stringify({ event: 'ready', ...planInfo(p) }) + '\n');
    const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
    await serveShardRequests(p, rl, (line) => process.stdout.write(line + '\n'));
  });
  addRunOptions(shard.command('merge').description('check and merge the shards under --from into --out: the files and summary.json of `ycgym run`'))
    .requiredOption('--from <dir>', 'directory whose subdirectories are shard outputs')
    .requiredOption('--out <dir>', 'output directory')
    .action(async (o: RunSpecFlags & { from: string; out: string }) => {
      discardOnSignal();
      const [{ mergeShards }, { planRun, summaryTable }] = await Promise.all([import('./shard.js'), import('./run.js')]);
      const r = await mergeShards(planRun(runSpecFrom(o)), o.from, o.out);
      process.stdout.write(`${summaryTable(r.summary)}\n\n`);
      process.stdout.write(`${r.episodes.length} episodes; wrote ${r.files.join(', ')}\n`);
    });
}

/** Register `ycgym report` on a commander program. */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description('write DIR/report.md and SVG plots from the Arrow or Parquet files of `ycgym run --out DIR`')
    .argument('<dir>', 'output directory of `ycgym run`')
    .action(async (dir: string) => {
      const { writeReport } = await import('./report.js');
      const files = await writeReport(dir);
      process.stdout.write(`wrote ${files.join(', ')}\n`);
    });
}
