/**
 * Output directories and files. `makeDirs`: `mkdir -p` that always returns. Node 20's `mkdirSync(dir, { recursive: true })` never returns for a path under
 * /proc (the child's mkdir fails with ENOENT, the parent's with EEXIST, and it tries again forever): `ycgym run --out
 * /proc/x` hung at 100% CPU. This walk makes each missing parent once and then the directory, and throws the
 * system's error when that fails. `StagedFiles`: an output's files written beside their place and moved into it
 * together once complete.
 */
import { mkdirSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from 'node:fs';
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
  /** Folders whose files `owns` names this output replaces as a set, by folder (`stageFolder`, `replacingFolder`);
   * `staged`: with files of its own to move in. */
  private readonly folders = new Map<string, { owns: (name: string) => boolean; staged: boolean }>();

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

  /**
   * Stage the files of folder `dir` that `owns` names (a run's rollout files): they are written into a new staged
   * folder beside it (returned) and, on commit, replace the files of `dir` that `owns` names (an earlier output's);
   * other files in `dir` stay.
   */
  stageFolder(dir: string, owns: (name: string) => boolean): string {
    const staged = stagedPath(dir);
    rmSync(staged, { recursive: true, force: true }); // left by a process killed outright (SIGKILL)
    makeDirs(staged);
    this.folders.set(dir, { owns, staged: true });
    live.add(this);
    return staged;
  }

  /** On commit, remove the files of folder `dir` that `owns` names (an earlier output's, which this one does not
   * write), and `dir` itself when that empties it. */
  replacingFolder(dir: string, owns: (name: string) => boolean): void {
    if (!this.folders.has(dir)) this.folders.set(dir, { owns, staged: false });
  }

  /** Move every staged file into place, in the order they were staged, then remove the files they replace; then
   * the folders' files likewise. */
  commit(): void {
    for (const p of this.paths) renameSync(stagedPath(p), p);
    for (const p of this.stale) if (!this.paths.includes(p)) rmSync(p, { force: true });
    for (const [dir, f] of this.folders) {
      const old = listing(dir);
      for (const name of old) if (f.owns(name)) rmSync(join(dir, name), { force: true });
      if (f.staged) {
        makeDirs(dir);
        const from = stagedPath(dir);
        for (const name of listing(from)) renameSync(join(from, name), join(dir, name));
        rmdirSync(from);
      }
      if (old.length > 0 && listing(dir).length === 0) rmdirSync(dir);
    }
    this.clear();
  }

  /** Remove the staged files (a failed output): the files in place stay as they were. */
  discard(): void {
    for (const p of this.paths) rmSync(stagedPath(p), { force: true });
    for (const [dir, f] of this.folders) if (f.staged) rmSync(stagedPath(dir), { recursive: true, force: true });
    this.clear();
  }

  private clear(): void {
    this.paths.length = 0;
    this.stale.length = 0;
    this.folders.clear();
    live.delete(this);
  }
}

/** The names in folder `dir` ([] when there is none). */
function listing(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/**
 * Write one output through `write` with its files staged (`write` stages them, and names what of an earlier output
 * they replace): they move into place together when it returns, and are removed when it throws, leaving the files in
 * place as they were.
 */
export async function writeStaged<T>(write: (staged: StagedFiles) => Promise<T> | T): Promise<T> {
  const staged = new StagedFiles();
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
