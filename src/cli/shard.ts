/**
 * `ycgym shard`: a bulk run split into shards that run elsewhere (one Ray actor per worker, see
 * bindings/python/src/ycgym/ray/) and are merged back into exactly the files `ycgym run` writes.
 *
 * - `shard plan <run flags>` prints the run's plan (job count, run id) as one JSON line.
 * - `shard worker <run flags>` plans the run once, prints `{"event":"ready",...}`, then reads requests
 *   `{"start":A,"end":B,"out":DIR}` (one JSON object per stdin line) and plays jobs [A, B) of the plan into
 *   DIR (the files `ycgym run --format arrow` writes, without the summary: shards stage Arrow IPC whatever the
 *   run's format), answering one JSON line per request.
 * - `shard merge <run flags> --from STAGING --out DIR` checks that the shards under STAGING hold every job of
 *   the plan exactly once and writes DIR/trajectories.FORMAT, DIR/episodes.FORMAT (`--format`: arrow or
 *   parquet), DIR/rollouts/ and DIR/summary.json with the same code as `ycgym run`, so the files are
 *   byte-identical to its output.
 *
 * Every process derives the plan from the same flags (planRun), so episode ids and the run id do not
 * depend on how the run was cut.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { makeDirs, writeStaged, type StagedFiles } from '../export/dirs.js';
import { join } from 'node:path';
import { RecordBatch, RecordBatchReader } from 'apache-arrow';
import { stepSink } from '../export/arrow.js';
import { stepParquetSink } from '../export/parquet.js';
import { zstdEncoder } from '../export/zstd.js';
import type { EpisodeRow } from '../export/schema.js';
import { readEpisodes } from './report.js';
import { isRolloutFile, parquetWriters, playToDir, replacingRun, rolloutFileName, writeEpisodes, writeSummary, type RunPlan, type RunSummary } from './run.js';

/** `shard plan` output: what a driver needs to cut the run into shards. */
export interface ShardPlanInfo {
  run_id: string;
  preset: string;
  policies: string[];
  /** Number of jobs; job indices are 0..jobs-1 in (policy, seed) order. */
  jobs: number;
}

/** A worker request: play jobs [start, end) into the directory `out`. */
export interface ShardRequest {
  start: number;
  end: number;
  out: string;
}

/** A worker reply (one JSON line per request, in request order). */
export type ShardReply = { event: 'done'; start: number; end: number; episodes: number } | { event: 'error'; message: string };

/** The plan's summary for a driver. */
export function planInfo(plan: RunPlan): ShardPlanInfo {
  return { run_id: plan.wc.runId, preset: plan.wc.presetName, policies: plan.policies, jobs: plan.jobs.length };
}

/** Validate a decoded request against a plan of `jobs` jobs; returns the request or an error message. */
export function checkRequest(v: unknown, jobs: number): ShardRequest | string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'request must be a JSON object {"start": A, "end": B, "out": DIR}';
  const r = v as Record<string, unknown>;
  const { start, end, out } = r;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return 'start and end must be integers';
  if (typeof out !== 'string' || out.length === 0) return 'out must be a non-empty directory path';
  const a = start as number;
  const b = end as number;
  if (a < 0 || b <= a || b > jobs) return `need 0 <= start < end <= ${jobs}, got start=${a} end=${b}`;
  return { start: a, end: b, out };
}

/** Play one request's jobs into its directory (no summary: a shard is not a run). */
export async function playShard(plan: RunPlan, req: ShardRequest): Promise<number> {
  const played = await playToDir(plan, plan.jobs.slice(req.start, req.end), req.out, 1, false, 'arrow');
  return played.episodes.length;
}

/** Serve worker requests from `input` lines, writing one reply line per request to `write`, in order. */
export async function serveShardRequests(plan: RunPlan, lines: AsyncIterable<string>, write: (line: string) => void): Promise<void> {
  for await (const line of lines) {
    if (line.trim() === '') continue;
    let reply: ShardReply;
    try {
      let decoded: unknown;
      try {
        decoded = JSON.parse(line);
      } catch {
        throw new Error('request is not valid JSON');
      }
      const req = checkRequest(decoded, plan.jobs.length);
      if (typeof req === 'string') throw new Error(req);
      reply = { event: 'done', start: req.start, end: req.end, episodes: await playShard(plan, req) };
    } catch (e) {
      reply = { event: 'error', message: e instanceof Error ? e.message : String(e) };
    }
    write(JSON.stringify(reply));
  }
}

interface ShardContent {
  dir: string;
  episodes: EpisodeRow[];
}

function describeJob(plan: RunPlan, i: number): string {
  const j = plan.jobs[i];
  return j ? `episode ${i} (${j.policy} seed ${j.seed})` : `episode ${i}`;
}

