#!/usr/bin/env node
/**
 * The `ycgym` command: world generation, golden parity replay, baseline runs and (later) the server.
 * `ycgym world` and `ycgym parity` are used by external checks: keep their interfaces stable.
 */
import { Command, InvalidArgumentError } from 'commander';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { loadPreset } from '../config/load.js';
import type { ExperimentConfig } from '../config/types.js';
import { runEpisode } from '../episode.js';
import { replayFiles } from '../parity.js';
import { pyJsonDumps } from '../sim/pyjson.js';
import { worldJson } from '../world-json.js';
import { registerServe } from './serve.js';

function parseIntArg(v: string): number {
  if (!/^-?\d+$/.test(v)) throw new InvalidArgumentError(`not an integer: ${v}`);
  return Number(v);
}

/** Parse `1-5`, `1,3,7` or `2` into a list of seeds. */
export function parseSeeds(v: string): number[] {
  const out: number[] = [];
  for (const part of v.split(',')) {
    const m = /^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$/.exec(part);
    if (!m) throw new InvalidArgumentError(`bad seed list: ${v}`);
    const a = Number(m[1]);
    const b = m[2] !== undefined ? Number(m[2]) : a;
    if (b < a) throw new InvalidArgumentError(`bad seed range: ${part}`);
    for (let s = a; s <= b; s++) out.push(s);
  }
  return out;
}

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

function dollars(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const d = Math.floor(abs / 100).toLocaleString('en-US');
  return `${sign}$${d}.${String(abs % 100).padStart(2, '0')}`;
}

process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

const program = new Command();
program.name('ycgym').description('YC-Bench as a fast, exact, Gym-style environment').version('0.1.0');

program
  .command('world')
  .description('print the generated world (golden-file format) for a run seed')
  .option('--seed <n>', 'run seed', parseIntArg)
  .option('--seeds <list>', 'several seeds (e.g. 1-5): prints a JSON array like the golden files', parseSeeds)
  .option('--preset <name|path>', 'preset name or TOML path', 'default')
  .action((o: { seed?: number; seeds?: number[]; preset: string }) => {
    if (o.seed === undefined && o.seeds === undefined) fail('world: --seed N (or --seeds LIST) is required');
    const cfg = preset(o.preset);
    const value = o.seeds ? o.seeds.map((s) => worldJson(s, cfg.world)) : worldJson(o.seed as number, cfg.world);
    process.stdout.write(pyJsonDumps(value, 2) + '\n');
  });

program
  .command('parity')
  .description('replay golden trajectory files and print a one-line JSON summary; exit 0 only with zero mismatches')
  .argument('<files...>', 'golden trajectory files (.json or .json.gz)')
  .option('--preset <name|path>', 'override the preset named in each file')
  .action((files: string[], o: { preset?: string }) => {
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

program
  .command('main')
  .description("the README's main job: the paper's greedy baseline on seeds 1-3 (default preset), final funds")
  .option('--seeds <list>', 'seeds', parseSeeds, [1, 2, 3])
  .option('--preset <name|path>', 'preset', 'default')
  .action((o: { seeds: number[]; preset: string }) => {
    const cfg = preset(o.preset);
    console.log(`greedy baseline, preset ${cfg.name}`);
    console.log('seed  steps  outcome     final funds');
    for (const seed of o.seeds) {
      const r = runEpisode(cfg, seed, new GreedyPolicy());
      const outcome = r.bankrupt ? 'bankrupt' : 'horizon';
      console.log(`${String(seed).padStart(4)}  ${String(r.steps.length).padStart(5)}  ${outcome.padEnd(10)}  ${dollars(r.finalFundsCents).padStart(14)}`);
    }
  });

registerServe(program);

program.parseAsync(process.argv).catch((e: unknown) => fail((e as Error).message));
