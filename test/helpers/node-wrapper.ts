/**
 * A stand-in Node.js executable for tests of benches that run a side on another node (`--against-node`): a shell
 * script that appends its arguments to a log, one line per run, then runs this process's node with them. POSIX only.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NodeWrapper {
  /** The wrapper's path (give it as the node executable). */
  readonly path: string;
  /** A path beside it where no executable is. */
  readonly missing: string;
  /** The argument lines of its runs so far, in order. */
  runs(): string[];
}

/** Run `fn` with a fresh wrapper; its folder is removed afterwards. */
export function withNodeWrapper(fn: (w: NodeWrapper) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'ycgym-node-wrapper-'));
  try {
    const log = join(dir, 'runs.log');
    const path = join(dir, 'node');
    writeFileSync(path, `#!/bin/sh\necho "$@" >> '${log}'\nexec '${process.execPath}' "$@"\n`);
    chmodSync(path, 0o755);
    fn({ path, missing: join(dir, 'no-such-node'), runs: () => readFileSync(log, 'utf8').trim().split('\n') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
