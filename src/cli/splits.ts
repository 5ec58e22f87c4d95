/**
 * `ycgym splits` and the `--split NAME [--count N] [--offset K]` options of `ycgym run` (and `ycgym shard`).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { integerIn, MAX_SEED_LIST } from './args.js';
import { isSplitName, SPLIT_NAMES, SPLIT_PURPOSE, SPLITS, splitSeeds, splitSize, type SplitName } from '../config/splits.js';

function splitArg(v: string): SplitName {
  if (!isSplitName(v)) throw new InvalidArgumentError(`unknown split ${v} (available: ${SPLIT_NAMES.join(', ')})`);
  return v;
}

function countArg(v: string): number {
  return integerIn(v, 1, MAX_SEED_LIST, '--count');
}

function offsetArg(v: string): number {
  return integerIn(v, 0, Number.MAX_SAFE_INTEGER, '--offset');
}

/** Splits small enough to run whole when `--count` is not given. */
const WHOLE_SPLIT_LIMIT = 1000;

/**
 * Add `--split`, `--count` and `--offset` to a command that has `--seeds`: `--split NAME` replaces the seeds by
 * the split's first `--count` seeds (after skipping `--offset`). Without `--count` a split of at most 1000 seeds
 * runs whole; `train` needs a count.
 */
export function addSplitOptions(cmd: Command): Command {
  cmd
    .addOption(new Option('--split <name>', `run the seeds of a split (${SPLIT_NAMES.join(', ')}; see ycgym splits) instead of --seeds`).argParser(splitArg).conflicts('seeds'))
    .addOption(new Option('--count <n>', 'with --split: how many of its seeds (default: all of test or validation)').argParser(countArg))
    .addOption(new Option('--offset <k>', "with --split: skip the split's first K seeds").argParser(offsetArg));
  cmd.hook('preAction', (_cmd, action) => {
    const split = action.getOptionValue('split') as SplitName | undefined;
    const count = action.getOptionValue('count') as number | undefined;
    const offset = (action.getOptionValue('offset') as number | undefined) ?? 0;
    if (split === undefined) {
      if (count !== undefined || action.getOptionValue('offset') !== undefined) action.error('error: --count and --offset go with --split');
      return;
    }
    const size = splitSize(split);
    if (count === undefined && size > WHOLE_SPLIT_LIMIT) action.error(`error: split ${split} has ${size} seeds: give --count N`);
    let seeds: number[] = [];
    try {
      seeds = splitSeeds(split, count ?? size - offset, offset);
    } catch (e) {
      action.error(`error: ${(e as Error).message}`);
    }
    action.setOptionValueWithSource('seeds', seeds, 'cli');
  });
  return cmd;
}

/** The splits as a Markdown table. */
export function splitTable(): string {
  const rows = ['| split | seeds | count | use |', '| --- | --- | ---: | --- |'];
  for (const name of SPLIT_NAMES) {
    const r = SPLITS[name];
    rows.push(`| ${name} | ${r.first}-${r.last} | ${splitSize(name)} | ${SPLIT_PURPOSE[name]} |`);
  }
  return rows.join('\n');
}

/** Register `ycgym splits [--json]`. */
export function registerSplits(program: Command): void {
  program
    .command('splits')
    .description('the train / validation / test seed ranges (inclusive); use them with run --split, the LLM runner and the Python env')
    .option('--json', 'one JSON object {name: {first, last}}')
    .action((o: { json?: boolean }) => {
      process.stdout.write(o.json === true ? `${JSON.stringify(SPLITS)}\n` : `${splitTable()}\n`);
    });
}
