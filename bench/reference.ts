/**
 * The reference side by side (the `reference` suite of `npm run bench`): a greedy year (seed 1 of the `default`
 * preset) through YC-Bench's own CLI as its agent harness drives it (the world seeded once, then one `yc-bench`
 * process per command over a SQLite file), against the same year through `ycgym run` (one process) and in process.
 * The commands are greedy's, computed by ycgym; ycgym reproduces the reference exactly, so the reference plays the
 * same year (checked: both print the same `company status` at the end).
 *
 * `YCB_REF=/path/to/yc-bench`: a checkout of https://github.com/collinear-ai/yc-bench whose dependencies are
 * installed (e.g. `uv sync` in it). Its Python: `YCB_REF_PYTHON`, else `YCB_REF/.venv/bin/python`, else
 * `python3`; its CLI: `YCB_REF/.venv/bin/yc-bench` when present (what the reference's command executor runs),
 * else `PYTHON -m yc_bench` with `YCB_REF/src` on `PYTHONPATH`. Without `YCB_REF` the suite is skipped with a note.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { split } from 'shlex';
import { GreedyPolicy } from '../baselines/greedy.js';
import { loadPreset } from '../src/config/load.js';
import { Env } from '../src/env/env.js';
import { runEpisode } from '../src/env/episode.js';
import { clearWorldCache, Simulation } from '../src/sim/index.js';
import type { Sample, Size, Suite } from './harness.js';

/** The seed of the greedy year. */
export const REFERENCE_SEED = 1;

/** Commands of a size: the whole year, except in tests (`tiny`): its first 20 commands. */
const MAX_COMMANDS: Record<Size, number> = { full: Number.MAX_SAFE_INTEGER, quick: Number.MAX_SAFE_INTEGER, tiny: 20 };
/** The reference takes seconds per year: at most this many repeats. */
const MAX_REPEATS: Record<Size, number> = { full: 3, quick: 1, tiny: 2 };

/** Seeds the reference's world as its runner does (`runner.main._init_simulation`), without an agent. argv: seed. */
const SEED_SCRIPT = [
  'import sys, types',
  'from contextlib import contextmanager',
  'from yc_bench.config import load_config',
  'from yc_bench.db.session import build_engine, build_session_factory, init_db, session_scope',
  'from yc_bench.runner.main import _init_simulation',
  'cfg = load_config("default")',
  'engine = build_engine()',
  'init_db(engine)',
  'factory = build_session_factory(engine)',
  '@contextmanager',
  'def db():',
  '    with session_scope(factory) as s:',
  '        yield s',
  'args = types.SimpleNamespace(seed=int(sys.argv[1]), company_name="BenchCo", start_date="2025-01-01")',
  '_init_simulation(db, args, cfg, cfg.sim.horizon_years)',
].join('\n');

/** How to run the reference found at `YCB_REF`. */
export interface ReferenceCli {
  root: string;
  python: string;
  /** The argv prefix of one `yc-bench` command. */
  cli: string[];
}

/** The reference named by the environment, or why there is none. */
export function findReference(env: NodeJS.ProcessEnv = process.env): ReferenceCli | string {
  const ref = env['YCB_REF'];
  if (ref === undefined || ref === '') return 'YCB_REF is not set: point it at a YC-Bench checkout (with its dependencies installed) to time a greedy year through its CLI';
  const root = resolve(ref);
  if (!existsSync(join(root, 'src', 'yc_bench')) || !statSync(join(root, 'src', 'yc_bench')).isDirectory()) return `YCB_REF=${ref}: no src/yc_bench in it (not a YC-Bench checkout)`;
  const venvPython = join(root, '.venv', 'bin', 'python');
  const python = env['YCB_REF_PYTHON'] || (existsSync(venvPython) ? venvPython : 'python3');
  const script = join(root, '.venv', 'bin', 'yc-bench');
  return { root, python, cli: existsSync(script) ? [script] : [python, '-m', 'yc_bench'] };
}

