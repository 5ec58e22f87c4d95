/**
 * A bulk-run worker thread's own work per episode, without threads or files: `playJobRows` (the episode and its step
 * rows, text rendered into the row builder) then `TableBuilder.pack` into a slot, as src/cli/export-worker.ts does
 * for Parquet runs (for Arrow files a worker compresses the record batch body instead: `export-path.js`'s `record_body`),
 * timed in CPU µs (process.cpuUsage) per episode. Greedy episodes on seeds 1..N, with trajectories unless
 * `--no-trajectories`.
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process and play each seed in turn, so
 * load on the machine hits both alike (wall clock on a shared machine swings too much to compare two `ycgym run`);
 * `speedup_vs_against` is the median of the per-episode ratios other/this (each build plays a seed first every other
 * episode). Both builds must pack the same bytes for every
 * episode (the run fails on the first difference).
 *
 *   npm run build && node dist/bench/bulk-worker.js [--episodes 300] [--no-trajectories] [--against ../other-checkout]
 */
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { flagValue, median } from './harness.js';

/** One build's worker: plays the next seed, packs its rows into its slot, returns the CPU µs it took. */
interface Worker {
  play(seed: number): number;
  /** The bytes packed for the last episode (a view of the slot). */
  packed(): Uint8Array;
}

async function setup(root: string, trajectories: boolean): Promise<Worker> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const { loadPreset } = await load('src/config/load.js');
  const { stepBuilder } = await load('src/export/table-builder.js');
  const { playJobRows } = await load('src/export/jobs.js');
  const { makePolicy } = await load('baselines/index.js');
  const cfg = loadPreset('default');
  const wc = { preset: 'default', presetName: 'default', runId: 'bench', maxSteps: null, trajectories, rollouts: false };
  const builder = stepBuilder();
  let slot = new Uint8Array(1 << 20);
  let used = 0;
  return {
    play(seed: number): number {
      const t0 = process.cpuUsage();
      playJobRows(cfg, wc, { index: seed, policy: 'greedy', seed }, builder, makePolicy);
      if (trajectories) {
        used = builder.packedSize();
        if (slot.byteLength < used) slot = new Uint8Array(used + (used >> 1));
        builder.pack(slot);
      }
      const t = process.cpuUsage(t0);
      return t.user + t.system;
    },
    packed: () => slot.subarray(0, used),
  };
}

export async function bulkWorkerBench(episodes: number, trajectories: boolean, against: string | null): Promise<Record<string, number>> {
  const here = await setup(fileURLToPath(new URL('../..', import.meta.url)), trajectories);
  const other = against !== null ? await setup(resolve(against), trajectories) : null;
  const a: number[] = [];
  const b: number[] = [];
  for (let seed = 1; seed <= episodes; seed++) {
    if (other === null) {
      a.push(here.play(seed));
      continue;
    }
    // Each build plays the seed first every other episode (the second runs with the first one's data in cache).
    if (seed % 2 === 1) {
      a.push(here.play(seed));
      b.push(other.play(seed));
    } else {
      b.push(other.play(seed));
      a.push(here.play(seed));
    }
    if (!Buffer.from(other.packed()).equals(Buffer.from(here.packed()))) throw new Error(`seed ${seed}: the two builds packed different bytes`);
  }
  const out: Record<string, number> = { episodes, trajectories: trajectories ? 1 : 0, cpu_us_per_episode: Math.round(median(a)) };
  if (other !== null) {
    out['against_cpu_us_per_episode'] = Math.round(median(b));
    out['speedup_vs_against'] = +median(b.map((x, i) => x / (a[i] as number))).toFixed(3);
    out['packed_identical'] = 1;
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const r = await bulkWorkerBench(Number(flagValue(argv, '--episodes') ?? 300), !argv.includes('--no-trajectories'), flagValue(argv, '--against'));
  console.log(JSON.stringify(r));
}