/** Read the shards under `from` and check they hold every job of the plan exactly once; shards come back in job order. */
export function collectShards(plan: RunPlan, from: string): ShardContent[] {
  if (!existsSync(from) || !statSync(from).isDirectory()) throw new Error(`${from}: no such directory of shards`);
  const shards: ShardContent[] = [];
  for (const name of readdirSync(from).sort()) {
    const dir = join(from, name);
    if (!statSync(dir).isDirectory()) continue;
    const ep = join(dir, 'episodes.arrow');
    if (!existsSync(ep)) throw new Error(`shard ${dir} has no episodes.arrow`);
    let episodes: EpisodeRow[];
    try {
      episodes = readEpisodes(ep);
    } catch (e) {
      throw new Error(`shard ${dir}: episodes.arrow: ${(e as Error).message}`);
    }
    if (episodes.length > 0) shards.push({ dir, episodes });
  }
  shards.sort((a, b) => (a.episodes[0]?.episode_id ?? 0) - (b.episodes[0]?.episode_id ?? 0));
  const seen = new Map<number, number>();
  for (const s of shards) for (const e of s.episodes) seen.set(e.episode_id, (seen.get(e.episode_id) ?? 0) + 1);
  const n = plan.jobs.length;
  const dup = [...seen].filter(([, c]) => c > 1).map(([i]) => i).sort((a, b) => a - b);
  const missing = plan.jobs.map((j) => j.index).filter((i) => !seen.has(i));
  const extra = [...seen.keys()].filter((i) => i < 0 || i >= n || !Number.isInteger(i));
  const list = (xs: number[]): string => xs.slice(0, 5).map((i) => describeJob(plan, i)).join(', ') + (xs.length > 5 ? `, ... (${xs.length} in all)` : '');
  if (dup.length) throw new Error(`shards under ${from} hold duplicate episodes: ${list(dup)}`);
  if (missing.length) throw new Error(`shards under ${from} miss ${missing.length} of ${n} episodes: ${list(missing)}`);
  if (extra.length) throw new Error(`shards under ${from} hold episodes outside the plan: ${extra.slice(0, 5).join(', ')}`);
  let k = 0;
  for (const s of shards) {
    for (const e of s.episodes) {
      const j = plan.jobs[k];
      if (e.episode_id !== k || !j || e.policy !== j.policy || e.seed !== j.seed || e.run_id !== plan.wc.runId || e.preset !== plan.wc.presetName) {
        throw new Error(`shard ${s.dir}: row ${JSON.stringify([e.run_id, e.episode_id, e.policy, e.seed, e.preset])} does not match ${describeJob(plan, k)} of run ${plan.wc.runId} (shards from another run?)`);
      }
      k++;
    }
  }
  return shards;
}

/** Merge checked shards into DIR: the files and summary `ycgym run` writes for the same plan. */
export async function mergeShards(plan: RunPlan, from: string, out: string): Promise<{ summary: RunSummary; episodes: EpisodeRow[]; files: string[] }> {
  const shards = collectShards(plan, from);
  if (plan.format === 'arrow' && plan.compression === 'zstd') await zstdEncoder();
  makeDirs(out);
  // The merged files are staged and move into place together at the end: a merge that fails leaves --out as it was.
  return writeStaged((staged) => {
    replacingRun(staged, out);
    return mergeInto(plan, shards, out, staged);
  });
}

async function mergeInto(plan: RunPlan, shards: ShardContent[], out: string, staged: StagedFiles): Promise<{ summary: RunSummary; episodes: EpisodeRow[]; files: string[] }> {
  const files: string[] = [];
  if (plan.wc.trajectories) {
    const path = join(out, `trajectories.${plan.format}`);
    const file = staged.stage(path);
    const sink = plan.format === 'parquet' ? stepParquetSink(file) : stepSink(file, plan.compression);
    let failed = false;
    try {
      for (const s of shards) {
        const src = join(s.dir, 'trajectories.arrow');
        if (!existsSync(src)) throw new Error(`shard ${s.dir} has no trajectories.arrow`);
        const want = s.episodes.reduce((a, e) => a + e.steps + 1, 0);
        let rows = 0;
        // Batch by batch: `ycgym run` writes one batch per episode, so the merged file has the same batches.
        let reader: RecordBatchReader;
        try {
          reader = RecordBatchReader.from(readFileSync(src));
        } catch (e) {
          throw new Error(`shard ${s.dir}: trajectories.arrow: ${(e as Error).message}`);
        }
        for (const batch of reader) {
          // Read back, the timestamp's timezone is null where the schema has undefined; apache-arrow then sees
          // another schema and restarts the file. The data is the same: adopt the sink's schema.
          sink.writeBatch(new RecordBatch(sink.schema, batch.data));
          rows += batch.numRows;
          if ('drain' in sink && sink.backlog() > 8) await sink.drain();
        }
        if (rows !== want) throw new Error(`shard ${s.dir}: trajectories.arrow has ${rows} rows, its episodes need ${want}`);
      }
    } catch (e) {
      failed = true;
      throw e;
    } finally {
      try {
        await sink.close();
      } catch (e) {
        if (!failed) throw e;
      }
    }
    files.push(path);
  }
  if (plan.wc.rollouts) {
    const dir = staged.stageFolder(join(out, 'rollouts'), isRolloutFile);
    for (const s of shards) {
      for (const e of s.episodes) {
        const name = rolloutFileName(plan.wc.presetName, e);
        const src = join(s.dir, 'rollouts', name);
        if (!existsSync(src)) throw new Error(`shard ${s.dir} has no rollouts/${name}`);
        copyFileSync(src, join(dir, name));
      }
    }
  }
  const episodes = shards.flatMap((s) => s.episodes);
  const epPath = join(out, `episodes.${plan.format}`);
  if (plan.format === 'parquet') await parquetWriters();
  writeEpisodes(epPath, episodes, plan.compression, staged);
  files.push(epPath);
  const { summary, path } = writeSummary(out, episodes, plan.policies, staged);
  files.push(path);
  return { summary, episodes, files };
}
