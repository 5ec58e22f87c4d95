/**
 * `mkdir -p` that always returns. Node 20's `mkdirSync(dir, { recursive: true })` never returns for a path under
 * /proc (the child's mkdir fails with ENOENT, the parent's with EEXIST, and it tries again forever): `ycgym run --out
 * /proc/x` hung at 100% CPU. This walk makes each missing parent once and then the directory, and throws the
 * system's error when that fails.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

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
