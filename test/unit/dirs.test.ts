/** `makeDirs`: mkdir -p that always returns (Node 20's recursive mkdir never returns for a path under /proc). */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { makeDirs } from '../../src/export/dirs.js';

describe('makeDirs', () => {
  it('makes missing parents, accepts an existing directory, and refuses a file in the way', () => {
    const root = mkdtempSync(join(tmpdir(), 'dirs-'));
    const deep = join(root, 'a', 'b', 'c');
    makeDirs(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    makeDirs(deep);
    makeDirs(`${root}/a/./b/../b`);
    writeFileSync(join(root, 'file'), 'x');
    expect(() => makeDirs(join(root, 'file'))).toThrow(/EEXIST/);
    expect(() => makeDirs(join(root, 'file', 'sub'))).toThrow(/ENOTDIR/);
  });

  it.skipIf(!existsSync('/proc/self'))('returns with ENOENT under /proc, where a recursive mkdir never returns', () => {
    expect(() => makeDirs('/proc/ycgym-no-such-dir/out')).toThrow(/ENOENT/);
    // `ycgym run --out` there: a clear error and exit status 2 (it hung at 100% CPU).
    const main = fileURLToPath(new URL('../../dist/src/cli/main.js', import.meta.url));
    const r = spawnSync(process.execPath, [main, 'run', '--policy', 'greedy', '--seeds', '1', '--out', '/proc/ycgym-no-such-dir'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/ENOENT: no such file or directory, mkdir '\/proc\/ycgym-no-such-dir'/);
  });
});
