/**
 * Core benchmarks: full greedy episodes in-process and per-command latency (the `core` suite of `npm run bench`,
 * which repeats it and takes medians over the repeats).
 */
import { GreedyPolicy } from '../baselines/greedy.js';
import { loadPreset } from '../src/config/load.js';
import { Env } from '../src/env/env.js';
import { runEpisode } from '../src/env/episode.js';
import { outcome, Simulation, worldsGenerated } from '../src/sim/index.js';
import type { MetricSpec, Sample, Size, Suite } from './harness.js';
import { median } from './harness.js';

/** Median of a sample. */

/** Percentile (0-100) of a sample. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** The first seed of fresh-world rounds; each takes the next unplayed ones. */
let nextFreshSeed = 1_000_000;

/**
 * Greedy episodes (and commands) per second over one round of `seeds.length` episodes, and the worlds it generated.
 * `fresh`: on seeds never played before in this process (each episode generates its world, as in a bulk run) instead of
 * `seeds`; clearing the world cache instead made the next rounds on `seeds` generate theirs again.
 */
export function greedyRound(seeds: readonly number[], fresh: boolean): { episodes_per_s: number; commands_per_s: number; worlds_generated: number } {
  const cfg = loadPreset('default');
  const played = fresh ? seeds.map(() => nextFreshSeed++) : seeds;
  const g0 = worldsGenerated();
  const t0 = nowNs();
  let steps = 0;
  const env = new Env();
  for (const s of played) steps += runEpisode(env, new GreedyPolicy(), { seed: s, preset: cfg }).stepCount;
  const sec = Number(nowNs() - t0) / 1e9;
  return { episodes_per_s: seeds.length / sec, commands_per_s: steps / sec, worlds_generated: worldsGenerated() - g0 };
}

/** Latency keys of `commandLatencies`, with the benchmark names they are reported under. */
export const LATENCY_COMMANDS = {
  'task accept': 'task_accept',
  'task assign': 'task_assign',
  'task dispatch': 'task_dispatch',
  'sim resume': 'sim_resume',
  'market browse (50, value)': 'market_browse_50_value',
  'market browse (50, with text)': 'market_browse_50_text',
} as const;

/** p50/p99 latency (µs) of the accept → assign → dispatch → resume cycle's commands and of `market browse`. */
export function commandLatencies(samples: number): Record<string, { p50: number; p99: number }> {
  const cfg = loadPreset('default');
  const lat: Record<string, number[]> = Object.fromEntries(Object.keys(LATENCY_COMMANDS).map((k) => [k, []]));
  const time = (key: string, f: () => unknown) => {
    const t0 = nowNs();
    f();
    (lat[key] as number[]).push(Number(nowNs() - t0) / 1000);
  };
  for (let s = 1; s <= 20; s++) Simulation.create(cfg, { seed: s }); // warm the world cache and the JIT
  let i = 0;
  while ((lat['sim resume'] as number[]).length < samples) {
    const sim = Simulation.create(cfg, { seed: 1 + (i++ % 20) });
    for (let k = 0; k < 25 && (lat['sim resume'] as number[]).length < samples; k++) {
      if (outcome(sim.state).terminated) break;
      const browse = sim.execute('market browse');
      time('market browse (50, value)', () => sim.execute('market browse'));
      time('market browse (50, with text)', () => sim.execute('market browse').text);
      const id = browse.is('market browse') ? browse.value.tasks[0]?.task_id : undefined;
      if (!id) break;
      time('task accept', () => sim.execute(`task accept --task-id ${id}`));
      time('task assign', () => sim.execute(`task assign --task-id ${id} --employees Emp_1,Emp_2,Emp_3,Emp_4,Emp_5,Emp_6,Emp_7,Emp_8`));
      time('task dispatch', () => sim.execute(`task dispatch --task-id ${id}`));
      let guard = 0;
      while (sim.state.tasks.some((t) => t.status === 'active') && guard++ < 20) time('sim resume', () => sim.execute('sim resume'));
    }
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  for (const [k, v] of Object.entries(lat)) out[k] = { p50: median(v), p99: percentile(v, 99) };
  return out;
}

const SIZES: Record<Size, { seeds: number; samples: number }> = { full: { seeds: 50, samples: 3000 }, quick: { seeds: 10, samples: 300 }, tiny: { seeds: 2, samples: 10 } };
const seedsOf = (size: Size): number[] => Array.from({ length: SIZES[size].seeds }, (_, i) => i + 1);

const latencyMetrics: Record<string, MetricSpec> = {};
for (const name of Object.values(LATENCY_COMMANDS)) {
  for (const q of ['p50', 'p99']) {
    latencyMetrics[`${name}_${q}_us`] = {
      unit: 'µs',
      better: 'lower',
      ...(name === 'market_browse_50_text' ? { baselines: [`market_browse_50_value_${q}_us`], doc: 'market browse (50 tasks) with its exact JSON text; ratio: over the typed value alone' } : {}),
    };
  }
}

/**
 * The core suite: full greedy episodes in process (world cached, and generated afresh; the ratio fresh/cached
 * in the same repeat) and per-command latencies (a repeat's p50 and p99 over its samples).
 */
export const coreSuite: Suite = {
  name: 'core',
  metrics: {
    greedy_episodes_per_s_cached_world: { unit: 'episodes/s', better: 'higher', doc: 'full greedy episodes in process, observation text read, world cache warm' },
    greedy_commands_per_s_cached_world: { unit: 'commands/s', better: 'higher' },
    greedy_episodes_per_s_fresh_world: { unit: 'episodes/s', better: 'higher', baselines: ['greedy_episodes_per_s_cached_world'], doc: 'the same with every world generated afresh' },
    ...latencyMetrics,
  },
  params: (size) => ({ greedy_seeds: SIZES[size].seeds, latency_samples: SIZES[size].samples, preset: 'default' }),
  setup(size) {
    greedyRound(seedsOf(size).slice(0, 5), false); // JIT warm-up
    // Worlds are retained from their second request: after these two rounds the world cache holds every seed.
    greedyRound(seedsOf(size), false);
    greedyRound(seedsOf(size), false);
  },
  run(_ctx, size) {
    const out: Sample = {};
    const cached = greedyRound(seedsOf(size), false);
    out['greedy_episodes_per_s_cached_world'] = cached.episodes_per_s;
    out['greedy_commands_per_s_cached_world'] = cached.commands_per_s;
    out['greedy_episodes_per_s_fresh_world'] = greedyRound(seedsOf(size), true).episodes_per_s;
    for (const [k, v] of Object.entries(commandLatencies(SIZES[size].samples))) {
      const name = LATENCY_COMMANDS[k as keyof typeof LATENCY_COMMANDS];
      out[`${name}_p50_us`] = v.p50;
      out[`${name}_p99_us`] = v.p99;
    }
    return out;
  },
};
