/**
 * Values whose elements kind or representation changed once the code building them was optimised, so that every
 * optimised reader deoptimised on the new kind and was compiled again, in each worker isolate of a bulk run
 * (`ycgym run --workers N`): a 200-episode greedy run (`node --trace-deopt`, 1 worker) had 45 deoptimisations of which
 * these made about 20.
 *
 * - V8's optimised `Array.prototype.map` allocates its result holey where the interpreter's is packed: task
 *   requirements, the state's task, employee and client lists and command results built with `.map` turned holey.
 *   Every function of the sim, env and greedy modules is optimised here before an episode is played (natives syntax,
 *   switched on at run time) and every array reachable from the env, the policy and each step's typed value is checked.
 * - Decimal words computed through doubles were stored as doubles (decimal.js's own are small integers).
 * - addBusinessMicros's fraction kind arrived as a double from addBusinessHours.
 */
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import * as baselines from '../../baselines/index.js';
import * as greedy from '../../baselines/greedy.js';
import * as obs from '../../baselines/obs.js';
import { loadPreset } from '../../src/config/load.js';
import * as envModule from '../../src/env/env.js';
import { Env } from '../../src/env/env.js';
import * as episode from '../../src/env/episode.js';
import { runEpisode } from '../../src/env/episode.js';
import * as handlers from '../../src/sim/commands/handlers.js';
import * as marketEntry from '../../src/sim/commands/market-entry.js';
import * as marketOrder from '../../src/sim/commands/market-order.js';
import * as engine from '../../src/sim/model/engine.js';
import * as status from '../../src/sim/model/status.js';
import * as worldCache from '../../src/sim/model/world-cache.js';
import { addBusinessHours, addBusinessMicros, addWholeBusinessHours, makeInstant } from '../../src/sim/model/calendar.js';
import { D, decFromFixed, decFromPlain, decFromScaled, type Dec } from '../../src/sim/py/decimal.js';
import { mapPacked } from '../../src/sim/py/packed.js';
import * as simulation from '../../src/sim/simulation.js';

setFlagsFromString('--allow-natives-syntax');
// V8's test intrinsics, compiled after the flag is on (vitest runs each test file in its own process: pool 'forks')
const prepare = new Function('f', '%PrepareFunctionForOptimization(f)') as (f: unknown) => void;
const optimiseNext = new Function('f', '%OptimizeFunctionOnNextCall(f)') as (f: unknown) => void;
const holey = new Function('a', 'return %HasHoleyElements(a)') as (a: unknown[]) => boolean;
const turbofanned = new Function('f', 'return %ActiveTierIsTurbofan(f)') as (f: unknown) => boolean;
const smiElements = new Function('a', 'return %HasSmiElements(a)') as (a: unknown[]) => boolean;

const cfg = loadPreset('default');

/** Every function a module exports, with the methods (static and prototype) of the classes it exports. */
function functionsOf(mods: object[]): ((...a: unknown[]) => unknown)[] {
  const out = new Set<(...a: unknown[]) => unknown>();
  const add = (f: unknown) => {
    if (typeof f === 'function') out.add(f as (...a: unknown[]) => unknown);
  };
  for (const m of mods) {
    for (const v of Object.values(m)) {
      if (typeof v !== 'function') continue;
      add(v);
      for (const o of [v, (v as { prototype?: object }).prototype]) {
        if (o === undefined || o === null) continue;
        for (const k of Object.getOwnPropertyNames(o)) {
          const d = Object.getOwnPropertyDescriptor(o, k);
          if (d === undefined || k === 'constructor' || k === 'prototype') continue;
          add(d.value);
          add(d.get);
        }
      }
    }
  }
  return [...out];
}

