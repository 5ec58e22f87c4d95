#!/usr/bin/env node
/**
 * The `ycgym` command: world generation, golden parity replay, baseline runs and (later) the server.
 * `ycgym world` and `ycgym parity` are used by external checks: keep their interfaces stable.
 */
import { Command } from 'commander';
import { loadPreset } from '../config/load.js';
import { type ExperimentConfig, pyJsonDumps } from '../sim/index.js';
import { replayFiles } from './parity.js';
import { worldJson } from './world-json.js';
import { registerPlay } from './play.js';
import { addPresetOption } from './preset-option.js';
import { registerPresets } from './presets.js';
import { registerSplits } from './splits.js';
import { intOption, MAX_WORKERS, parseSeedList, seedArg } from './args.js';
import { registerReport, registerRun, registerShard, startRunWorkers } from './run-commands.js';
import { registerServe } from './serve.js';


function fail(msg: string): never {
  process.stderr.write(`ycgym: ${msg}\n`);
  process.exit(2);
}

function preset(name: string): ExperimentConfig {
  try {
    return loadPreset(name);
  } catch (e) {
    fail((e as Error).message);
  }
}


process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

const program = new Command();
program.name('ycgym').description('YC-Bench as a fast, exact, Gym-style environment').version('0.1.0');

addPresetOption(
  program
    .command('world')
    .description('print the generated world (golden-file format) for a run seed')
    .option('--seed <n>', 'run seed (a safe integer)', seedArg)
    .option('--seeds <list>', 'several seeds (e.g. 1-5): prints a JSON array like the golden files', parseSeedList),
  'preset name or TOML path',
  'default',
).action((o: { seed?: number; seeds?: number[]; preset: string }) => {
    if (o.seed === undefined && o.seeds === undefined) fail('world: --seed N (or --seeds LIST) is required');
    const cfg = preset(o.preset);
    const value = o.seeds ? o.seeds.map((s) => worldJson(s, cfg.world)) : worldJson(o.seed as number, cfg.world);
    process.stdout.write(pyJsonDumps(value, 2) + '\n');
  });

addPresetOption(
  program
    .command('parity')
    .description('replay golden trajectory files and print a one-line JSON summary; exit 0 only with zero mismatches')
    .argument('<files...>', 'golden trajectory files (.json or .json.gz)'),
  'override the preset named in each file',
).action((files: string[], o: { preset?: string }) => {
    const cache = new Map<string, ExperimentConfig>();
    const presetFor = (name: string): ExperimentConfig => {
      const key = o.preset ?? name;
      let c = cache.get(key);
      if (!c) {
        c = preset(key);
        cache.set(key, c);
      }
      return c;
    };
    let summary;
    try {
      summary = replayFiles(files, presetFor);
    } catch (e) {
      fail((e as Error).message);
    }
    process.stdout.write(JSON.stringify(summary) + '\n');
    process.exit(summary.mismatches === 0 ? 0 : 1);
  });

addPresetOption(
  program
    .command('main')
    .description("the README's main job: greedy and expert on the default preset over seeds 1-5; prints the summary table, writes Arrow trajectories and a report")
    .option('--seeds <list>', 'seeds', parseSeedList, [1, 2, 3, 4, 5]),
  'preset name or TOML path',
  'default',
)
  .option('--out <dir>', 'output directory', 'runs/main')
  .option('--workers <n>', `worker threads (1-${MAX_WORKERS})`, intOption(1, MAX_WORKERS, '--workers'), 2)
  .action(async (o: { seeds: number[]; preset: string; out: string; workers: number }) => {
    const spec = { policies: ['greedy', 'expert'], seeds: o.seeds, preset: o.preset };
    startRunWorkers(spec, o.workers);
    const [{ runBulk, summaryTable }, { writeReport }] = await Promise.all([import('./run.js'), import('./report.js')]);
    const r = await runBulk({ ...spec, workers: o.workers, out: o.out, progress: true });
    process.stdout.write(`${summaryTable(r.summary)}\n\n`);
    const reportFiles = await writeReport(o.out);
    const files = [r.files.trajectories, r.files.episodes, r.files.summary, ...reportFiles].filter((f): f is string => f !== null);
    process.stdout.write(`${r.episodes.length} episodes in ${r.seconds.toFixed(1)} s; wrote ${files.join(', ')}\n`);
  });

registerServe(program);
registerRun(program);
registerShard(program);
registerReport(program);
registerPlay(program);
registerPresets(program);
registerSplits(program);

program.parseAsync(process.argv).catch((e: unknown) => fail((e as Error).message));
