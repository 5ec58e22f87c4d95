/**
 * Golden-trajectory replay: drive a simulation with the reference's recorded commands and compare every
 * exit code and JSON output exactly (ints vs floats included), after the goldens' normalisation
 * (UUID-valued strings become `<uuid>`).
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { type ExperimentConfig, type Out, parseTyped, PyFloat, Simulation, toPlain, typedEqual, typedFromPlain } from '../sim/index.js';

/** One recorded reference step. */
export interface GoldenStep {
  cmd: string;
  exit: number;
  out: Out;
}

/** One recorded episode (`sim init --seed N --start-date 01/01/2025 --company-name BenchCo --horizon-years 1`). */
export interface GoldenEpisode {
  seed: number;
  policy: string;
  preset: string;
  steps: GoldenStep[];
}

/** The first difference found. */
export interface Mismatch {
  file: string;
  episode: number;
  step: number;
  cmd: string;
  expected: { exit: number; out: unknown };
  actual: { exit: number; out: unknown };
}

/** Summary line printed by `ycgym parity`. */
export interface ParitySummary {
  files: number;
  steps: number;
  mismatches: number;
  first_mismatch: Mismatch | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Replace UUID-valued strings by `<uuid>`, as the golden files do. */
export function normalize(v: Out): Out {
  if (typeof v === 'string') return UUID_RE.test(v) ? '<uuid>' : v;
  if (Array.isArray(v)) return v.map(normalize);
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) {
    const o: { [k: string]: Out } = {};
    for (const k of Object.keys(v)) o[k] = normalize(v[k] as Out);
    return o;
  }
  return v;
}

/**
 * Read a golden trajectory file (`.json` or `.json.gz`), keeping int/float types. A file that is not one (not JSON, or
 * an episode without an integer `seed` or a `steps` list of `{cmd, exit, out}`) throws an error naming the file and
 * what is wrong, instead of whatever replaying it would have thrown.
 */
export function readGoldenFile(path: string): GoldenEpisode[] {
  const raw = readFileSync(path);
  const text = (path.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8');
  let v: Out;
  try {
    v = parseTyped(text);
  } catch (e) {
    throw new Error(`${path}: not a golden trajectory file (not JSON: ${(e as Error).message})`);
  }
  const arr = Array.isArray(v) ? v : [v];
  return arr.map((e, i) => {
    const bad = (what: string): never => {
      throw new Error(`${path}: not a golden trajectory file (episode ${i}: ${what})`);
    };
    if (typeof e !== 'object' || e === null || Array.isArray(e)) return bad('not an object');
    const o = e as { [k: string]: Out };
    if (!Number.isSafeInteger(o['seed'])) bad('no integer "seed"');
    const steps = o['steps'];
    if (!Array.isArray(steps)) return bad('no "steps" list');
    return {
      seed: o['seed'] as number,
      policy: String(o['policy']),
      preset: String(o['preset']),
      steps: steps.map((s, k) => {
        if (typeof s !== 'object' || s === null || Array.isArray(s) || typeof (s as { [k: string]: Out })['cmd'] !== 'string') return bad(`step ${k} has no "cmd" string`);
        const st = s as { [k: string]: Out };
        return { cmd: st['cmd'] as string, exit: st['exit'] as number, out: st['out'] as Out };
      }),
    };
  });
}

/** Replay one episode; returns [steps, mismatches, first mismatch]. */
export function replayEpisode(ep: GoldenEpisode, cfg: ExperimentConfig, file: string, index: number): { steps: number; mismatches: number; first: Mismatch | null } {
  const sim = Simulation.create(cfg, { seed: ep.seed, startDate: '2025-01-01', companyName: 'BenchCo', horizonYears: 1 });
  let mismatches = 0;
  let first: Mismatch | null = null;
  ep.steps.forEach((s, i) => {
    const r = sim.execute(s.cmd);
    const actual = normalize(typedFromPlain(r.value));
    if (r.exit !== s.exit || !typedEqual(actual, s.out)) {
      mismatches++;
      if (first === null) {
        first = { file, episode: index, step: i, cmd: s.cmd, expected: { exit: s.exit, out: toPlain(s.out) }, actual: { exit: r.exit, out: toPlain(actual) } };
      }
    }
  });
  return { steps: ep.steps.length, mismatches, first };
}

/** Replay every episode of every file; `presetFor` maps an episode's preset name to a config. */
export function replayFiles(paths: readonly string[], presetFor: (name: string) => ExperimentConfig): ParitySummary {
  let steps = 0;
  let mismatches = 0;
  let first: Mismatch | null = null;
  for (const p of paths) {
    readGoldenFile(p).forEach((ep, i) => {
      const r = replayEpisode(ep, presetFor(ep.preset), p, i);
      steps += r.steps;
      mismatches += r.mismatches;
      if (first === null && r.first !== null) first = r.first;
    });
  }
  return { files: paths.length, steps, mismatches, first_mismatch: first };
}
