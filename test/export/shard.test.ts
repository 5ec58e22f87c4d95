import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planRun, runBulk, type RunSpec } from '../../src/cli/run.js';
import { loadPreset, presetConfig } from '../../src/config/load.js';
import { checkRequest, mergeShards, planInfo, playShard, serveShardRequests, type ShardReply } from '../../src/cli/shard.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-shard-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Short episodes keep the many cuts cheap; two policies make the job list cross a policy boundary.
const SPEC: RunSpec = { policies: ['greedy', 'random'], seeds: [1, 2, 3, 4], preset: 'default', maxSteps: 25, rollouts: true };
const FILES = ['trajectories.arrow', 'episodes.arrow', 'summary.json'];

async function* linesOf(xs: string[]): AsyncIterable<string> {
  for (const x of xs) yield x;
}

/** Play the plan cut at `cuts` into STAGING/<name>/, one shard per range. */
async function playCuts(staging: string, cuts: number[], spec: RunSpec = SPEC): Promise<void> {
  const plan = planRun(spec);
  const bounds = [0, ...cuts, plan.jobs.length];
  for (let k = 0; k + 1 < bounds.length; k++) {
    // Names in reverse job order: the merge must order shards by their episodes, not by name.
    await playShard(plan, { start: bounds[k] as number, end: bounds[k + 1] as number, out: join(staging, `s${String(99 - k).padStart(2, '0')}`) });
  }
}