/** Greedy's commands of the year and the final `company status` text, from ycgym. */
function greedyYear(maxCommands: number): { commands: string[]; finalStatus: string } {
  const cfg = loadPreset('default');
  const commands: string[] = [];
  runEpisode(new Env(), new GreedyPolicy(), { seed: REFERENCE_SEED, preset: cfg, options: { max_steps: maxCommands } }, { onStep: ({ action }) => void commands.push(action) });
  const sim = Simulation.create(cfg, { seed: REFERENCE_SEED });
  for (const c of commands) sim.execute(c);
  return { commands, finalStatus: sim.execute('company status').text };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * Whether two `company status` texts agree: equal but for UUIDs (the reference draws `company_id` with `uuid4()`,
 * ycgym derives it from the seed) and trailing whitespace.
 */
export function sameStatus(reference: string, ours: string): boolean {
  const norm = (t: string) => t.replace(UUID, '<uuid>').trimEnd();
  return norm(reference) === norm(ours);
}

/** The built ycgym CLI (`dist/src/cli/main.js`), from the build or from the source tree. */
function ycgymMain(): string {
  const here = import.meta.url;
  return fileURLToPath(here.endsWith('.js') ? new URL('../src/cli/main.js', here) : new URL('../dist/src/cli/main.js', here));
}

interface ReferenceContext {
  ref: ReferenceCli;
  dir: string;
  commands: string[];
  argv: string[][];
  finalStatus: string;
  env: NodeJS.ProcessEnv;
}

function seconds(f: () => void): number {
  const t0 = performance.now();
  f();
  return (performance.now() - t0) / 1000;
}

/** The reference suite (skipped without `YCB_REF`). */
export const referenceSuite: Suite<ReferenceContext> = {
  name: 'reference',
  metrics: {
    reference_greedy_year_s: {
      unit: 's',
      better: 'lower',
      baselines: ['ycgym_greedy_year_cli_s', 'ycgym_greedy_year_in_process_s'],
      doc: "greedy seed 1 through the reference's CLI (world seeding, then one yc-bench process per command); ratios: over ycgym's year through `ycgym run` and in process",
    },
    reference_seed_world_s: { unit: 's', better: 'lower', doc: "the reference's world seeding alone (one Python process)" },
    reference_ms_per_command: { unit: 'ms', better: 'lower' },
    ycgym_greedy_year_cli_s: { unit: 's', better: 'lower', doc: '`ycgym run --policy greedy --seeds 1 --workers 1 --no-trajectories` (one Node process)' },
    ycgym_greedy_year_in_process_s: { unit: 's', better: 'lower', doc: 'the same year in process (world generated, observation text rendered)' },
    reference_final_status_identical: { unit: '1 = same text', better: 'higher', doc: "`company status` after the year: the reference's stdout equals ycgym's text (UUIDs and trailing whitespace aside: the reference's company id is a random uuid4)" },
  },
  skip() {
    const r = findReference();
    return typeof r === 'string' ? r : null;
  },
  params: (size) => ({ preset: 'default', seed: REFERENCE_SEED, max_commands: MAX_COMMANDS[size] === Number.MAX_SAFE_INTEGER ? null : MAX_COMMANDS[size] }),
  maxRepeats: (size) => MAX_REPEATS[size],
  setup(size) {
    const ref = findReference();
    if (typeof ref === 'string') throw new Error(ref);
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-bench-ref-'));
    const { commands, finalStatus } = greedyYear(MAX_COMMANDS[size]);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: `sqlite:///${join(dir, 'reference.db')}`,
      YC_BENCH_EXPERIMENT: 'default',
      PYTHONPATH: [join(ref.root, 'src'), process.env['PYTHONPATH']].filter((x) => x).join(delimiter),
    };
    return { ref, dir, commands, argv: commands.map((c) => split(c)), finalStatus, env };
  },
  run(ctx) {
    const out: Sample = {};
    const cliOpts = { cwd: ctx.dir, env: ctx.env, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 };
    const [exe, ...pre] = ctx.ref.cli as [string, ...string[]];
    let status = '';
    const year = seconds(() => {
      rmSync(join(ctx.dir, 'reference.db'), { force: true });
      out['reference_seed_world_s'] = seconds(() => execFileSync(ctx.ref.python, ['-c', SEED_SCRIPT, String(REFERENCE_SEED)], cliOpts));
      // One process per command, as the reference's agent harness runs them; a rejected command exits non-zero.
      for (const argv of ctx.argv) {
        try {
          execFileSync(exe, [...pre, ...argv], cliOpts);
        } catch (e) {
          if ((e as { status?: number | null }).status == null) throw e;
        }
      }
    });
    out['reference_greedy_year_s'] = year;
    out['reference_ms_per_command'] = ((year - (out['reference_seed_world_s'] as number)) * 1000) / Math.max(1, ctx.argv.length);
    status = execFileSync(exe, [...pre, 'company', 'status'], { ...cliOpts, encoding: 'utf8' });
    const same = sameStatus(status, ctx.finalStatus);
    out['reference_final_status_identical'] = same ? 1 : 0;
    if (!same) process.stderr.write(`reference: the final company status differs\n--- reference\n${status}\n--- ycgym\n${ctx.finalStatus}\n`);

    const runDir = join(ctx.dir, 'ycgym-run');
    const maxSteps = ctx.commands.length;
    out['ycgym_greedy_year_cli_s'] = seconds(() =>
      execFileSync(process.execPath, [ycgymMain(), 'run', '--policy', 'greedy', '--seeds', String(REFERENCE_SEED), '--workers', '1', '--no-trajectories', '--no-progress', '--max-steps', String(maxSteps), '--out', runDir], { stdio: 'ignore' }),
    );
    rmSync(runDir, { recursive: true, force: true });
    const cfg = loadPreset('default');
    clearWorldCache();
    out['ycgym_greedy_year_in_process_s'] = seconds(() => void runEpisode(new Env(), new GreedyPolicy(), { seed: REFERENCE_SEED, preset: cfg, options: { max_steps: maxSteps } }, { onStep: ({ result }) => void result.observation.text }));
    return out;
  },
  teardown(ctx) {
    rmSync(ctx.dir, { recursive: true, force: true });
  },
};
