// Regenerate test/contract/fixtures/*.json from the in-process Env (run `npx tsc -p tsconfig.json` first):
//   node test/contract/gen-fixtures.mjs
// Every implementation (in-process TS, RemoteEnv over ZeroMQ, the Python binding) must replay them exactly.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Env } from '../../dist/src/env/env.js';
import { readGoldenFile } from '../../dist/src/cli/parity.js';
import { resetDigest, stepDigest } from './digest.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const outDir = join(here, 'fixtures');
const GOLDEN_OPTIONS = { start_date: '2025-01-01', company_name: 'BenchCo', horizon_years: 1 };

function goldenCommands(name) {
  const [ep] = readGoldenFile(join(root, 'test', 'fixtures', 'parity', 'trajectories', `${name}.json.gz`));
  return ep.steps.map((s) => s.cmd);
}

/** Run a script against a fresh Env, filling in what each op must produce. */
function record(script) {
  const env = new Env();
  const snaps = new Map();
  const out = [];
  for (const op of script) {
    const entry = { ...op };
    try {
      switch (op.op) {
        case 'reset': {
          const args = { seed: op.seed };
          if (op.preset !== undefined) args.preset = op.preset;
          if (op.options !== undefined) args.options = op.options;
          entry.expect = resetDigest(env.reset(args));
          break;
        }
        case 'step':
          entry.expect = stepDigest(env.step(op.action));
          break;
        case 'snapshot':
          snaps.set(op.label, JSON.parse(JSON.stringify(env.snapshot())));
          break;
        case 'restore':
          entry.expect = resetDigest(env.restore(snaps.get(op.label)));
          break;
        default:
          throw new Error(`unknown op ${op.op}`);
      }
    } catch (e) {
      if (typeof e?.code !== 'string') throw e;
      delete entry.expect;
      entry.expect_error = e.code;
    }
    out.push(entry);
  }
  return out;
}

/** Reset, then the commands until the episode ends, then one more step (which must fail with episode_over). */
function episodeScript(reset, commands, { stopAtEnd = true } = {}) {
  const probe = new Env();
  probe.reset(reset);
  const steps = [];
  for (const action of commands) {
    steps.push({ op: 'step', action });
    const r = probe.step(action);
    if (stopAtEnd && (r.terminated || r.truncated)) {
      steps.push({ op: 'step', action: 'company status' });
      break;
    }
  }
  return [{ op: 'reset', ...reset }, ...steps];
}

const fixtures = [];
const add = (name, description, script) => fixtures.push({ format: 'ycgym-contract-fixture', version: 1, name, description, script: record(script) });