/** Paths of the holey arrays (and of Decimal words held as doubles) reachable from `root` (own enumerable properties, Map and Set entries; typed arrays skipped). */
function holeyArrays(root: unknown, name: string): string[] {
  const found: string[] = [];
  const seen = new Set<object>();
  const visit = (v: unknown, path: string, depth: number) => {
    if (v === null || typeof v !== 'object' || seen.has(v) || depth > 12 || ArrayBuffer.isView(v)) return;
    seen.add(v);
    if (Array.isArray(v)) {
      if (holey(v)) found.push(path);
      // a Decimal's digit words (decimal.js's `d`): small integers, see the last test
      if (path.endsWith('.d') && v.length > 0 && typeof v[0] === 'number' && !smiElements(v)) found.push(`${path} (double words)`);
      v.forEach((x, i) => visit(x, `${path}[${i}]`, depth + 1));
    } else if (v instanceof Map) {
      for (const [k, x] of v) visit(x, `${path}.get(${String(k)})`, depth + 1);
    } else if (v instanceof Set) {
      for (const x of v) visit(x, `${path}{}`, depth + 1);
    } else {
      // the preset (parsed once before any episode) is not rebuilt mid-run
      for (const [k, x] of Object.entries(v)) if (k !== 'cfg') visit(x, `${path}.${k}`, depth + 1);
    }
  };
  visit(root, name, 0);
  return found;
}

