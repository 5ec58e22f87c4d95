/**
 * Server-side recording of agent sessions into Arrow files with the bulk-run schema
 * (docs/trajectories.md): `TrajectoryRecorder` implements the session manager's `SessionHooks`, so wiring
 * it is one line:
 *
 *     new SessionManager({ ..., hooks: new TrajectoryRecorder({ path: 'out/trajectories.arrow' }) })
 *
 * and `recorder.close()` on shutdown closes the files (on disk they are always complete Arrow files: a server killed
 * while it records leaves them readable, ./arrow.ts `durable` sinks). Each session's step rows are appended as record
 * batches while its episode runs (every `flushRows` rows) and when it ends (terminated/truncated, reset again, or
 * the session closes), so memory stays bounded however long an episode runs.
 * Episode statistics (tasks succeeded/failed, accepts from adversarial clients, outcome, final funds) are read from
 * the session's live world, which the hooks hand over (a session whose environment has none is not recorded).
 * The world of an episode is kept until the episode is written, also after its session moved on or closed.
 */
import type { ResetResult, StepResult } from '../env/env.js';
import type { EnvSnapshot } from '../env/env.js';
import type { Simulation } from '../sim/index.js';
import type { CloseReason, SessionHooks } from './sessions.js';
import { episodeBuilder, episodeSink, stepBuilder, stepSink, type ArrowCompression, type ArrowFileSink, type TableBuilder } from '../export/arrow.js';
import { episodeCounts, outcomeOf, stepRow, type EpisodeMeta } from '../export/rollout.js';
import { isoToMicros, type EpisodeRow, type StepRow } from '../export/schema.js';

/**
 * Writes whole episodes (step rows + one episode row) to a pair of Arrow IPC files, their buffers zstd-compressed
 * (`compression: 'zstd'`, the encoder loaded first: `await zstdEncoder()`) or plain (`'none'`, the default).
 */
export class TrajectoryWriter {
  private readonly steps: ArrowFileSink;
  private readonly episodes: ArrowFileSink;
  private readonly sb: TableBuilder<StepRow> = stepBuilder();
  private readonly eb: TableBuilder<EpisodeRow> = episodeBuilder();
  /** Episodes written so far. */
  count = 0;
  constructor(
    readonly stepsPath: string,
    readonly episodesPath: string,
    readonly compression: ArrowCompression = 'none',
  ) {
    // Durable: a server killed while it records leaves both files readable, with the batches of all but its last moment.
    this.steps = stepSink(stepsPath, compression, true);
    this.episodes = episodeSink(episodesPath, compression, true);
  }
  /** Append step rows of an episode in progress (one record batch). */
  writeSteps(rows: readonly StepRow[]): void {
    if (rows.length === 0) return;
    for (const r of rows) this.sb.append(r);
    this.steps.writeBuffers(this.sb.finish());
  }
  /** Append one episode: its last step rows and its episode row (one record batch in each file). */
  write(rows: readonly StepRow[], episode: EpisodeRow): void {
    this.writeSteps(rows);
    this.eb.append(episode);
    this.episodes.writeBuffers(this.eb.finish());
    this.count++;
  }
  /** Write the footers and close both files. */
  close(): void {
    this.steps.close();
    this.episodes.close();
  }
}

/** Options of `TrajectoryRecorder`. */
export interface RecorderOptions {
  /** Step file (e.g. `trajectories.arrow`). */
  path: string;
  /** Episode file (default: `path` with `.arrow` replaced by `.episodes.arrow`). */
  episodesPath?: string;
  /** `run_id` of every row (default `server`). */
  runId?: string;
  /** `policy` of every row (default `agent`). */
  policy?: string;
  /** Record only these sessions (default: every session). */
  filter?: (session: string) => boolean;
  /**
   * Rows of an episode held in memory before they are written as a record batch (default 1024): an episode of any
   * length holds at most this many rows (the last one waits for its `is_last` flag).
   */
  flushRows?: number;
  /**
   * Body compression of both files (default `'none'`; `'zstd'` needs the encoder loaded: `await zstdEncoder()`).
   * `ycgym serve --record-dir` records compressed unless `--record-compression none`.
   */
  compression?: ArrowCompression;
}

/** Default `RecorderOptions.flushRows`. */
export const DEFAULT_FLUSH_ROWS = 1024;

interface Open {
  meta: EpisodeMeta;
  /** Rows not yet written (the newest always among them). */
  rows: StepRow[];
  /** Rows of the episode so far, written or not. */
  total: number;
  /** The episode's live world. */
  sim: Simulation;
}

