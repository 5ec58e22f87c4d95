import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataType } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { readArrowFile, recordBatch, stepBuilder } from '../../src/export/arrow.js';
import { rollout } from '../../src/export/rollout.js';
import { EPISODE_COLUMNS, STEP_COLUMNS, STEP_SCHEMA } from '../../src/export/schema.js';
import { writeReport } from '../../src/cli/report.js';
import { dispatchJobs, JOBS_AHEAD, planRun, playToDir, runBulk, type RunResult } from '../../src/cli/run.js';
import { workerScript } from '../../src/cli/prestart.js';
import type { JobRequest } from '../../src/export/jobs.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GOLDEN: Record<number, number> = { 1: 42029521, 2: 27129705, 3: -1630305 };
const haveWorker = existsSync(fileURLToPath(workerScript()));

describe('ycgym run (bulk export)', () => {
  let r1: RunResult;
  beforeAll(async () => {
    r1 = await runBulk({ policies: ['greedy', 'random'], seeds: [1, 2, 3], preset: 'default', workers: 1, out: join(dir, 'w1'), progress: false });
  });

  it('greedy reproduces the golden final funds', () => {
    for (const e of r1.episodes.filter((x) => x.policy === 'greedy')) expect(e.final_funds_cents).toBe(GOLDEN[e.seed]);
    const bankrupt = r1.episodes.find((x) => x.policy === 'greedy' && x.seed === 3);
    expect(bankrupt?.outcome).toBe('bankruptcy');
  });

  it('trajectories: schema, N+1 rows per episode, is_first/is_last, rewards sum to the funds change', () => {
    const t = readArrowFile(join(dir, 'w1', 'trajectories.arrow'));
    expect(t.schema.fields.map((f) => f.name)).toEqual(STEP_COLUMNS.map((c) => c.name));
    for (const f of t.schema.fields) expect(DataType.isDictionary(f.type)).toBe(false);
    const eps = readArrowFile(join(dir, 'w1', 'episodes.arrow'));
    expect(eps.schema.fields.map((f) => f.name)).toEqual(EPISODE_COLUMNS.map((c) => c.name));
    expect(eps.numRows).toBe(6);
    const rows = t.toArray().map((r) => r as Record<string, unknown>);
    let at = 0;
    for (const e of r1.episodes) {
      const ep = rows.slice(at, at + e.steps + 1);
      at += e.steps + 1;
      expect(ep.length).toBe(e.steps + 1);
      expect(ep.every((r) => Number(r['episode_id']) === e.episode_id && r['policy'] === e.policy && Number(r['seed']) === e.seed)).toBe(true);
      expect(ep.map((r) => Number(r['step']))).toEqual(ep.map((_, i) => i));
      expect(ep.filter((r) => r['is_first'] === true).length).toBe(1);
      expect(ep.filter((r) => r['is_last'] === true).length).toBe(1);
      expect(ep[0]?.['is_first']).toBe(true);
      expect(ep[0]?.['action']).toBeNull();
      expect(ep[0]?.['observation_text']).toBe('');
      expect(ep[ep.length - 1]?.['is_last']).toBe(true);
      expect(ep[ep.length - 1]?.['terminated']).toBe(true);
      expect(Number(ep[ep.length - 1]?.['funds_cents'])).toBe(e.final_funds_cents);
      const sum = ep.reduce((a, r) => a + Number(r['reward_cents']), 0);
      expect(sum).toBe(e.final_funds_cents - 20_000_000);
    }
    expect(at).toBe(t.numRows);
  });

  it('summary.json has the documented keys per policy', () => {
    const s = JSON.parse(readFileSync(join(dir, 'w1', 'summary.json'), 'utf8')) as Record<string, Record<string, number>>;
    expect(Object.keys(s)).toEqual(['greedy', 'random']);
    for (const v of Object.values(s)) {
      expect(Object.keys(v).sort()).toEqual(
        ['episodes', 'mean_final_funds_cents', 'median_final_funds_cents', 'min_final_funds_cents', 'max_final_funds_cents', 'bankruptcies', 'tasks_succeeded', 'tasks_failed', 'adversarial_accept_share'].sort(),
      );
    }
    expect(s['greedy']?.['episodes']).toBe(3);
    expect(s['greedy']?.['min_final_funds_cents']).toBe(-1630305);
    expect(s['greedy']?.['bankruptcies']).toBe(1);
  });

  it.skipIf(!haveWorker)('output files are byte-identical for --workers 1 and 2', async () => {
    await runBulk({ policies: ['greedy', 'random'], seeds: [1, 2, 3], preset: 'default', workers: 2, out: join(dir, 'w2'), progress: false });
    for (const f of ['trajectories.arrow', 'episodes.arrow', 'summary.json']) {
      expect(readFileSync(join(dir, 'w2', f)).equals(readFileSync(join(dir, 'w1', f))), f).toBe(true);
    }
  });

  it.skipIf(!haveWorker)('a run interrupted by Ctrl-C leaves the files of the run before it in --out as they were, and no partial file or folder', async () => {
    // A new run into a directory that holds an earlier run wrote into its trajectories.arrow from the first episode on:
    // interrupted, the directory held the new run's partial trajectories beside the old run's episodes and summary.
    const again = join(dir, 'interrupted');
    cpSync(join(dir, 'w1'), again, { recursive: true });
    const files = ['trajectories.arrow', 'episodes.arrow', 'summary.json'];
    const before = new Map(files.map((f) => [f, readFileSync(join(again, f))]));
    const listing = readdirSync(again).sort();
    const main = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
    const child = spawn(process.execPath, [main, 'run', '--policy', 'greedy', '--seeds', '1-5000', '--workers', '1', '--rollouts', '--no-progress', '--out', again], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => void (stderr += d));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    const oldSize = statSync(join(again, 'trajectories.arrow')).size;
    // Interrupted once it has written some of the new run (to the old file, or to a file of its own).
    const deadline = Date.now() + 30_000;
    const writing = (): boolean => readdirSync(again).some((f) => !listing.includes(f) && statSync(join(again, f)).size > 0) || statSync(join(again, 'trajectories.arrow')).size !== oldSize;
    while (!writing() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(writing()).toBe(true);
    child.kill('SIGINT');
    const end = await exited;
    expect(end.code ?? end.signal).toBe(130);
    expect(stderr).toContain('ycgym: stopped by SIGINT; its partial files are removed, the files already in the output directory are as they were');
    for (const f of files) expect(readFileSync(join(again, f)).equals(before.get(f) as Buffer), f).toBe(true);
    expect(readdirSync(again).sort()).toEqual(listing);
  }, 60_000);

  it('a run replaces the run files in --out: the tables of an earlier run that it does not write are removed', async () => {
    // Before, a Parquet run into a DIR holding an Arrow run left the old Arrow tables beside the new Parquet ones
    // (ycgym report read the old Arrow, ycgym.arrow.read_trajectories the new Parquet), and a --no-trajectories run
    // left the earlier run's trajectories beside its own episodes and summary.
    const out = join(dir, 'replaced');
    const tables = (): string[] => readdirSync(out).filter((f) => /^(trajectories|episodes)\./.test(f)).sort();
    const spec = { policies: ['greedy'], seeds: [1], preset: 'default', maxSteps: 5, workers: 1, out, progress: false };
    await runBulk(spec);
    expect(tables()).toEqual(['episodes.arrow', 'trajectories.arrow']);
    await runBulk({ ...spec, format: 'parquet' });
    expect(tables()).toEqual(['episodes.parquet', 'trajectories.parquet']);
    await runBulk({ ...spec, trajectories: false });
    expect(tables()).toEqual(['episodes.arrow']);
    await runBulk(spec);
    expect(tables()).toEqual(['episodes.arrow', 'trajectories.arrow']);
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it("a run replaces DIR/rollouts/ too: only its own episodes' rollout files remain, and other files there are kept", async () => {
    // Before, the rollout files of an earlier --rollouts run stayed beside the new run's (one file per preset, seed
    // and policy; the new run overwrote only those it wrote), and a run without --rollouts left them all beside its
    // own summary: the reference's tools, which read every file in the folder, mixed two runs.
    const out = join(dir, 'rollouts-replaced');
    const rollouts = (): string[] => (existsSync(join(out, 'rollouts')) ? readdirSync(join(out, 'rollouts')).sort() : []);
    const spec = { policies: ['greedy'], preset: 'default', maxSteps: 5, workers: 1, out, progress: false, rollouts: true };
    await runBulk({ ...spec, seeds: [1, 2] });
    expect(rollouts()).toEqual(['yc_bench_result_default_1_greedy.json', 'yc_bench_result_default_2_greedy.json']);
    writeFileSync(join(out, 'rollouts', 'notes.txt'), 'mine\n');
    await runBulk({ ...spec, seeds: [3] });
    expect(rollouts()).toEqual(['notes.txt', 'yc_bench_result_default_3_greedy.json']);
    await runBulk({ ...spec, seeds: [3], rollouts: false });
    expect(rollouts()).toEqual(['notes.txt']);
    rmSync(join(out, 'rollouts', 'notes.txt'));
    await runBulk({ ...spec, seeds: [4] });
    await runBulk({ ...spec, seeds: [4], rollouts: false });
    // Emptied by the run, the folder goes too.
    expect(existsSync(join(out, 'rollouts'))).toBe(false);
    expect(readdirSync(out).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('dispatchJobs hands jobs out in queue order to the worker holding the fewest (up to `ahead` each), stopping at a job canStart refuses', () => {
    const job = (index: number): JobRequest => ({ index, policy: 'greedy', seed: index });
    const queue = [0, 1, 2, 3, 4, 5, 6].map(job);
    const inFlight = [0, 0];
    const posted: [number, number][] = [];
    const post = (w: number, j: JobRequest): void => void posted.push([w, j.index]);
    dispatchJobs(queue, inFlight, JOBS_AHEAD, () => true, post);
    // The next job is with a worker before it answers the one it plays.
    expect(JOBS_AHEAD).toBe(2);
    expect(posted).toEqual([[0, 0], [1, 1], [0, 2], [1, 3]]);
    expect(inFlight).toEqual([2, 2]);
    dispatchJobs(queue, inFlight, JOBS_AHEAD, () => true, post);
    expect(posted.length).toBe(4);
    // Worker 1 answers twice (a short episode) while worker 0 still plays: the next jobs go to worker 1, not to the
    // worker whose turn a fixed assignment would make it; job 5 may not start yet (the write window), nor anything after it.
    inFlight[1] = 0;
    dispatchJobs(queue, inFlight, JOBS_AHEAD, (i) => i < 5, post);
    expect(posted.slice(4)).toEqual([[1, 4]]);
    expect(inFlight).toEqual([2, 1]);
    dispatchJobs(queue, inFlight, 3, () => true, post);
    expect(posted.slice(5)).toEqual([[1, 5], [0, 6]]);
    expect(queue).toEqual([]);
    expect(inFlight).toEqual([3, 2]);
  });

  it.skipIf(!haveWorker)('output files are byte-identical for --workers 1 and 3 with jobs handed out ahead', async () => {
    const spec = { policies: ['greedy', 'random'], seeds: [4, 5, 6, 7, 8], preset: 'default', progress: false };
    await runBulk({ ...spec, workers: 1, out: join(dir, 'ahead1') });
    await runBulk({ ...spec, workers: 3, out: join(dir, 'ahead3') });
    for (const f of ['trajectories.arrow', 'episodes.arrow', 'summary.json']) {
      expect(readFileSync(join(dir, 'ahead3', f)).equals(readFileSync(join(dir, 'ahead1', f))), f).toBe(true);
    }
  });

  it('report writes Markdown and SVG plots', async () => {
    const files = await writeReport(join(dir, 'w1'));
    expect(files.map((f) => f.split('/').pop())).toEqual(['report.md', 'funds.svg', 'prestige.svg', 'leaderboard.svg']);
    const md = readFileSync(join(dir, 'w1', 'report.md'), 'utf8');
    expect(md).toContain('| greedy | 3 |');
    expect(md).toContain('![funds over time](funds.svg)');
    // Against the paper's leaderboard: greedy's mean final funds over seeds 1-3, the bankrupt seed 3 counting as $0.
    expect(md).toContain("## Against the paper's leaderboard");
    expect(md).toContain('![funds against the leaderboard](leaderboard.svg)');
    expect(md).toContain(`| **greedy** | this run | $${Math.round((GOLDEN[1]! + GOLDEN[2]!) / 300).toLocaleString('en-US')} |`);
    expect(md).toMatch(/`greedy` \(\$230,531\) places 12 of 20 among the 19 published entries: below gemini-3-flash-preview/);
    expect(md).toContain('| claude-opus-4-6 | paper | $1,269,734 |');
    expect((readFileSync(join(dir, 'w1', 'leaderboard.svg'), 'utf8').match(/<polyline/g) ?? []).length).toBe(19 + 2);
    const svg = readFileSync(join(dir, 'w1', 'funds.svg'), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('<polyline');
  });

  it.skipIf(!haveWorker)('worker threads reuse their shared slots: 1 or 4 slots, small and growing episodes, the same bytes as one thread', async () => {
    // 16 short episodes then full ones per worker: with one slot a worker waits for every write before its next
    // episode; the full episodes outgrow the first slot sizes.
    for (const maxSteps of [6, null]) {
      const spec = { policies: maxSteps === null ? ['greedy'] : ['greedy', 'expert'], seeds: maxSteps === null ? [4, 5, 6] : Array.from({ length: 16 }, (_, k) => k + 1), preset: 'default', maxSteps };
      const plan = planRun(spec);
      const ref = join(dir, `slots-ref-${maxSteps}`);
      await playToDir(plan, plan.jobs, ref, 1, false);
      for (const slots of [1, 4]) {
        const out = join(dir, `slots-${slots}-${maxSteps}`);
        await playToDir({ ...plan, wc: { ...plan.wc, slots } }, plan.jobs, out, 2, false);
        for (const f of ['trajectories.arrow', 'episodes.arrow']) expect(readFileSync(join(out, f)).equals(readFileSync(join(ref, f))), `${f} slots=${slots} maxSteps=${maxSteps}`).toBe(true);
      }
    }
  });

  it('rollout rows match Env.step observations step for step', () => {
    const cfg = loadPreset('default');
    const b = stepBuilder();
    const r = rollout(cfg, new GreedyPolicy(), { runId: 'r', episodeId: 0, policy: 'greedy', preset: 'default', seed: 2 }, { steps: b, maxSteps: 60 });
    expect(r.episode.outcome).toBe('truncated');
    expect(r.episode.steps).toBe(60);
    const rows = recordBatch(STEP_SCHEMA, b.finish()).toArray().map((x) => x as Record<string, unknown>);
    expect(rows.length).toBe(61);
    const env = new Env();
    const first = env.reset({ seed: 2, options: { max_steps: 60 } });
    expect(Number(rows[0]?.['funds_cents'])).toBe(first.observation.status.funds_cents);
    for (let i = 1; i < rows.length; i++) {
      const row = rows[i] as Record<string, unknown>;
      const s = env.step(String(row['action']));
      const o = s.observation;
      expect(row['observation_text']).toBe(o.text);
      expect([row['ok'], row['exit_code'], row['command']]).toEqual([o.ok, o.exit_code, o.command]);
      expect([Number(row['funds_cents']), Number(row['reward_cents']), row['reward']]).toEqual([o.status.funds_cents, s.info.reward_cents, s.reward]);
      expect([Number(row['monthly_payroll_cents']), row['runway_months'], row['prestige_research'], row['active_tasks']]).toEqual([
        o.status.monthly_payroll_cents,
        o.status.runway_months,
        o.status.prestige['research'],
        o.status.active_tasks,
      ]);
      expect([row['terminated'], row['truncated']]).toEqual([s.terminated, s.truncated]);
      expect(Number(row['step'])).toBe(s.info.step);
    }
    expect(rows[60]?.['truncated']).toBe(true);
    expect(rows[60]?.['is_last']).toBe(true);
  });
});
