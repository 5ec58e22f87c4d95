/**
 * Quick evaluation of a baseline: `node dist/baselines/eval.js POLICY [SEEDS] [PRESET] [KNOBS_JSON]`
 * prints final funds per seed and mean / median / worst. Used to tune the expert.
 */
import { Env, loadPreset, runEpisode } from '../src/core.js';
import { ExpertPolicy, type ExpertKnobs } from './expert.js';
import { makePolicy } from './index.js';

function seedsOf(v: string): number[] {
  const out: number[] = [];
  for (const part of v.split(',')) {
    const [a, b] = part.split('-').map(Number) as [number, number | undefined];
    for (let s = a; s <= (b ?? a); s++) out.push(s);
  }
  return out;
}

const [name = 'expert', seedArg = '1-10', presetName = 'default', knobsJson] = process.argv.slice(2);
const cfg = loadPreset(presetName);
const knobs = knobsJson ? (JSON.parse(knobsJson) as Partial<ExpertKnobs>) : undefined;
const finals: number[] = [];
let bankrupt = 0;
const t0 = performance.now();
for (const seed of seedsOf(seedArg)) {
  const policy = name === 'expert' && knobs ? new ExpertPolicy({ knobs }) : makePolicy(name);
  const env = new Env();
  const r = runEpisode(env, policy, { seed, preset: cfg, options: { max_steps: 100_000 } });
  const s = (env.simulation as NonNullable<typeof env.simulation>).state;
  let ok = 0;
  let fail = 0;
  let planned = 0;
  for (const t of s.tasks) {
    if (!t.owned) continue;
    if (t.status === 'completed_success') ok++;
    else if (t.status === 'completed_fail') fail++;
    else if (t.status === 'planned') planned++;
  }
  const payroll = s.employees.reduce((a, e) => a + e.salaryCents, 0);
  finals.push(r.finalFundsCents);
  if (r.bankrupt) bankrupt++;
  console.log(`seed ${String(seed).padStart(3)}  ${(r.finalFundsCents / 100).toFixed(0).padStart(10)}  ok ${ok} fail ${fail} planned ${planned} payroll ${(payroll / 100).toFixed(0)} steps ${r.stepCount}`);
}
const sorted = [...finals].sort((a, b) => a - b);
const mean = finals.reduce((a, b) => a + b, 0) / finals.length;
const mid = sorted.length >> 1;
const median = sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
console.log(`${name}: mean ${(mean / 100).toFixed(0)}  median ${(median / 100).toFixed(0)}  worst ${((sorted[0] ?? 0) / 100).toFixed(0)}  bankrupt ${bankrupt}  (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
