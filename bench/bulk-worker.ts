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
 * With `--parts` (this build, or `--root`'s, alone; Arrow with trajectories) it reports where the trajectory work of
 * an episode goes instead (`partsBench`).
 *
 * With `--curve` (this build, or `--root`'s, alone) it adds the thread's warm-up: `cpu_us_mean_by_episode`, the mean
 * CPU µs of the episodes in each range of episode numbers (1, 2-5, 6-10, 11-25, 26-50, 51-100, 101-200, 201-300, then
 * by hundreds up to `--episodes`; the cold first episode, then V8 tiering the code up), and `replay_cpu_us_mean`, the
 * first min(50, N) seeds played again once the N have run, against `first_cpu_us_mean`, the same seeds' first play: the
 * same episodes on warm code, so their difference is the warm-up alone (the process CPU counts V8's compiler threads).
 *
 *   npm run build && node dist/bench/bulk-worker.js [--episodes 300] [--format arrow|parquet] [--no-trajectories] [--against ../other-checkout] [--root ../checkout] [--parts] [--curve]
 */
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { flagValue, median, medianPairRatio } from './harness.js';

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

/** The ranges of episode numbers `--curve` averages over (first, last), up to `episodes`. */
export function curveRanges(episodes: number): [number, number][] {
  const edges = [1, 5, 10, 25, 50, 100, 200, 300];
  for (let e = 400; e < episodes + 100; e += 100) edges.push(e);
  const out: [number, number][] = [];
  let lo = 1;
  for (const e of edges) {
    if (lo > episodes) break;
    const hi = Math.min(e, episodes);
    out.push([lo, hi]);
    lo = hi + 1;
  }
  return out;
}

export async function bulkWorkerBench(
  episodes: number,
  trajectories: boolean,
  against: string | null,
  format: WorkerFormat = 'arrow',
  root: string | null = null,
  curve = false,
): Promise<Record<string, number | Record<string, number>>> {
  if (curve && against !== null) throw new Error('--curve times this build alone: no --against');
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
    out['speedup_vs_against'] = +medianPairRatio(b, a).toFixed(3);
    out['packed_identical'] = 1;
  }
  out['cpu_us_per_episode_mean'] = Math.round(mean(a));
  if (other !== null) {
    out['against_cpu_us_per_episode_mean'] = Math.round(mean(b));
    out['speedup_vs_against_mean'] = +(mean(b) / mean(a)).toFixed(3);
  }
  if (!curve) return out;
  const byEpisode: Record<string, number> = {};
  for (const [lo, hi] of curveRanges(episodes)) byEpisode[lo === hi ? String(lo) : `${lo}-${hi}`] = Math.round(mean(a.slice(lo - 1, hi)));
  const replayed = Math.min(50, episodes);
  const again: number[] = [];
  for (let seed = 1; seed <= replayed; seed++) again.push(here.play(seed));
  return { ...out, cpu_us_mean_by_episode: byEpisode, first_cpu_us_mean: Math.round(mean(a.slice(0, replayed))), replay_cpu_us_mean: Math.round(mean(again)) };
}

/** What `--parts` uses of a build's step row builder and of a row's text (the row builder's `TextSource`). */
interface PartsBuilder extends Builder {
  readonly length: number;
  append(row: Record<string, unknown>): void;
  setBool(row: number, column: string, v: boolean): void;
}
interface TextSourceLike {
  appendText(sink: unknown): void;
}

/**
 * `--parts`: where a worker's trajectory work goes, per episode, in this one build (the default Arrow path, as `play`
 * times it): `cpu_us_per_episode_mean` is the episode with its rows plus its record batch body (process CPU);
 * `rows_cpu_us_mean` the first (`playJobRows`: the simulation, the step rows and their text), `text_render_us_mean`
 * the part of it spent rendering the observation texts into the row builder; `body_cpu_us_mean` the second
 * (`consume` and `recordBatchBodyInto`), `zstd_text_us_mean` the part of it compressing the observation text buffer and
 * `zstd_other_us_mean` compressing the other `zstd_other_calls` buffers (each a separate zstd frame, whose set-up is
 * paid per buffer). The episode and the body are process CPU (V8's compiler and collector threads count in them);
 * the sub-parts are sums of `performance.now()` intervals around each call: not the process CPU, whose reads (a
 * system call) cost as much as a short text and take in the other threads' time in jumps, but wall time, which counts
 * whatever preempts the thread: read them on a quiet machine. The simulation alone is what `--no-trajectories` times.
 */
export async function partsBench(episodes: number, root: string | null = null): Promise<Record<string, number>> {
  const dir = root !== null ? resolve(root) : fileURLToPath(new URL('../..', import.meta.url));
  const load = (p: string) => import(pathToFileURL(join(dir, 'dist', p)).href) as Promise<Record<string, unknown>>;
  const configs = (await load('src/config/load.js')) as { presetConfig(name: string): unknown };
  const { stepBuilder } = (await load('src/export/table-builder.js')) as { stepBuilder(): PartsBuilder };
  const { playJobRows } = (await load('src/export/jobs.js')) as { playJobRows(...a: unknown[]): unknown };
  const { makePolicy } = await load('baselines/index.js');
  const zstd = await ((await load('src/export/zstd-encode.js'))['zstdArenaEncoder'] as () => Promise<{ encode(d: Uint8Array): Uint8Array; reset(): void }>)();
  const columns = (await load('src/export/columns.js'))['STEP_COLUMNS'] as { name: string }[];
  const toBody = await bodyInto(load);
  const textColumn = columns.findIndex((c) => c.name === 'observation_text');
  const cfg = configs.presetConfig('default');
  const wc = { preset: 'default', presetName: 'default', runId: 'bench', maxSteps: null, trajectories: true, rollouts: false };
  const builder = stepBuilder();
  let slot = new Uint8Array(1 << 20);
  const room = (n: number): Uint8Array => {
    if (slot.byteLength < n) slot = new Uint8Array(n + (n >> 1));
    return slot;
  };
  let textMs = 0;
  // Each row's text source wrapped in a timer (one small closure and two clock reads per step).
  const timed: PartsBuilder = {
    get length() {
      return builder.length;
    },
    setBool: (row, column, v) => builder.setBool(row, column, v),
    append(row) {
      const src = row['observation_text'];
      if (src !== null && typeof src === 'object' && typeof (src as Partial<TextSourceLike>).appendText === 'function') {
        row['observation_text'] = {
          appendText(sink: unknown): void {
            const t0 = performance.now();
            (src as TextSourceLike).appendText(sink);
            textMs += performance.now() - t0;
          },
        };
      }
      builder.append(row);
    },
    consume: (use) => builder.consume(use),
    packedSize: () => builder.packedSize(),
    pack: (into) => builder.pack(into),
  };
  let textBuf: Uint8Array | null = null;
  let zText = 0;
  let zOther = 0;
  let otherCalls = 0;
  const encode = (d: Uint8Array): Uint8Array => {
    const t0 = performance.now();
    const z = zstd.encode(d);
    const ms = performance.now() - t0;
    if (textBuf !== null && d.buffer === textBuf.buffer && d.byteOffset === textBuf.byteOffset) zText += ms;
    else {
      zOther += ms;
      otherCalls++;
    }
    return z;
  };
  const total: number[] = [];
  const rows: number[] = [];
  const body: number[] = [];
  for (let seed = 1; seed <= episodes; seed++) {
    const t0 = process.cpuUsage();
    playJobRows(cfg, wc, { index: seed, policy: 'greedy', seed }, timed, makePolicy);
    const t1 = process.cpuUsage(t0);
    builder.consume((t) => {
      const c = (t as { columns: { values: Uint8Array }[] }).columns[textColumn];
      textBuf = c === undefined ? null : c.values;
      zstd.reset();
      return toBody(columns, t, encode, room);
    });
    const t2 = process.cpuUsage(t0);
    rows.push(t1.user + t1.system);
    total.push(t2.user + t2.system);
    body.push(t2.user + t2.system - (t1.user + t1.system));
  }
  const perEpisode = (ms: number): number => Math.round((1000 * ms) / episodes);
  return {
    episodes,
    cpu_us_per_episode_mean: Math.round(mean(total)),
    rows_cpu_us_mean: Math.round(mean(rows)),
    text_render_us_mean: perEpisode(textMs),
    body_cpu_us_mean: Math.round(mean(body)),
    zstd_text_us_mean: perEpisode(zText),
    zstd_other_us_mean: perEpisode(zOther),
    zstd_other_calls: Math.round(otherCalls / episodes),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const format = flagValue(argv, '--format') ?? 'arrow';
  if (format !== 'arrow' && format !== 'parquet') throw new Error(`--format ${format}: arrow or parquet`);
  if (argv.includes('--parts')) {
    if (format !== 'arrow' || argv.includes('--no-trajectories') || flagValue(argv, '--against') !== null) throw new Error('--parts times this build\'s Arrow trajectory path alone: no --format parquet, --no-trajectories or --against');
    console.log(JSON.stringify(await partsBench(Number(flagValue(argv, '--episodes') ?? 300), flagValue(argv, '--root'))));
    process.exit(0);
  }
  const r = await bulkWorkerBench(Number(flagValue(argv, '--episodes') ?? 300), !argv.includes('--no-trajectories'), flagValue(argv, '--against'), format, flagValue(argv, '--root'), argv.includes('--curve'));
  console.log(JSON.stringify(r));
}
