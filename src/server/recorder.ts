/**
 * Server-side recording of agent sessions into Arrow files with the bulk-run schema
 * (docs/trajectories.md): `TrajectoryRecorder` implements the session manager's `SessionHooks`, so wiring
 * it is one line:
 *
 *     new SessionManager({ ..., hooks: new TrajectoryRecorder({ path: 'out/trajectories.arrow' }) })
 *
 * and `recorder.close()` on shutdown closes the files (on disk they are always complete Arrow files: a server killed
 * while it records leaves them readable, ./arrow.ts `durable` sinks). Each session's step rows are appended as record
 * batches while its episode runs (every `flushRows` rows, sooner at the bytes of its `RecordMemory`) and when it ends (terminated/truncated, reset again, or
 * the session closes), so memory stays bounded however long an episode runs.
 * Episode statistics (tasks succeeded/failed, accepts from adversarial clients, outcome, final funds) are read from
 * the session's live world, which the hooks hand over (a session whose environment has none is not recorded).
 * The world of an episode is kept until the episode is written, also after its session moved on or closed.
 */
import type { ResetResult, StepResult } from '../env/env.js';
import type { EnvSnapshot } from '../env/env.js';
import type { Simulation } from '../sim/index.js';
import type { CloseReason, SessionHooks } from './sessions.js';
import { emptyFileBytes, episodeBuilder, episodeSink, stepBuilder, stepSink, type ArrowCompression, type ArrowFileSink, type TableBuffers, type TableBuilder } from '../export/arrow.js';
import type { RecordBatchBody } from '../export/ipc-body.js';
import { packedSize } from '../export/table-builder.js';
import type { RecordingStopped } from '../protocol/ops.js';
import { episodeCounts, outcomeOf, stepRow, type EpisodeMeta } from '../export/rollout.js';
import { EPISODE_SCHEMA, isoToMicros, STEP_SCHEMA, type EpisodeRow, type StepRow } from '../export/schema.js';

/**
 * A recording's byte budget (`TrajectoryWriter`): bytes its two files may take on disk, complete. The server's is the
 * record directory's budget and its client's share (./session-recording.ts).
 */
export interface RecordBudget {
  /** Grant `bytes` more to this recording, or say why not (the recording then stops: nothing more is written). */
  take(bytes: number): RecordingStop | null;
  /** Give back `bytes` granted but not used (the files, once complete, are smaller than the bound taken). */
  give(bytes: number): void;
}

/** Why a recording stopped: the limit that could not hold its next rows, in words naming its flag. */
export interface RecordingStop {
  reason: RecordingStopped['reason'];
  message: string;
}

/**
 * Bytes of a step batch above which `TrajectoryWriter` lets its row builder go rather than keep the buffers' capacity
 * for the next batch: a recording in progress would otherwise hold its largest batch's buffers (~34 MB after a batch
 * of full-scratchpad reads) as long as it stays open, and a server has as many in progress as sessions.
 */
const KEEP_BUILDER_BYTES = 4 * 2 ** 20;

/**
 * Writes whole episodes (step rows + one episode row) to a pair of Arrow IPC files, their buffers zstd-compressed
 * (`compression: 'zstd'`, the encoder loaded first: `await zstdEncoder()`) or plain (`'none'`, the default).
 *
 * With a `budget`, the files never grow beyond it: the bytes of each batch (and of the footers that will close the
 * files) are taken from the budget before the batch is written, and when the budget cannot hold them the writer stops:
 * both files are completed (footers written) with every batch written before, and later writes are ignored
 * (`stopped` says why). An episode is taken whole (its last step rows and its episode row together): it is in both
 * files or in neither. Below the budget the files are byte for byte those of a writer without one.
 */
export class TrajectoryWriter {
  private readonly steps: ArrowFileSink;
  private readonly episodes: ArrowFileSink;
  /** The step rows' builder: replaced after a batch above `KEEP_BUILDER_BYTES` (it keeps its buffers' capacity). */
  private sb: TableBuilder<StepRow> = stepBuilder();
  private readonly eb: TableBuilder<EpisodeRow> = episodeBuilder();
  /** Episodes written so far. */
  count = 0;
  /** Why the writer stopped before its budget would be exceeded (null: it did not). */
  stopped: RecordingStop | null = null;
  /** Bytes taken from the budget and not given back. */
  private taken = 0;
  private closed = false;
  constructor(
    readonly stepsPath: string,
    readonly episodesPath: string,
    readonly compression: ArrowCompression = 'none',
    private readonly budget: RecordBudget | null = null,
  ) {
    // Durable: a server killed while it records leaves both files readable, with the batches of all but its last moment.
    this.steps = stepSink(stepsPath, compression, true);
    this.episodes = episodeSink(episodesPath, compression, true);
    // The two files as they are now, complete: their schemas and their footers.
    this.take(this.steps.finishedBytes + this.episodes.finishedBytes);
  }

