/**
 * Per-session Arrow recording for the server: a `reset` with `options.record = {path: "name.arrow"}` records
 * that session's episodes into `<record dir>/name.arrow` (+ `name.episodes.arrow`), in the bulk-run schema
 * (docs/trajectories.md). Several sessions of one client may share a file; the file is completed (Arrow footer
 * written) when the last session recording into it closes, or when the server shuts down. Rows are written as they
 * come (a record batch every `flushRows` rows of an episode, and sooner while the rows every recording holds reach
 * the bytes of their shared `RecordMemory`), so the recordings hold a bounded amount of memory.
 *
 * Disk is bounded too (`RecordQuota`): the recordings this server started together stay within the record directory's
 * budget (`serve --record-max-mib`), those of one client within its share (`--record-client-mib`), and a client has at
 * most `--record-max-per-client` recordings in progress. A reset asking to record beyond them is `record_limit`; a
 * recording whose next rows the budget cannot hold is completed with the rows written so far (`TrajectoryWriter`) and
 * its sessions go on unrecorded, each told once in its next result (`recording_stopped`, src/protocol/ops.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CloseReason, SessionHooks } from './sessions.js';
import type { EnvSnapshot, ResetOptions, ResetResult, StepResult } from '../env/env.js';
import type { RecordBudget, RecorderOptions, RecordingStop, TrajectoryRecorder } from './recorder.js';
import type { RecordingNote, RecordingStopped } from '../protocol/ops.js';
import { DEFAULT_MAX_RECORDINGS_PER_CLIENT, DEFAULT_RECORD_CLIENT_BYTES, DEFAULT_RECORD_MAX_BYTES } from '../protocol/limits.js';
import type { Simulation } from '../sim/index.js';

/** A recording file name: letters, digits, `.`, `_`, `-`, ending in `.arrow` (no directories). */
export const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,122}\.arrow$/;

/** The two files a recording named `name` writes: its steps (`name`) and its episodes (`<stem>.episodes.arrow`). */
export function recordFiles(name: string): [string, string] {
  return [name, `${name.slice(0, -'.arrow'.length)}.episodes.arrow`];
}

/** A refusal of a record request: `invalid_request` (the name) or `record_limit` (a quota). */
export type RecordRefusal = { code: 'invalid_request' | 'record_limit'; message: string };

/**
 * Why a record request of `client` is refused, or null when it can be honoured. A name whose files collide with an
 * existing file or another recording's files (`a.episodes.arrow` is the episode file of `a.arrow`), and a
 * recording in progress of another client, are refused: two recordings never write the same file. A new recording
 * is refused when `quota` says so (the client's recordings in progress, the bytes left).
 */
export function recordProblem(dir: string | null, name: unknown, active: ReadonlyMap<string, string>, client = '', quota: RecordQuota | null = null): RecordRefusal | null {
  const invalid = (message: string): RecordRefusal => ({ code: 'invalid_request', message });
  if (dir === null) return invalid('/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)');
  if (typeof name !== 'string' || !RECORD_NAME.test(name)) return invalid('/options/record/path: must be a file name like "run1.arrow" (letters, digits, . _ -; no directories)');
  const owner = active.get(name);
  if (owner !== undefined) return owner === client ? null : invalid(`/options/record/path: ${name} is being recorded by another client; choose another name`);
  const activeFiles = new Set([...active.keys()].flatMap(recordFiles));
  for (const f of recordFiles(name)) {
    if (activeFiles.has(f)) return invalid(`/options/record/path: ${name} would write ${f}, a file of a recording in progress; choose another name`);
    if (existsSync(join(dir, f))) return invalid(`/options/record/path: ${name} would write ${f}, which already exists in the record directory; choose another name`);
  }
  if (quota === null) return null;
  let mine = 0;
  for (const o of active.values()) if (o === client) mine++;
  const refused = quota.refusal(client, mine);
  return refused === null ? null : { code: 'record_limit', message: refused };
}

/** Limits of `RecordQuota` (bytes; `serve` takes MiB). */
export interface RecordLimits {
  /** Bytes of every recording this server starts, together (`--record-max-mib`). */
  maxBytes?: number;
  /** Bytes of one client's recordings, together (`--record-client-mib`; at most `maxBytes`). */
  clientBytes?: number;
  /** Recordings of one client in progress at once (`--record-max-per-client`). */
  maxPerClient?: number;
}

function mibText(n: number): string {
  const m = n / 2 ** 20;
  return Number.isInteger(m) ? `${m} MiB` : `${n} bytes`;
}

