/**
 * Per-session Arrow recording for the server: a `reset` with `options.record = {path: "name.arrow"}` records
 * that session's episodes into `<record dir>/name.arrow` (+ `name.episodes.arrow`), in the bulk-run schema
 * (docs/trajectories.md). Several sessions of one client may share a file; the file is completed (Arrow footer
 * written) when the last session recording into it closes, or when the server shuts down. Rows are written as they
 * come (a record batch every `flushRows` rows), so a recording holds a bounded amount of memory.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CloseReason, SessionHooks } from './sessions.js';
import type { EnvSnapshot, ResetOptions, ResetResult, StepResult } from '../env/env.js';
import type { RecorderOptions, TrajectoryRecorder } from './recorder.js';
import type { Simulation } from '../sim/index.js';

/** A recording file name: letters, digits, `.`, `_`, `-`, ending in `.arrow` (no directories). */
export const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,122}\.arrow$/;

/** The two files a recording named `name` writes: its steps (`name`) and its episodes (`<stem>.episodes.arrow`). */
export function recordFiles(name: string): [string, string] {
  return [name, `${name.slice(0, -'.arrow'.length)}.episodes.arrow`];
}

/**
 * Why a record request of `client` is refused, or null when it can be honoured. A name whose files collide with an
 * existing file or another recording's files (`a.episodes.arrow` is the episode file of `a.arrow`), and a
 * recording in progress of another client, are refused: two recordings never write the same file.
 */
export function recordProblem(dir: string | null, name: unknown, active: ReadonlyMap<string, string>, client = ''): string | null {
  if (dir === null) return '/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)';
  if (typeof name !== 'string' || !RECORD_NAME.test(name)) return '/options/record/path: must be a file name like "run1.arrow" (letters, digits, . _ -; no directories)';
  const owner = active.get(name);
  if (owner !== undefined) return owner === client ? null : `/options/record/path: ${name} is being recorded by another client; choose another name`;
  const activeFiles = new Set([...active.keys()].flatMap(recordFiles));
  for (const f of recordFiles(name)) {
    if (activeFiles.has(f)) return `/options/record/path: ${name} would write ${f}, a file of a recording in progress; choose another name`;
    if (existsSync(join(dir, f))) return `/options/record/path: ${name} would write ${f}, which already exists in the record directory; choose another name`;
  }
  return null;
}

/** Session hooks that route each recorded session to the recorder of its file. */
export class SessionRecording implements SessionHooks {
  private readonly recorders = new Map<string, { rec: TrajectoryRecorder; sessions: Set<string>; owner: string }>();
  private readonly route = new Map<string, string>();
  /**
   * `recorder` is the recorder class (`TrajectoryRecorder` of ./recorder.ts), passed in so that this module does not
   * load the Arrow writer: a server without a record directory never does.
   */
  constructor(
    readonly dir: string,
    private readonly recorder: new (opts: RecorderOptions) => TrajectoryRecorder,
    private readonly recorderOptions: Pick<RecorderOptions, 'flushRows' | 'compression'> = {},
  ) {}

  /** Recordings in progress: file name -> the client that started it (its sessions may join it). */
  get active(): ReadonlyMap<string, string> {
    return new Map([...this.recorders].map(([name, r]) => [name, r.owner]));
  }

  private leave(session: string): void {
    const name = this.route.get(session);
    if (name === undefined) return;
    this.route.delete(session);
    const r = this.recorders.get(name);
    if (!r) return;
    r.rec.finish(session);
    r.sessions.delete(session);
    if (r.sessions.size === 0) {
      r.rec.close();
      this.recorders.delete(name);
    }
  }

  onReset(e: { session: string; client?: string; seed: number; preset: string; options: ResetOptions & { record?: { path: string } }; result: ResetResult; sim: Simulation | null }): void {
    const name = e.options.record?.path;
    if (this.route.get(e.session) !== name) this.leave(e.session);
    if (name === undefined) return;
    let r = this.recorders.get(name);
    if (!r) {
      r = { rec: new this.recorder({ ...this.recorderOptions, path: join(this.dir, name), runId: name.slice(0, -'.arrow'.length) }), sessions: new Set(), owner: e.client ?? '' };
      this.recorders.set(name, r);
    }
    r.sessions.add(e.session);
    this.route.set(e.session, name);
    r.rec.onReset(e);
  }

  onRestore(e: { session: string; snapshot: EnvSnapshot; result: ResetResult; sim: Simulation | null }): void {
    const name = this.route.get(e.session);
    if (name !== undefined) this.recorders.get(name)?.rec.onRestore(e);
  }

  onStep(e: { session: string; action: string; result: StepResult }): void {
    const name = this.route.get(e.session);
    if (name !== undefined) this.recorders.get(name)?.rec.onStep(e);
  }

  onClose(e: { session: string; reason: CloseReason }): void {
    this.leave(e.session);
  }

  /** Complete every file (server shutdown). */
  close(): void {
    for (const s of [...this.route.keys()]) this.leave(s);
  }
}
