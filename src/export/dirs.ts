/**
 * Output directories and files. `makeDirs`: `mkdir -p` that always returns. Node 20's `mkdirSync(dir, { recursive: true })` never returns for a path under
 * /proc (the child's mkdir fails with ENOENT, the parent's with EEXIST, and it tries again forever): `ycgym run --out
 * /proc/x` hung at 100% CPU. This walk makes each missing parent once and then the directory, and throws the
 * system's error when that fails. `StagedFiles`: an output's files written beside their place and moved into it
 * together once complete.
 */
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** Make `dir` and its missing parents (an existing directory is fine); throws the system's error otherwise. */
export function makeDirs(dir: string): void {
  const path = resolve(dir);
  try {
    mkdirSync(path);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && statSync(path).isDirectory()) return;
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path) throw e;
    makeDirs(parent);
  }
  // The parent exists now: one more try, whose failure (ENOENT under /proc, say) is the answer.
  try {
    mkdirSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST' && statSync(path).isDirectory()) return; // made meanwhile
    throw e;
  }
}

/** Where an output file is written until the whole output is complete: a hidden file beside it (the same directory,
 * so moving it into place is one rename on one filesystem). */
export function stagedPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.partial`);
}

/** Staged files not yet committed or discarded, of every output of this thread (what a signal handler removes). */
const live = new Set<StagedFiles>();

/**
 * The files of one output (a run's trajectories, episodes and summary), written under their staged paths and moved
 * into place together once all are written: a run that fails or is interrupted leaves the files already there (an
 * earlier run's) as they were, instead of its own partial trajectories beside the earlier run's episodes and summary.
 */
export class StagedFiles {
  private readonly paths: string[] = [];
  private readonly stale: string[] = [];

  /** Stage `path`; returns where to write it. */
  stage(path: string): string {
    this.paths.push(path);
    live.add(this);
    return stagedPath(path);
  }

  /** Remove `paths` (where they exist) when the staged files are committed: files of an earlier output they replace. */
  replacing(paths: readonly string[]): void {
    this.stale.push(...paths);
  }

  /** Move every staged file into place, in the order they were staged, then remove the files they replace. */
  commit(): void {
    for (const p of this.paths) renameSync(stagedPath(p), p);
    for (const p of this.stale) if (!this.paths.includes(p)) rmSync(p, { force: true });
    this.paths.length = 0;
    this.stale.length = 0;
    live.delete(this);
  }

  /** Remove the staged files (a failed output): the files in place stay as they were. */
  discard(): void {
    for (const p of this.paths) rmSync(stagedPath(p), { force: true });
    this.paths.length = 0;
    this.stale.length = 0;
    live.delete(this);
  }
}

/**
 * Write one output through `write` with its files staged (`write` stages them): they move into place together when it
 * returns, and are removed when it throws, leaving the files in place as they were. `replacing`: files of an earlier
 * output that the commit removes (`StagedFiles.replacing`).
 */
export async function writeStaged<T>(write: (staged: StagedFiles) => Promise<T> | T, replacing: readonly string[] = []): Promise<T> {
  const staged = new StagedFiles();
  staged.replacing(replacing);
  let result: T;
  try {
    result = await write(staged);
  } catch (e) {
    staged.discard();
    throw e;
  }
  staged.commit();
  return result;
}

/** Discard every output still being written (for a SIGINT or SIGTERM handler, before the process exits); returns
 * how many outputs were. */
export function discardStaged(): number {
  const outputs = [...live];
  for (const s of outputs) s.discard();
  return outputs.length;
}