describe('packed arrays under optimised code', () => {
  it('the Decimal steps of addBusinessHours leave decimal.js building small-integer words (run first: a double word poisons the process)', () => {
    // addBusinessHoursDecimal passed `whole` (decToNumber(...) - 1, a heap number) to Decimal.mul, whose constructor
    // stored it as a one-word array: that array was a double array and the constructor's allocation site built every
    // later word array so, for the whole process. The loader's deadline rule takes this path (latestDeadline's binary
    // search over 2**20 hours), so every episode after a config load held Decimals with double words.
    const words = (x: Dec) => (x as unknown as { d: number[] }).d;
    expect(smiElements(words(D(5)))).toBe(true);
    const end = makeInstant(2199, 12, 31, 0, 0, 0);
    for (const n of [2 ** 19, 2 ** 20 - 1]) addWholeBusinessHours(end, n);
    expect(smiElements(words(D(5))), 'D(5) after the Decimal steps').toBe(true);
    expect(smiElements(words(D(1e6).mul(D(3)))), 'a product').toBe(true);
  });

  it('optimised Array.prototype.map returns a holey array here; mapPacked does not', () => {
    const viaMap = (xs: number[]) => xs.map((x) => ({ x }));
    const viaPacked = (xs: number[]) => mapPacked(xs, (x) => ({ x }));
    for (const f of [viaMap, viaPacked]) {
      prepare(f);
      f([1, 2]);
      optimiseNext(f);
    }
    // the reason for mapPacked; if a later V8 packs its optimised map's result this line may go
    expect(holey(viaMap([1, 2, 3]))).toBe(true);
    expect(holey(viaPacked([1, 2, 3]))).toBe(false);
    expect(viaPacked([4, 5])).toEqual([{ x: 4 }, { x: 5 }]);
  });

  it('a greedy episode played by optimised code builds no holey array in the env, the policy or a step value', () => {
    const fns = functionsOf([handlers, marketEntry, marketOrder, engine, status, worldCache, simulation, envModule, episode, greedy, obs, baselines]);
    for (const f of fns) prepare(f);
    // feedback first (an episode in the interpreter), then every function optimised on its next call
    runEpisode(new Env(), baselines.makePolicy('greedy'), { seed: 1, preset: cfg, options: { max_steps: 60 } });
    for (const f of fns) optimiseNext(f);
    const env = new Env();
    const policy = baselines.makePolicy('greedy');
    const found: string[] = [];
    runEpisode(env, policy, { seed: 2, preset: cfg, options: { max_steps: 60 } }, {
      onAdvance: (s) => found.push(...holeyArrays(s.result.value, `step ${s.step} (${s.action}) value`)),
    });
    found.push(...holeyArrays(env.simulation?.state, 'state'), ...holeyArrays(policy, 'policy'), ...holeyArrays(env, 'env'));
    expect([...new Set(found.map((p) => p.replace(/\[\d+\]/g, '[i]').replace(/^step \d+/, 'step')))]).toEqual([]);
  });

  it('task inspect, client list, client history, a snapshot and its restore run by optimised code build no holey array', () => {
    // Their handlers and Simulation.restore still built their rows with Array.prototype.map: a greedy episode never
    // sends these commands, so the test above did not see them.
    const fns = functionsOf([handlers, status, simulation]);
    for (const f of fns) prepare(f);
    const env = new Env();
    runEpisode(env, baselines.makePolicy('greedy'), { seed: 3, preset: cfg, options: { max_steps: 40 } });
    const sim = env.simulation;
    if (sim === null) throw new Error('no simulation');
    const active = sim.state.tasks.find((t) => t.owned && t.status === 'active' && t.assignments.length > 0);
    if (active === undefined) throw new Error('no active task with assignments after 40 greedy steps');
    const lines = [`task inspect --task-id ${sim.taskRef(active.id)}`, 'client list', 'client history'];
    const play = (): string[] => {
      const found: string[] = [];
      for (const line of lines) {
        const r = sim.execute(line);
        expect(r.ok, `${line}: ${r.text}`).toBe(true);
        found.push(...holeyArrays(r.value, `${line} value`));
      }
      const snap = sim.snapshot();
      found.push(...holeyArrays(snap.state, 'snapshot state'));
      const restored = simulation.Simulation.restore(snap);
      found.push(...holeyArrays(restored.state, 'restored state'));
      return found;
    };
    // feedback in the interpreter, then every function optimised on its next call
    for (let i = 0; i < 3; i++) play();
    for (const f of fns) optimiseNext(f);
    expect([...new Set(play().map((p) => p.replace(/\[\d+\]/g, '[i]')))]).toEqual([]);
  });

  it('the digit words of the Decimals built from integers are small-integer arrays, as decimal.js builds its own', () => {
    // decFromScaled's words came out as doubles (an integer computed through doubles is stored as one), so decimal.js's
    // code saw words of two elements kinds and deoptimised on the second (dcmp, 'wrong map')
    const words = (x: Dec) => (x as unknown as { d: number[] }).d;
    const cases: [number, number][] = [[12345, 4], [7, 0], [1, 4], [123456789, 2], [9007199254740991, 6], [1234567890123456, 22], [40, 1]];
    for (const [n, digits] of cases) {
      const x = decFromScaled(n, digits);
      expect(words(x)).toEqual(words(decFromPlain(x.toFixed())));
      expect(smiElements(words(x)), `${n}e-${digits}`).toBe(true);
    }
    for (const x of [0.1234, 3.5, 1234.5678, 0.0001, 12, 1e6 + 0.25]) expect(smiElements(words(decFromFixed(x, 4))), String(x)).toBe(true);
    expect(smiElements(words(decFromPlain('1234.5678')))).toBe(true);
  });

  it('addBusinessMicros stays optimised when addBusinessHours calls it (its kind argument is a small integer)', () => {
    // addBusinessHours passed `u % 3` of a u above 2^31: a double, on which addBusinessMicros, optimised on its other
    // callers' constant kinds, deoptimised ('not a Smi') and was compiled again
    const t = makeInstant(2025, 1, 6, 9, 0, 0);
    prepare(addBusinessMicros);
    for (let i = 1; i < 4; i++) addWholeBusinessHours(t, i);
    optimiseNext(addBusinessMicros);
    addWholeBusinessHours(t, 5);
    expect(turbofanned(addBusinessMicros)).toBe(true);
    const at = addBusinessHours(t, D('2.5'));
    expect(at).toBe(addBusinessMicros(t, 2.5 * 3.6e9, 0));
    expect(turbofanned(addBusinessMicros)).toBe(true);
  });
});
