/**
 * Per-session Arrow recording for the server: a `reset` with `options.record = {path: "name.arrow"}` records
 * that session's episodes into `<record dir>/name.arrow` (+ `name.episodes.arrow`), in the bulk-run schema
 * (docs/trajectories.md). Several sessions may share a file; the file is completed (Arrow footer written) when
 * the last session recording into it closes, or when the server shuts down.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CloseReason, SessionHooks } from './sessions.js';
import type { EnvSnapshot, ResetOptions, ResetResult, StepResult } from '../env/env.js';
import { TrajectoryRecorder } from './recorder.js';

/** A recording file name: letters, digits, `.`, `_`, `-`, ending in `.arrow` (no directories). */
export const RECORD_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,122}\.arrow$/;

/** Why a record request is refused, or null when it can be honoured. */
export function recordProblem(dir: string | null, name: unknown, active: ReadonlySet<string>): string | null {
  if (dir === null) return '/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)';
  if (typeof name !== 'string' || !RECORD_NAME.test(name)) return '/options/record/path: must be a file name like "run1.arrow" (letters, digits, . _ -; no directories)';
  if (!active.has(name) && existsSync(join(dir, name))) return `/options/record/path: ${name} already exists in the record directory; choose another name`;
  return null;
}

/** Session hooks that route each recorded session to the recorder of its file. */
export class SessionRecording implements SessionHooks {
  private readonly recorders = new Map<string, { rec: TrajectoryRecorder; sessions: Set<string> }>();
  private readonly route = new Map<string, string>();

  constructor(readonly dir: string) {}

  /** File names currently being written (a new session may join one of them). */
  get activeFiles(): ReadonlySet<string> {
    return new Set(this.recorders.keys());
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

  onReset(e: { session: string; seed: number; preset: string; options: ResetOptions & { record?: { path: string } }; result: ResetResult }): void {
    const name = e.options.record?.path;
    if (this.route.get(e.session) !== name) this.leave(e.session);
    if (name === undefined) return;
    let r = this.recorders.get(name);
    if (!r) {
      r = { rec: new TrajectoryRecorder({ path: join(this.dir, name), runId: name.slice(0, -'.arrow'.length) }), sessions: new Set() };
      this.recorders.set(name, r);
    }
    r.sessions.add(e.session);
    this.route.set(e.session, name);
    r.rec.onReset(e);
  }

  onRestore(e: { session: string; snapshot: EnvSnapshot; result: ResetResult }): void {
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
