/**
 * The reliability tests fork compiled entry points (a server child with --expose-gc, client workers). When
 * dist/ is up to date for them (e.g. after `npm run build`, once the build includes scripts/), they use it.
 * Otherwise `ensureBuilt()` compiles scripts/reliability into a private directory
 * (node_modules/.cache/ycgym-reliability, never the shared dist/, which other processes may be running
 * from) and points the suite at it through YCGYM_RELIABILITY_DIST. One build at a time across parallel test
 * files; every wait is bounded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../scripts/reliability/lib/util.js';

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) tsFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** True when every reliability entry exists under `base` and no compiled file there is older than its source. */
function fresh(base: string): boolean {
  const out = (src: string): string => join(base, relative(ROOT, src)).replace(/\.ts$/, '.js');
  const mine = tsFiles(join(ROOT, 'scripts', 'reliability'));
  if (!mine.every((src) => existsSync(out(src)) && statSync(out(src)).mtimeMs >= statSync(src).mtimeMs)) return false;
  // Library files: those compiled into `base` must not be older than their source (a changed file that now
  // imports a new one is itself newer, so a missing output of a new import is caught through its importer).
  return tsFiles(join(ROOT, 'src')).every((src) => !existsSync(out(src)) || statSync(out(src)).mtimeMs >= statSync(src).mtimeMs);
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Make the compiled reliability entry points available (see the module comment). */
export function ensureBuilt(): void {
  if (fresh(join(ROOT, 'dist'))) {
    delete process.env['YCGYM_RELIABILITY_DIST'];
    return;
  }
  const priv = join(ROOT, 'node_modules', '.cache', 'ycgym-reliability');
  process.env['YCGYM_RELIABILITY_DIST'] = priv;
  if (fresh(priv)) return;
  mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
  const lock = `${priv}.lock`;
  const deadline = Date.now() + 240_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`could not take ${lock} (remove it if no build is running)`);
      sleepSync(200);
    }
  }
  try {
    if (fresh(priv)) return;
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'scripts', 'reliability', 'tsconfig.json'), '--outDir', priv], {
        cwd: ROOT,
        stdio: 'pipe',
        timeout: 200_000,
      });
    } catch (e) {
      // Type errors elsewhere still emit; only a missing output is fatal.
      if (!existsSync(join(priv, 'scripts', 'reliability', 'server-child.js'))) throw e;
    }
  } finally {
    rmdirSync(lock);
  }
}
