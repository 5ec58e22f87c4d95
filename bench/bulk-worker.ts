/**
 * A bulk-run worker thread's own work per episode, without threads or files, as src/cli/export-worker.ts does it:
 * `playJobRows` (the episode and its step rows, text rendered into the row builder), then, with `--format arrow` (the
 * default, as `ycgym run`'s default Arrow files with zstd bodies), the episode's zstd-compressed Arrow record batch
 * body copied into a slot (`TableBuilder.consume`, `recordBatchBodyInto`), or with `--format parquet`
 * `TableBuilder.pack` into a slot (the raw buffers a Parquet run hands over); timed in CPU µs (process.cpuUsage) per
 * episode. Greedy episodes on seeds 1..N, each played once as a bulk run plays them (every world new to the world
 * cache), with trajectories unless `--no-trajectories`. `cpu_us_per_episode` is the median episode;
 * `cpu_us_per_episode_mean` the mean, which also counts the major collections that fall on few episodes.
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process and play each seed in turn, so
 * load on the machine hits both alike (wall clock on a shared machine swings too much to compare two `ycgym run`);
 * `speedup_vs_against` is the median of the per-episode ratios other/this (each build plays a seed first every other
 * episode), and `speedup_vs_against_mean` the ratio of the means. Both builds must hand over the same bytes for every
 * episode (the run fails on the first difference). The two builds share one heap: what one retains is walked by the
 * collections during the other's episodes, so a change in what an episode leaves on the heap shows only in part;
 * time each build in its own process for that (`--root DIR` times another checkout's build alone with this bench).
 *
 *   npm run build && node dist/bench/bulk-worker.js [--episodes 300] [--format arrow|parquet] [--no-trajectories] [--against ../other-checkout] [--root ../checkout]
 */
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { flagValue, median } from './harness.js';

const mean = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;

/** One build's worker: plays the next seed, hands its rows over into its slot, returns the CPU µs it took. */
interface Worker {
  play(seed: number): number;
  /** The bytes handed over for the last episode (a view of the slot), and for a body what its header says. */
  packed(): Uint8Array;
  header(): string;
}

/** What a worker hands an Arrow file's rows over as (src/cli/export-worker.ts), or how: Parquet's packed buffers. */
export type WorkerFormat = 'arrow' | 'parquet';

interface Laid {
  length: number;
  nodes: number[];
  regions: number[];
  byteLength: number;
}
type BodyInto = (columns: unknown, t: unknown, compress: (d: Uint8Array) => Uint8Array, into: (n: number) => Uint8Array) => Laid;