/**
 * The byte budget of a server's recordings and each client's share of it. Bytes are taken before they are written
 * (a recording's files, complete, never exceed what it took) and are never returned once written: the budget counts
 * what this server wrote to the record directory since it started, finished recordings included.
 */
export class RecordQuota {
  readonly maxBytes: number;
  readonly clientBytes: number;
  readonly maxPerClient: number;
  /** Bytes taken, all clients together, and per client. */
  private used = 0;
  private readonly usedBy = new Map<string, number>();
  /**
   * `minBytes`: the bytes of an empty recording (its two files with their schemas and footers, `emptyRecordingBytes`):
   * a new recording is refused when the budget or the client's share has less left.
   */
  constructor(
    limits: RecordLimits,
    readonly minBytes: number,
  ) {
    this.maxBytes = limits.maxBytes ?? DEFAULT_RECORD_MAX_BYTES;
    this.clientBytes = Math.min(limits.clientBytes ?? DEFAULT_RECORD_CLIENT_BYTES, this.maxBytes);
    this.maxPerClient = limits.maxPerClient ?? DEFAULT_MAX_RECORDINGS_PER_CLIENT;
    for (const [k, v] of [['maxBytes', this.maxBytes], ['clientBytes', this.clientBytes], ['maxPerClient', this.maxPerClient]] as const) {
      if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`record ${k} must be a positive integer`);
    }
  }

  /** Bytes taken, all clients together (`client` given: that client's). */
  usedBytes(client?: string): number {
    return client === undefined ? this.used : (this.usedBy.get(client) ?? 0);
  }

  private serverLimit(): string {
    return `the record directory's budget of ${mibText(this.maxBytes)} (\`ycgym serve --record-max-mib\`), ${this.used} bytes used`;
  }
  private clientLimit(client: string): string {
    return `this client's share of ${mibText(this.clientBytes)} (\`ycgym serve --record-client-mib\`), ${this.usedBytes(client)} bytes used`;
  }

  /** Why `client`, with `inProgress` recordings, may not start another one, or null. */
  refusal(client: string, inProgress: number): string | null {
    if (inProgress >= this.maxPerClient) {
      return `/options/record: this client has ${inProgress} recordings in progress, its limit (\`ycgym serve --record-max-per-client\`, ${this.maxPerClient}); close the sessions of one first`;
    }
    if (this.maxBytes - this.used < this.minBytes) return `/options/record: no room for another recording: ${this.serverLimit()}`;
    if (this.clientBytes - this.usedBytes(client) < this.minBytes) return `/options/record: no room for another recording: ${this.clientLimit(client)}`;
    return null;
  }

  /** The budget of one recording of `client`, named `name` (for the messages). */
  budget(client: string, name: string): RecordBudget {
    return {
      take: (bytes: number): RecordingStop | null => {
        if (this.used + bytes > this.maxBytes) return { reason: 'server_budget', message: `recording ${name} stopped: ${this.serverLimit()} cannot hold its next ${bytes} bytes; its files hold every episode written before` };
        const mine = this.usedBytes(client);
        if (mine + bytes > this.clientBytes) return { reason: 'client_budget', message: `recording ${name} stopped: ${this.clientLimit(client)} cannot hold its next ${bytes} bytes; its files hold every episode written before` };
        this.used += bytes;
        this.usedBy.set(client, mine + bytes);
        return null;
      },
      give: (bytes: number): void => {
        this.used -= bytes;
        const left = this.usedBytes(client) - bytes;
        if (left > 0) this.usedBy.set(client, left);
        else this.usedBy.delete(client);
      },
    };
  }
}

/** Session hooks that route each recorded session to the recorder of its file. */
export class SessionRecording implements SessionHooks {
  private readonly recorders = new Map<string, { rec: TrajectoryRecorder; sessions: Set<string>; owner: string }>();
  private readonly route = new Map<string, string>();
  /** Sessions of a recording stopped at its budget that have not been told yet, and what to tell them. */
  private readonly notices = new Map<string, RecordingStopped>();
  /**
   * Recordings stopped at their budget, by name: their owner and the note. A reset of the owner asking to record into one
   * again is not refused (its files exist: any other name would be): it plays unrecorded and its result carries the
   * note, so an env whose reset options name a recording goes on after the stop instead of failing every reset.
   */
  private readonly stoppedNames = new Map<string, { owner: string; note: RecordingStopped }>();
  /**
   * `recorder` is the recorder class (`TrajectoryRecorder` of ./recorder.ts), passed in so that this module does not
   * load the Arrow writer: a server without a record directory never does. `quota`: the byte budgets (none: unbounded).
   */
  constructor(
    readonly dir: string,
    private readonly recorder: new (opts: RecorderOptions) => TrajectoryRecorder,
    private readonly recorderOptions: Pick<RecorderOptions, 'flushRows' | 'compression' | 'memory'> = {},
    readonly quota: RecordQuota | null = null,
  ) {}