  /** Bytes of the two files once complete (exactly, once closed or stopped). */
  get bytes(): number {
    return this.steps.finishedBytes + this.episodes.finishedBytes;
  }

  /** Take `bytes` from the budget, or stop. */
  private take(bytes: number): boolean {
    if (this.stopped !== null) return false;
    if (this.budget === null) return true;
    const refused = this.budget.take(bytes);
    if (refused === null) {
      this.taken += bytes;
      return true;
    }
    this.stopped = refused;
    this.close();
    return false;
  }

  /** The step rows appended so far, as a batch's buffers; a builder that grew large is let go (`KEEP_BUILDER_BYTES`). */
  private finishSteps(): TableBuffers {
    const t = this.sb.finish();
    if (packedSize(t) > KEEP_BUILDER_BYTES) this.sb = stepBuilder();
    return t;
  }

  /** Append step rows of an episode in progress (one record batch). */
  writeSteps(rows: readonly StepRow[]): void {
    if (rows.length === 0 || this.closed) return;
    for (const r of rows) this.sb.append(r);
    const t = this.finishSteps();
    if (this.budget === null) {
      this.steps.writeBuffers(t);
      return;
    }
    const body = this.bodyOf(this.steps, t);
    if (this.take(this.steps.batchBytes(body))) this.steps.writeBody(body, this.compression);
  }
  /** Append one episode: its last step rows and its episode row (one record batch in each file). */
  write(rows: readonly StepRow[], episode: EpisodeRow): void {
    if (this.closed) return;
    for (const r of rows) this.sb.append(r);
    this.eb.append(episode);
    const st = rows.length === 0 ? null : this.finishSteps();
    const et = this.eb.finish();
    if (this.budget === null) {
      if (st !== null) this.steps.writeBuffers(st);
      this.episodes.writeBuffers(et);
    } else {
      const sBody = st === null ? null : this.bodyOf(this.steps, st);
      const eBody = this.bodyOf(this.episodes, et);
      if (!this.take((sBody === null ? 0 : this.steps.batchBytes(sBody)) + this.episodes.batchBytes(eBody))) return;
      if (sBody !== null) this.steps.writeBody(sBody, this.compression);
      this.episodes.writeBody(eBody, this.compression);
    }
    this.count++;
  }
  private bodyOf(sink: ArrowFileSink, t: TableBuffers): RecordBatchBody {
    const b = sink.bodyOf(t);
    if (b === null) throw new Error(`${sink.path}: a budgeted recording needs record batch bodies`);
    return b;
  }
  /** Write the footers and close both files; what the budget granted beyond their size is given back. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.steps.close();
    this.episodes.close();
    const unused = this.taken - this.bytes;
    if (this.budget !== null && unused > 0) {
      this.taken -= unused;
      this.budget.give(unused);
    }
  }
}

/** Bytes a `TrajectoryWriter`'s two files take before any row (what a budget grants a new recording first). */
export function emptyRecordingBytes(): number {
  return emptyFileBytes(STEP_SCHEMA) + emptyFileBytes(EPISODE_SCHEMA);
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
   * The step rows held in memory, shared with other recorders (`RecordMemory`; default: a bound of
   * `DEFAULT_MAX_BUFFERED_BYTES` of this recorder's own).
   */
  memory?: RecordMemory;
  /**
   * Body compression of both files (default `'none'`; `'zstd'` needs the encoder loaded: `await zstdEncoder()`).
   * `ycgym serve --record-dir` records compressed unless `--record-compression none`.
   */
  compression?: ArrowCompression;
  /**
   * Bytes both files may take, complete (`TrajectoryWriter`): when the next rows do not fit, the files are completed
   * with every episode written so far, and the recorder stops (`stopped`); default: no budget.
   */
  budget?: RecordBudget;
}

/** Default `RecorderOptions.flushRows`. */
export const DEFAULT_FLUSH_ROWS = 1024;

/** Default `RecordMemory` bound: 64 MiB of step rows not yet written, every open episode together. */
export const DEFAULT_MAX_BUFFERED_BYTES = 64 * 2 ** 20;

/** What a step row is counted for besides its strings (`rowBytes`): its ~35 fields and trust list. */
const ROW_FIXED_BYTES = 512;

/** The bytes a step row is counted for while it waits to be written: two a character of its text and action, and a fixed cost. */
function rowBytes(text: string, action: string | null): number {
  return ROW_FIXED_BYTES + 2 * (text.length + (action?.length ?? 0));
}

/**
 * The step rows held in memory by the recorders that share it (a server's: every recording): their bytes (`rowBytes`)
 * and the bound above which a recorder writes the rows of the episode it is given a step of (all but the newest), so
 * that together they hold at most the bound, a row, and the newest row of each open episode. Rows with large outputs
 * (a full scratchpad, `finance ledger`, `market browse --limit 200`) are thus written before `flushRows`; below the
 * bound the files are those of `flushRows` alone.
 */
export class RecordMemory {
  /** Bytes of the rows held now. */
  heldBytes = 0;
  constructor(readonly maxBytes: number = DEFAULT_MAX_BUFFERED_BYTES) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new RangeError('RecordMemory maxBytes must be a positive integer');
  }
}

interface Open {
  meta: EpisodeMeta;
  /** Rows not yet written (the newest always among them), and their `rowBytes`. */
  rows: StepRow[];
  bytes: number;
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
  private readonly memory: RecordMemory;
  private nextEpisode = 0;
  private closed = false;