/** `recordBatchBodyInto` of a build, or for builds without it the same from `recordBatchBody` (their worker's own loop). */
async function bodyInto(load: (p: string) => Promise<Record<string, unknown>>): Promise<BodyInto> {
  const m = await load('src/export/ipc-body.js');
  if (typeof m['recordBatchBodyInto'] === 'function') return m['recordBatchBodyInto'] as BodyInto;
  const body = m['recordBatchBody'] as (columns: unknown, t: unknown, compress: (d: Uint8Array) => Uint8Array) => (Laid & { chunks: Uint8Array[] }) | null;
  return (columns, t, compress, into) => {
    const b = body(columns, t, compress);
    if (b === null) throw new Error('step rows the record batch body cannot lay out');
    const out = into(b.byteLength);
    let at = 0;
    for (const c of b.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return { length: b.length, nodes: b.nodes, regions: b.regions, byteLength: b.byteLength };
  };
}

async function setup(root: string, trajectories: boolean, format: WorkerFormat): Promise<Worker> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href) as Promise<Record<string, unknown>>;
  // As the worker thread loads it: the preset's validated, frozen config (presetConfig), which Simulation.create takes
  // as is (a loadPreset copy is compared deeply with its validated copy at every episode); loadPreset in builds without it.
  const configs = (await load('src/config/load.js')) as { loadPreset(name: string): unknown; presetConfig?: (name: string) => unknown };
  const loadConfig = configs.presetConfig ?? configs.loadPreset;
  const { stepBuilder } = (await load('src/export/table-builder.js')) as { stepBuilder(): Builder };
  const { playJobRows } = (await load('src/export/jobs.js')) as { playJobRows(...a: unknown[]): unknown };
  const { makePolicy } = await load('baselines/index.js');
  const cfg = loadConfig('default');
  const wc = { preset: 'default', presetName: 'default', runId: 'bench', maxSteps: null, trajectories, rollouts: false };
  const builder = stepBuilder();
  // As the worker thread loads them: the arena encoder at the files' level, the step columns, the body's layout.
  const arrow = format === 'arrow' && trajectories;
  const zstd = arrow ? await ((await load('src/export/zstd-encode.js'))['zstdArenaEncoder'] as () => Promise<{ encode(d: Uint8Array): Uint8Array; reset(): void }>)() : null;
  const columns = arrow ? (await load('src/export/columns.js'))['STEP_COLUMNS'] : null;
  const toBody = arrow ? await bodyInto(load) : null;
  let slot = new Uint8Array(1 << 20);
  let used = 0;
  let laid: Laid | null = null;
  const room = (n: number): Uint8Array => {
    if (slot.byteLength < n) slot = new Uint8Array(n + (n >> 1));
    return slot;
  };
  return {
    play(seed: number): number {
      const t0 = process.cpuUsage();
      playJobRows(cfg, wc, { index: seed, policy: 'greedy', seed }, builder, makePolicy);
      if (zstd !== null && toBody !== null) {
        laid = builder.consume((t) => {
          zstd.reset();
          return toBody(columns, t, zstd.encode, room);
        });
        used = laid.byteLength;
      } else if (trajectories) {
        used = builder.packedSize();
        builder.pack(room(used));
      }
      const t = process.cpuUsage(t0);
      return t.user + t.system;
    },
    packed: () => slot.subarray(0, used),
    header: () => JSON.stringify(laid),
  };
}

/** What this bench uses of a build's step row builder. */
interface Builder {
  consume<T>(use: (t: unknown) => T): T;
  packedSize(): number;
  pack(into: Uint8Array): unknown;
}

export async function bulkWorkerBench(episodes: number, trajectories: boolean, against: string | null, format: WorkerFormat = 'arrow', root: string | null = null): Promise<Record<string, number>> {
  const here = await setup(root !== null ? resolve(root) : fileURLToPath(new URL('../..', import.meta.url)), trajectories, format);
  const other = against !== null ? await setup(resolve(against), trajectories, format) : null;
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
    if (!Buffer.from(other.packed()).equals(Buffer.from(here.packed())) || other.header() !== here.header()) throw new Error(`seed ${seed}: the two builds handed over different bytes`);
  }
  const out: Record<string, number> = { episodes, trajectories: trajectories ? 1 : 0, cpu_us_per_episode: Math.round(median(a)) };
  if (other !== null) {
    out['against_cpu_us_per_episode'] = Math.round(median(b));
    out['speedup_vs_against'] = +median(b.map((x, i) => x / (a[i] as number))).toFixed(3);
    out['packed_identical'] = 1;
  }
  out['cpu_us_per_episode_mean'] = Math.round(mean(a));
  if (other !== null) {
    out['against_cpu_us_per_episode_mean'] = Math.round(mean(b));
    out['speedup_vs_against_mean'] = +(mean(b) / mean(a)).toFixed(3);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const format = flagValue(argv, '--format') ?? 'arrow';
  if (format !== 'arrow' && format !== 'parquet') throw new Error(`--format ${format}: arrow or parquet`);
  const r = await bulkWorkerBench(Number(flagValue(argv, '--episodes') ?? 300), !argv.includes('--no-trajectories'), flagValue(argv, '--against'), format, flagValue(argv, '--root'));
  console.log(JSON.stringify(r));
}
