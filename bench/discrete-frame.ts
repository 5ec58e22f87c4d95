/**
 * The masked (Discrete) env's frame: µs to compute `discreteFrame` (observation vector and action mask) over three
 * mid-episode worlds (DiscreteGreedy, 80 steps into seeds 1, 2 and 5). With `--against DIR` (another checkout,
 * built) both builds are timed in this one process, rounds alternating, and the speedup is the median of the
 * per-round ratios, so load on the machine hits both alike.
 *
 *   npm run build && node dist/bench/discrete-frame.js [--rounds 21] [--against ../other-checkout]
 */
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { flagValue, pairedRounds } from './harness.js';

type FrameFn = () => void;

/** Frames of three mid-episode worlds of the build whose compiled `dist/` is under `root`. */
async function setup(root: string): Promise<FrameFn> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const { Env } = await load('src/env/env.js');
  const { discreteFrame, discreteSpec } = await load('src/env/discrete.js');
  const { DiscreteGreedy } = await load('baselines/discrete-greedy.js');
  const sims: unknown[] = [];
  for (const seed of [1, 2, 5]) {
    const env = new Env();
    let r = env.reset({ seed, preset: 'default', options: { actions: 'discrete' } });
    const g = new DiscreteGreedy(r.info.discrete_spec);
    for (let i = 0; i < 80 && !(r.terminated || r.truncated); i++) {
      const f = r.observation.discrete;
      r = env.step(g.act(f.obs, f.mask));
    }
    sims.push(env.simulation);
  }
  const spec = discreteSpec(sims[0], {});
  return () => {
    for (const s of sims) discreteFrame(s, spec);
  };
}

function microseconds(f: FrameFn, n = 3000): number {
  const t = performance.now();
  for (let i = 0; i < n; i++) f();
  return ((performance.now() - t) / n / 3) * 1000;
}


export async function discreteFrameBench(rounds: number, against: string | null): Promise<Record<string, number>> {
  const self = resolve(new URL('../..', import.meta.url).pathname);
  const here = await setup(self);
  const other = against !== null ? await setup(resolve(against)) : null;
  for (let k = 0; k < 3; k++) {
    microseconds(here);
    if (other) microseconds(other);
  }
  const r = pairedRounds(rounds, () => microseconds(here), other ? () => microseconds(other) : null);
  const out: Record<string, number> = { rounds, frame_us: +r.here.toFixed(2) };
  if (r.other !== null && r.speedup !== null) {
    out['against_frame_us'] = +r.other.toFixed(2);
    out['speedup_vs_against'] = +r.speedup.toFixed(2);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const val = (name: string) => flagValue(argv, name);
  const r = await discreteFrameBench(Number(val('--rounds') ?? 21), val('--against'));
  console.log(JSON.stringify(r));
}