describe('ycgym shard (a run cut into shards and merged back)', () => {
  const ref = join(dir, 'ref');
  beforeAll(async () => {
    await runBulk({ ...SPEC, workers: 1, out: ref, progress: false });
  });

  it("the plan's config is the preset's validated, frozen config (episodes do not validate it again)", () => {
    const plan = planRun(SPEC);
    // A config presetConfig already knows comes back as is; an unfrozen copy (loadPreset) was compared deeply with
    // its validated copy at every episode's Simulation.create.
    expect(presetConfig(plan.cfg)).toBe(plan.cfg);
    expect(Object.isFrozen(plan.cfg.world)).toBe(true);
    expect(plan.cfg).toEqual(loadPreset(SPEC.preset));
  });

  it('the plan names the run id and job count of ycgym run', () => {
    const info = planInfo(planRun(SPEC));
    const row = JSON.parse(readFileSync(join(ref, 'summary.json'), 'utf8')) as Record<string, unknown>;
    expect(Object.keys(row)).toEqual(info.policies);
    expect(info.jobs).toBe(8);
    expect(info.run_id).toMatch(/^run-[0-9a-f]{12}$/);
    expect(planInfo(planRun({ ...SPEC, runId: 'mine' })).run_id).toBe('mine');
  });

  it('merged files are byte-identical to ycgym run for any cut of the jobs', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: 7 }), { maxLength: 7 }), async (raw) => {
        const cuts = [...raw].sort((a, b) => a - b);
        const run = join(dir, `cut${n++}`);
        await playCuts(join(run, 'staging'), cuts);
        await mergeShards(planRun(SPEC), join(run, 'staging'), join(run, 'out'));
        for (const f of FILES) expect(readFileSync(join(run, 'out', f)).equals(readFileSync(join(ref, f))), `${f} with cuts ${cuts.join(',')}`).toBe(true);
        const rollouts = readdirSync(join(ref, 'rollouts')).sort();
        expect(readdirSync(join(run, 'out', 'rollouts')).sort()).toEqual(rollouts);
        for (const r of rollouts) expect(readFileSync(join(run, 'out', 'rollouts', r)).equals(readFileSync(join(ref, 'rollouts', r)))).toBe(true);
      }),
      { numRuns: 6, seed: 11, examples: [[[]], [[1, 2, 3, 4, 5, 6, 7]]] },
    );
  });

  it('without trajectories the merge writes episodes and summary only', async () => {
    const spec: RunSpec = { ...SPEC, trajectories: false, rollouts: false };
    const run = join(dir, 'notraj');
    await runBulk({ ...spec, workers: 1, out: join(run, 'ref'), progress: false });
    await playCuts(join(run, 'staging'), [5], spec);
    const r = await mergeShards(planRun(spec), join(run, 'staging'), join(run, 'out'));
    expect(r.files.map((f) => f.split('/').pop())).toEqual(['episodes.arrow', 'summary.json']);
    for (const f of ['episodes.arrow', 'summary.json']) expect(readFileSync(join(run, 'out', f)).equals(readFileSync(join(run, 'ref', f)))).toBe(true);
  });

  it('refuses duplicate, missing and foreign episodes', async () => {
    const plan = planRun(SPEC);
    const base = join(dir, 'bad');
    await playCuts(join(base, 'ok'), [4]);
    const variant = (name: string, drop?: string): string => {
      const d = join(base, name);
      cpSync(join(base, 'ok'), d, { recursive: true });
      if (drop) rmSync(join(d, drop), { recursive: true });
      return d;
    };
    const dup = variant('dup');
    await playShard(plan, { start: 3, end: 5, out: join(dup, 'again') });
    await expect(mergeShards(plan, dup, join(base, 'o1'))).rejects.toThrow(/duplicate episodes: episode 3 \(greedy seed 4\), episode 4 \(random seed 1\)/);
    const miss = variant('miss', 's98');
    await expect(mergeShards(plan, miss, join(base, 'o2'))).rejects.toThrow(/miss 4 of 8 episodes: episode 4 \(random seed 1\)/);
    const other = join(base, 'other');
    await playCuts(other, [4], { ...SPEC, runId: 'another-run' });
    await expect(mergeShards(plan, other, join(base, 'o3'))).rejects.toThrow(/does not match episode 0 \(greedy seed 1\) of run run-/);
    const noTraj = variant('notraj', join('s99', 'trajectories.arrow'));
    await expect(mergeShards(plan, noTraj, join(base, 'o4'))).rejects.toThrow(/has no trajectories.arrow/);
    await expect(mergeShards(plan, join(base, 'nowhere'), join(base, 'o5'))).rejects.toThrow(/no such directory of shards/);
  });

  it('a failed merge leaves the files already in --out as they were and no partial file; a bad shard file is named', async () => {
    const plan = planRun(SPEC);
    const base = join(dir, 'failed-merge');
    await playCuts(join(base, 'ok'), [4]);
    const out = join(base, 'out');
    await mergeShards(plan, join(base, 'ok'), out);
    const before = new Map(FILES.map((f) => [f, readFileSync(join(out, f))]));
    const listing = readdirSync(out).sort();
    // Shard s98 (the jobs from 4 on) with a trajectories file that is not Arrow: found after s99's rows were merged.
    const junkTraj = join(base, 'junk-traj');
    cpSync(join(base, 'ok'), junkTraj, { recursive: true });
    writeFileSync(join(junkTraj, 's98', 'trajectories.arrow'), 'junk');
    await expect(mergeShards(plan, junkTraj, out)).rejects.toThrow(/s98.*trajectories\.arrow/);
    for (const f of FILES) expect(readFileSync(join(out, f)).equals(before.get(f) as Buffer), f).toBe(true);
    expect(readdirSync(out).sort()).toEqual(listing);
    const junkEp = join(base, 'junk-ep');
    cpSync(join(base, 'ok'), junkEp, { recursive: true });
    writeFileSync(join(junkEp, 's99', 'episodes.arrow'), 'junk');
    await expect(mergeShards(plan, junkEp, out)).rejects.toThrow(/shard .*s99: episodes\.arrow: not an Arrow IPC file/);
    expect(readdirSync(out).sort()).toEqual(listing);
    // A shard without one of its rollout files, found after the other shard's were copied: DIR/rollouts/ as it was
    // (its files here an earlier run's, other bytes under the same names: the merge overwrote them one by one).
    const rollouts = readdirSync(join(out, 'rollouts')).sort();
    for (const f of rollouts) writeFileSync(join(out, 'rollouts', f), `{"earlier run": "${f}"}\n`);
    const rolloutBytes = new Map(rollouts.map((f) => [f, readFileSync(join(out, 'rollouts', f))]));
    const noRollout = join(base, 'no-rollout');
    cpSync(join(base, 'ok'), noRollout, { recursive: true });
    const dropped = readdirSync(join(noRollout, 's98', 'rollouts')).sort()[0] as string;
    rmSync(join(noRollout, 's98', 'rollouts', dropped));
    await expect(mergeShards(plan, noRollout, out)).rejects.toThrow(`has no rollouts/${dropped}`);
    expect(readdirSync(out).sort()).toEqual(listing);
    expect(readdirSync(join(out, 'rollouts')).sort()).toEqual(rollouts);
    for (const f of rollouts) expect(readFileSync(join(out, 'rollouts', f)).equals(rolloutBytes.get(f) as Buffer), f).toBe(true);
  });

  it('the worker answers bad requests with errors and keeps serving', async () => {
    const plan = planRun(SPEC);
    const out = join(dir, 'worker');
    mkdirSync(out, { recursive: true });
    const replies: ShardReply[] = [];
    await serveShardRequests(
      plan,
      linesOf(['not json', '[1,2]', '{"start":0,"end":9,"out":"x"}', '{"start":1.5,"end":2,"out":"x"}', '{"start":0,"end":1,"out":""}', '', JSON.stringify({ start: 2, end: 4, out: join(out, 'a') })]),
      (l) => replies.push(JSON.parse(l) as ShardReply),
    );
    expect(replies).toEqual([
      { event: 'error', message: 'request is not valid JSON' },
      { event: 'error', message: 'request must be a JSON object {"start": A, "end": B, "out": DIR}' },
      { event: 'error', message: 'need 0 <= start < end <= 8, got start=0 end=9' },
      { event: 'error', message: 'start and end must be integers' },
      { event: 'error', message: 'out must be a non-empty directory path' },
      { event: 'done', start: 2, end: 4, episodes: 2 },
    ]);
    expect(checkRequest({ start: 7, end: 8, out: 'd' }, 8)).toEqual({ start: 7, end: 8, out: 'd' });
  });
});