  /** Recordings in progress: file name -> the client that started it (its sessions may join it). */
  get active(): ReadonlyMap<string, string> {
    return new Map([...this.recorders].map(([name, r]) => [name, r.owner]));
  }

  /** Why a record request of `client` for `name` is refused, or null (`recordProblem` with this server's state). */
  problem(name: unknown, client: string): RecordRefusal | null {
    if (typeof name === 'string' && this.stoppedNames.get(name)?.owner === client && !this.recorders.has(name)) return null;
    return recordProblem(this.dir, name, this.active, client, this.quota);
  }

  /** After a recorder wrote: when its budget stopped it, it ends and each of its sessions is told (`notices`). */
  private checkStopped(name: string): void {
    const r = this.recorders.get(name);
    const stop = r?.rec.stopped;
    if (r === undefined || stop === null || stop === undefined) return;
    r.rec.close();
    this.recorders.delete(name);
    const note: RecordingStopped = { path: name, reason: stop.reason, message: stop.message, bytes: r.rec.bytes };
    this.stoppedNames.set(name, { owner: r.owner, note });
    for (const s of r.sessions) {
      this.route.delete(s);
      this.notices.set(s, note);
    }
  }

  /** The note for `session`'s result: its recording's stop, once. */
  noteFor(session: string): RecordingNote | undefined {
    const n = this.notices.get(session);
    if (n === undefined) return undefined;
    this.notices.delete(session);
    return { recording_stopped: n };
  }

  private leave(session: string): void {
    const name = this.route.get(session);
    if (name === undefined) return;
    this.route.delete(session);
    const r = this.recorders.get(name);
    if (!r) return;
    r.rec.finish(session);
    // Its last episode may be what the budget could not hold: it is told too (in the result of the reset or restore
    // that made it leave; a closed session's notice is dropped).
    this.checkStopped(name);
    r.sessions.delete(session);
    if (r.sessions.size === 0 && this.recorders.get(name) === r) {
      r.rec.close();
      this.recorders.delete(name);
    }
  }

  onReset(e: { session: string; client?: string; seed: number; preset: string; options: ResetOptions & { record?: { path: string } }; result: ResetResult; sim: Simulation | null }): void {
    const name = e.options.record?.path;
    if (this.route.get(e.session) !== name) this.leave(e.session);
    if (name !== undefined) {
      let r = this.recorders.get(name);
      const stopped = r === undefined ? this.stoppedNames.get(name) : undefined;
      if (stopped !== undefined && stopped.owner === (e.client ?? '')) {
        // Its recording stopped at its budget (`problem` let the owner's reset through): unrecorded, and told so.
        this.notices.set(e.session, stopped.note);
        return;
      }
      if (!r) {
        const owner = e.client ?? '';
        const budget = this.quota?.budget(owner, name);
        r = { rec: new this.recorder({ ...this.recorderOptions, path: join(this.dir, name), runId: name.slice(0, -'.arrow'.length), ...(budget !== undefined ? { budget } : {}) }), sessions: new Set(), owner };
        this.recorders.set(name, r);
      }
      r.sessions.add(e.session);
      this.route.set(e.session, name);
      r.rec.onReset(e);
      this.checkStopped(name);
    }
  }

  onRestore(e: { session: string; snapshot: EnvSnapshot; result: ResetResult; sim: Simulation | null }): void {
    const name = this.route.get(e.session);
    if (name !== undefined) {
      this.recorders.get(name)?.rec.onRestore(e);
      this.checkStopped(name);
    }
  }

  onStep(e: { session: string; action: string; result: StepResult }): void {
    const name = this.route.get(e.session);
    if (name !== undefined) {
      this.recorders.get(name)?.rec.onStep(e);
      this.checkStopped(name);
    }
  }

  onClose(e: { session: string; reason: CloseReason }): void {
    this.leave(e.session);
    this.notices.delete(e.session);
  }

  /** Complete every file (server shutdown). */
  close(): void {
    for (const s of [...this.route.keys()]) this.leave(s);
  }
}
