/**
 * The longest observation texts of normal play: the measurement behind the Python envs' `text` bound
 * (`MAX_TEXT_LENGTH` in bindings/python/src/ycgym/spaces.py). Plays baseline episodes and, every 10 steps, also
 * issues the read-only commands whose output grows with the episode; prints the longest text per command as JSON.
 *
 * Usage: `node dist/bench/text-lengths.js [--seeds 1-3]` (after `npm run build`).
 */
import { makePolicy } from '../baselines/index.js';
import { parseSeedList } from '../src/cli/run.js';
import { Env } from '../src/env/env.js';
import { runEpisode } from '../src/env/episode.js';

const PRESETS = ['default', 'multi'];
const POLICIES = ['greedy', 'throughput', 'expert'];
/** Read-only commands (they change nothing but the step count), probed every `PROBE_EVERY` steps. */
const PROBES = ['market browse --limit 200', 'finance ledger', 'task list', 'employee list', 'client history', 'report monthly', 'client list', 'company status'];
const PROBE_EVERY = 10;

/** Longest text (in UTF-16 code units, as JavaScript and Python's `len` count them here: the texts are ASCII) per command. */
export function measure(seeds: readonly number[]): Record<string, number> {
  const longest: Record<string, number> = {};
  const note = (cmd: string, text: string): void => {
    longest[cmd] = Math.max(longest[cmd] ?? 0, text.length);
  };
  for (const preset of PRESETS) {
    for (const name of POLICIES) {
      for (const seed of seeds) {
        const env = new Env();
        // The probes step the same env between the policy's steps (they are read-only: they change nothing the policy sees).
        runEpisode(env, makePolicy(name), { seed, preset }, {
          onStep: ({ step, action, result }) => {
            note(`policy: ${action.split(' ').slice(0, 2).join(' ')}`, result.observation.text);
            if (!(result.terminated || result.truncated) && step % PROBE_EVERY === 0) for (const p of PROBES) note(p, env.step(p).observation.text);
          },
        });
      }
    }
  }
  return Object.fromEntries(Object.entries(longest).sort((a, b) => b[1] - a[1]));
}

const i = process.argv.indexOf('--seeds');
const seeds = parseSeedList(i >= 0 ? (process.argv[i + 1] ?? '') : '1-3');
process.stdout.write(JSON.stringify(measure(seeds), null, 2) + '\n');