const g1 = goldenCommands('traj-default-greedy-seed-1');
add(
  'greedy-default-seed-1-first-80',
  'The first 80 commands of the reference greedy baseline (default preset, seed 1, golden options).',
  [{ op: 'reset', seed: 1, preset: 'default', options: GOLDEN_OPTIONS }, ...g1.slice(0, 80).map((action) => ({ op: 'step', action }))],
);
add(
  'greedy-multi-seed-1-full',
  'The whole greedy episode on the multi preset (seed 1) up to bankruptcy, then a step after the end (episode_over).',
  episodeScript({ seed: 1, preset: 'multi', options: GOLDEN_OPTIONS }, goldenCommands('traj-multi-greedy-seed-1')),
);
add(
  'greedy-default-seed-3-bankruptcy',
  'Greedy on default seed 3 until bankruptcy, a step after the end (episode_over), then reset in the same env and continue.',
  [
    ...episodeScript({ seed: 3, preset: 'default', options: GOLDEN_OPTIONS }, goldenCommands('traj-default-greedy-seed-3')),
    { op: 'reset', seed: 3, preset: 'default', options: GOLDEN_OPTIONS },
    ...goldenCommands('traj-default-greedy-seed-3').slice(0, 3).map((action) => ({ op: 'step', action })),
  ],
);
const g2 = goldenCommands('traj-default-greedy-seed-2');
add(
  'corrected-seed-2-first-40',
  'The first 40 greedy commands of default seed 2 on the corrected preset, preset defaults for every option.',
  [{ op: 'reset', seed: 2, preset: 'corrected' }, ...g2.slice(0, 40).map((action) => ({ op: 'step', action }))],
);
const invalid = [
  '',
  '   ',
  'hello world',
  'task',
  'task accept',
  'task accept --task-id Task-99999',
  'task accept --task-id 00000000-0000-0000-0000-000000000000',
  'task assign --task-id Task-1 --employees Emp_999',
  'task dispatch --task-id Task-1',
  'task inspect --task-id nope',
  'task cancel --task-id Task-1 --reason x',
  'employee list --bogus',
  'market browse --limit -5',
  'market browse --limit abc',
  '--help',
  'task --help',
  'task accept --help',
  "scratchpad write --content 'unterminated",
  'yc-bench company status',
  'sim init --seed 5',
  'finance ledger --category nope',
  'report monthly --month 13',
  'ünïcødé 🚀 ☃',
  'company status\u0000\n\tmore',
  'x'.repeat(70000),
  'scratchpad write --content "notes: ünï 🚀"',
  'scratchpad read',
  'company status',
  'client history',
];
add(
  'invalid-commands',
  'Garbage, unknown ids, usage errors, help, over-long input: all ordinary steps (zero reward), never protocol errors.',
  [{ op: 'reset', seed: 2, preset: 'default', options: GOLDEN_OPTIONS }, ...invalid.map((action) => ({ op: 'step', action }))],
);
add(
  'usage-errors',
  'API misuse: step and snapshot before reset fail with not_reset.',
  [{ op: 'step', action: 'company status' }, { op: 'snapshot', label: 'none' }, { op: 'reset', seed: 4, preset: 'default' }, { op: 'step', action: 'company status' }],
);
add(
  'max-steps-truncation',
  'max_steps truncates (truncated true, terminal_reason max_steps), the next step is episode_over, and a reset starts over.',
  [
    { op: 'reset', seed: 1, preset: 'default', options: { ...GOLDEN_OPTIONS, max_steps: 7 } },
    ...g1.slice(0, 7).map((action) => ({ op: 'step', action })),
    { op: 'step', action: 'company status' },
    { op: 'reset', seed: 5, preset: 'default', options: { max_steps: 2, company_name: 'Other Co', horizon_years: 2, start_date: '2026-03-15' } },
    { op: 'step', action: 'sim resume' },
    { op: 'step', action: 'sim resume' },
    { op: 'step', action: 'sim resume' },
  ],
);
add(
  'snapshot-restore',
  'Snapshots at reset and mid-episode; restoring replays the same future exactly; restoring an ended episode keeps it ended.',
  [
    { op: 'reset', seed: 1, preset: 'default', options: GOLDEN_OPTIONS },
    { op: 'snapshot', label: 'start' },
    ...g1.slice(0, 40).map((action) => ({ op: 'step', action })),
    { op: 'snapshot', label: 'mid' },
    ...g1.slice(40, 60).map((action) => ({ op: 'step', action })),
    { op: 'restore', label: 'mid' },
    ...g1.slice(40, 60).map((action) => ({ op: 'step', action })),
    { op: 'restore', label: 'start' },
    ...g1.slice(0, 8).map((action) => ({ op: 'step', action })),
    { op: 'reset', seed: 1, preset: 'default', options: { ...GOLDEN_OPTIONS, max_steps: 3 } },
    ...g1.slice(0, 3).map((action) => ({ op: 'step', action })),
    { op: 'snapshot', label: 'done' },
    { op: 'restore', label: 'mid' },
    { op: 'step', action: 'company status' },
    { op: 'restore', label: 'done' },
    { op: 'step', action: 'company status' },
  ],
);

mkdirSync(outDir, { recursive: true });
for (const f of readdirSync(outDir)) if (f.endsWith('.json')) rmSync(join(outDir, f));
for (const fx of fixtures) {
  writeFileSync(join(outDir, `${fx.name}.json`), JSON.stringify(fx, null, 1) + '\n');
  const errors = fx.script.filter((s) => s.expect_error).map((s) => s.expect_error);
  console.log(`${fx.name}: ${fx.script.length} ops${errors.length ? `, errors ${errors.join(',')}` : ''}`);
}
