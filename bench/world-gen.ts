/**
 * World generation alone, as a reset with a seed not seen before pays for it: CPU µs per world template (the market's
 * tasks drawn from their streams and quantized; employees and clients come from their per-config cache, as in a run),
 * the world cache cleared before every round so each seed generates its world. Seeds differ between rounds.
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process, rounds alternating, and the
 * speedup is the median of the per-round ratios, so load on the machine hits both alike.
 *
 *   npm run build && node dist/bench/world-gen.js [--rounds 15] [--worlds 100] [--preset default] [--against ../other-checkout]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { flagValue, pairedRounds } from './harness.js';

/** One build's world generation: `prepare()` (untimed: the world cache cleared, the people cache refilled), then `n` fresh worlds from seed `first` on. */
interface Generate {
  prepare(): void;
  run(first: number, n: number): void;
}

async function setup(root: string, preset: string): Promise<Generate> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const { loadPreset } = await load('src/config/load.js');
  const { clearWorldCache, worldTemplate } = await load('src/sim/model/world-cache.js');
  const world = (loadPreset(preset) as { world: unknown }).world;
  worldTemplate(0, world); // employees and clients cached, code warm
  return {
    prepare() {
      clearWorldCache();
      worldTemplate(0, world); // the per-config people cache again (cleared with the worlds)
    },
    run(first, n) {
      for (let s = first; s < first + n; s++) worldTemplate(s, world);
    },
  };
}

/** CPU µs per world over `rounds` rounds of `worlds` worlds (and the other build's, alternating). */
export async function worldGenBench(rounds: number, worlds: number, preset: string, against: string | null): Promise<Record<string, number | string>> {
  const here = await setup(resolve(new URL('../..', import.meta.url).pathname), preset);
  const other = against !== null ? await setup(resolve(against), preset) : null;
  let seed = 1;
  const timed = (g: Generate) => (): number => {
    const first = seed;
    seed += worlds;
    g.prepare();
    const c = process.cpuUsage();
    g.run(first, worlds);
    const d = process.cpuUsage(c);
    return (d.user + d.system) / worlds;
  };
  // warm-up round of each build
  timed(here)();
  if (other) timed(other)();
  const r = pairedRounds(rounds, timed(here), other ? timed(other) : null);
  const out: Record<string, number | string> = { rounds, worlds, preset, world_cpu_us: +r.here.toFixed(1) };
  if (r.other !== null && r.speedup !== null) {
    out['against_world_cpu_us'] = +r.other.toFixed(1);
    out['world_speedup_vs_against'] = +r.speedup.toFixed(2);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const val = (name: string) => flagValue(process.argv, name);
  const r = await worldGenBench(Number(val('--rounds') ?? 15), Number(val('--worlds') ?? 100), val('--preset') ?? 'default', val('--against'));
  console.log(JSON.stringify(r));
}
