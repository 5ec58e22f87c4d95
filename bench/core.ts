/**
 * Core benchmarks: full greedy episodes in-process and per-command latency. Every figure is a median
 * over repeated samples (never a single timing). Run with `npm run bench` (or `make bench`).
 */
import { GreedyPolicy } from '../baselines/greedy.js';
import { loadPreset } from '../src/config/load.js';
import { Env } from '../src/env/env.js';
import { runEpisode } from '../src/env/episode.js';
import { clearWorldCache, outcome, Simulation } from '../src/sim/index.js';

/** Median of a sample. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** Percentile (0-100) of a sample. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** Greedy episodes per second: median over rounds of `seeds` episodes. `fresh` clears the world cache before each round. */
function greedyEpisodesPerSecond(seeds: number[], rounds: number, fresh: boolean): { median: number; rounds: number[]; steps: number; steps_per_sec_median: number } {
  const cfg = loadPreset('default');
  const rates: number[] = [];
  const stepsPerSec: number[] = [];
  let steps = 0;
  for (let r = 0; r < rounds; r++) {
    if (fresh) clearWorldCache();
    const t0 = nowNs();
    steps = 0;
    const env = new Env();
    for (const s of seeds) steps += runEpisode(env, new GreedyPolicy(), { seed: s, preset: cfg }).stepCount;
    const sec = Number(nowNs() - t0) / 1e9;
    rates.push(seeds.length / sec);
    stepsPerSec.push(steps / sec);
  }
  return { median: median(rates), rounds: rates, steps, steps_per_sec_median: median(stepsPerSec) };
}

/** p50/p99 latency (µs) of the accept → assign → dispatch → resume cycle's commands and of `market browse`. */
function commandLatencies(samples: number): Record<string, { p50: number; p99: number }> {
  const cfg = loadPreset('default');
  const lat: Record<string, number[]> = { 'task accept': [], 'task assign': [], 'task dispatch': [], 'sim resume': [], 'market browse (50, value)': [], 'market browse (50, with text)': [] };
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

/** Run the core benchmark suite. */
export function runCoreBench(opts: { quick?: boolean } = {}): Record<string, unknown> {
  const seeds = Array.from({ length: opts.quick ? 10 : 50 }, (_, i) => i + 1);
  const rounds = opts.quick ? 3 : 7;
  greedyEpisodesPerSecond(seeds.slice(0, 5), 2, false); // JIT warm-up
  return {
    greedy_episodes_per_sec_cached_world: greedyEpisodesPerSecond(seeds, rounds, false),
    greedy_episodes_per_sec_fresh_world: greedyEpisodesPerSecond(seeds, rounds, true),
    command_latency_us: commandLatencies(opts.quick ? 300 : 3000),
  };
}