  constructor(opts: RecorderOptions) {
    const episodesPath = opts.episodesPath ?? (opts.path.endsWith('.arrow') ? `${opts.path.slice(0, -'.arrow'.length)}.episodes.arrow` : `${opts.path}.episodes.arrow`);
    this.writer = new TrajectoryWriter(opts.path, episodesPath, opts.compression ?? 'none', opts.budget ?? null);
    this.runId = opts.runId ?? 'server';
    this.policy = opts.policy ?? 'agent';
    this.filter = opts.filter ?? (() => true);
    this.flushRows = opts.flushRows ?? DEFAULT_FLUSH_ROWS;
    if (!Number.isSafeInteger(this.flushRows) || this.flushRows < 1) throw new RangeError('flushRows must be a positive integer');
    this.memory = opts.memory ?? new RecordMemory();
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

  /** Why the recording stopped at its budget (its files complete, nothing more recorded), or null. */
  get stopped(): RecordingStop | null {
    return this.writer.stopped;
  }

  /** Bytes of the two files once complete (exactly, once closed or stopped). */
  get bytes(): number {
    return this.writer.bytes;
  }

  /** After a write: a writer stopped by its budget ends the recording (its open episodes are not recorded). */
  private checkStopped(): void {
    if (this.writer.stopped === null || this.closed) return;
    for (const o of this.open.values()) this.memory.heldBytes -= o.bytes;
    this.open.clear();
    this.closed = true;
  }

  private start(session: string, sim: Simulation | null, step: number, result: ResetResult): void {
    this.finish(session);
    if (sim === null) return;
    const meta: EpisodeMeta = { runId: this.runId, episodeId: this.nextEpisode++, policy: this.policy, preset: sim.cfg.name, seed: sim.state.seed };
    const row = toRow(meta, step, null, result, 0, false, false, sim.state.startTime);
    row.is_first = true;
    const bytes = rowBytes(result.observation.text, null);
    this.memory.heldBytes += bytes;
    this.open.set(session, { meta, rows: [row], bytes, total: 1, sim });
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
    const row = toRow(o.meta, r.info.step, e.action, r, r.info.reward_cents, r.terminated, r.truncated, o.sim.state.startTime);
    const bytes = rowBytes(r.observation.text, e.action);
    o.rows.push(row);
    o.bytes += bytes;
    this.memory.heldBytes += bytes;
    o.total++;
    if (r.terminated || r.truncated) this.finish(e.session);
    else if (o.rows.length > this.flushRows || (this.memory.heldBytes > this.memory.maxBytes && o.rows.length > 1)) {
      // Stream: write all but the newest row (it may still become the episode's last).
      this.writer.writeSteps(o.rows.splice(0, o.rows.length - 1));
      this.memory.heldBytes -= o.bytes - bytes;
      o.bytes = bytes;
      this.checkStopped();
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
    this.memory.heldBytes -= o.bytes;
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
    this.checkStopped();
  }

  /** End every open episode and close the files (call once, on server shutdown). */
  close(): void {
    if (!this.closed) for (const s of [...this.open.keys()]) this.finish(s);
    this.closed = true;
    this.writer.close();
  }
}