function toRow(meta: EpisodeMeta, step: number, action: string | null, r: { observation: ResetResult['observation'] }, rewardCents: number, terminated: boolean, truncated: boolean, startUs: number): StepRow {
  const obs = r.observation;
  return stepRow(meta, step, action, obs, isoToMicros(obs.status.sim_time), rewardCents, terminated, truncated, startUs);
}

/** Records every session of a server (see the module comment). Hooks never throw for recording problems they can skip. */
export class TrajectoryRecorder implements SessionHooks {
  private readonly writer: TrajectoryWriter;
  private readonly open = new Map<string, Open>();
  private readonly runId: string;
  private readonly policy: string;
  private readonly filter: (session: string) => boolean;
  private readonly flushRows: number;
  private nextEpisode = 0;
  private closed = false;

  constructor(opts: RecorderOptions) {
    const episodesPath = opts.episodesPath ?? (opts.path.endsWith('.arrow') ? `${opts.path.slice(0, -'.arrow'.length)}.episodes.arrow` : `${opts.path}.episodes.arrow`);
    this.writer = new TrajectoryWriter(opts.path, episodesPath, opts.compression ?? 'none');
    this.runId = opts.runId ?? 'server';
    this.policy = opts.policy ?? 'agent';
    this.filter = opts.filter ?? (() => true);
    this.flushRows = opts.flushRows ?? DEFAULT_FLUSH_ROWS;
    if (!Number.isSafeInteger(this.flushRows) || this.flushRows < 1) throw new RangeError('flushRows must be a positive integer');
  }

  /** Step rows held in memory, all sessions together (at most `flushRows` per open episode). */
  get bufferedRows(): number {
    let n = 0;
    for (const o of this.open.values()) n += o.rows.length;
    return n;
  }

  /** Episodes written so far. */
  get episodesWritten(): number {
    return this.writer.count;
  }

  private start(session: string, sim: Simulation | null, step: number, result: ResetResult): void {
    this.finish(session);
    if (sim === null) return;
    const meta: EpisodeMeta = { runId: this.runId, episodeId: this.nextEpisode++, policy: this.policy, preset: sim.cfg.name, seed: sim.state.seed };
    const row = toRow(meta, step, null, result, 0, false, false, sim.state.startTime);
    row.is_first = true;
    this.open.set(session, { meta, rows: [row], total: 1, sim });
  }

  /** A new episode starts in `session`. */
  onReset(e: { session: string; result: ResetResult; sim: Simulation | null }): void {
    if (this.closed || !this.filter(e.session)) return;
    this.start(e.session, e.sim, 0, e.result);
  }

  /** An episode continues from a snapshot in `session` (recorded as a new episode starting at the snapshot's step). */
  onRestore(e: { session: string; snapshot: EnvSnapshot; result: ResetResult; sim: Simulation | null }): void {
    if (this.closed || !this.filter(e.session)) return;
    this.start(e.session, e.sim, e.snapshot.steps, e.result);
  }

  /** One step of `session`. */
  onStep(e: { session: string; action: string; result: StepResult }): void {
    const o = this.open.get(e.session);
    if (!o) return;
    const r = e.result;
    o.rows.push(toRow(o.meta, r.info.step, e.action, r, r.info.reward_cents, r.terminated, r.truncated, o.sim.state.startTime));
    o.total++;
    if (r.terminated || r.truncated) this.finish(e.session);
    else if (o.rows.length > this.flushRows) {
      // Stream: write all but the newest row (it may still become the episode's last).
      this.writer.writeSteps(o.rows.splice(0, o.rows.length - 1));
    }
  }

  /** `session` was closed: its open episode ends (truncated). */
  onClose(e: { session: string; reason: CloseReason }): void {
    this.finish(e.session);
  }

  /** End the open episode of `session`, if any, and append it to the files. */
  finish(session: string): void {
    const o = this.open.get(session);
    if (!o) return;
    this.open.delete(session);
    const last = o.rows[o.rows.length - 1] as StepRow;
    last.is_last = true;
    if (!last.terminated) last.truncated = true;
    const s = o.sim.state;
    const episode: EpisodeRow = {
      run_id: o.meta.runId,
      episode_id: o.meta.episodeId,
      seed: o.meta.seed,
      policy: o.meta.policy,
      preset: o.meta.preset,
      final_funds_cents: s.fundsCents,
      outcome: outcomeOf(o.sim),
      steps: o.total - 1,
      ...episodeCounts(o.sim),
    };
    this.writer.write(o.rows, episode);
  }

  /** End every open episode and close the files (call once, on server shutdown). */
  close(): void {
    if (this.closed) return;
    for (const s of [...this.open.keys()]) this.finish(s);
    this.closed = true;
    this.writer.close();
  }
}
