/**
 * A bulk run's worker threads started ahead (src/cli/prestart.ts): `ycgym run` and `ycgym main` start them before they
 * load the modules that run and write a run, and the run takes them. The files must be those of a run that started
 * its own workers, whatever the workers preloaded (a wrong hint costs time, never bytes); the extra ones must not be
 * left running, and workers nobody took must not keep the process alive.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyMode, poolSize, startWorkers, takeWorkers, workerScript } from '../../src/cli/prestart.js';
import { runBulk } from '../../src/cli/run.js';
import { loadedBy } from '../helpers/import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const haveWorker = existsSync(fileURLToPath(workerScript()));
const dir = mkdtempSync(join(tmpdir(), 'ycgym-prestart-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FILES = ['trajectories.arrow', 'episodes.arrow', 'summary.json'];
const spec = { policies: ['greedy', 'random'], seeds: [1, 2, 3], preset: 'default', maxSteps: 40, progress: false };

describe('worker threads started ahead of a bulk run', () => {
  beforeAll(async () => {
    if (haveWorker) await runBulk({ ...spec, workers: 2, out: join(dir, 'own') });
  });

  it('poolSize and bodyMode: the rules the run and the command share', () => {
    expect(poolSize(2, 1)).toBe(0); // one job plays in the calling thread
    expect(poolSize(1, 100)).toBe(0);
    expect(poolSize(4, 3)).toBe(3);
    expect(bodyMode(true, 'arrow', 'zstd')).toBe('zstd');
    expect(bodyMode(true, 'arrow', 'none')).toBe('none');
    expect(bodyMode(true, 'parquet', 'zstd')).toBeNull();
    expect(bodyMode(false, 'arrow', 'zstd')).toBeNull();
  });

  it.skipIf(!haveWorker)('a run takes them and writes the files of a run that started its own', async () => {
    startWorkers(2, { preset: 'default', zstd: true });
    await runBulk({ ...spec, workers: 2, out: join(dir, 'ahead') });
    for (const f of FILES) expect(readFileSync(join(dir, 'ahead', f)).equals(readFileSync(join(dir, 'own', f))), f).toBe(true);
    // All of them were taken: none is left for the next run.
    expect(takeWorkers(0, { preset: 'default', zstd: false }).workers).toEqual([]);
  });

  it.skipIf(!haveWorker)('a wrong hint (another preset, no zstd, a preset that does not exist) changes no byte', async () => {
    for (const [k, preload] of [
      [0, { preset: 'tutorial', zstd: false }],
      [1, { preset: 'no-such-preset', zstd: false }],
    ] as const) {
      startWorkers(2, preload);
      const out = join(dir, `hint${k}`);
      await runBulk({ ...spec, workers: 2, out });
      for (const f of FILES) expect(readFileSync(join(out, f)).equals(readFileSync(join(dir, 'own', f))), `${k} ${f}`).toBe(true);
    }
  });

  it.skipIf(!haveWorker)('more started than the run uses: the extra ones are terminated; fewer: the run starts the rest', async () => {
    startWorkers(3, { preset: 'default', zstd: true });
    const taken = takeWorkers(1, { preset: 'default', zstd: true });
    expect(taken.workers).toHaveLength(1);
    expect(taken.error).toBeNull();
    expect(takeWorkers(0, { preset: 'default', zstd: true }).workers).toEqual([]);
    await Promise.all(taken.workers.map((w) => w.terminate()));
    startWorkers(1, { preset: 'default', zstd: true });
    await runBulk({ ...spec, workers: 3, out: join(dir, 'more') });
    for (const f of FILES) expect(readFileSync(join(dir, 'more', f)).equals(readFileSync(join(dir, 'own', f))), f).toBe(true);
  });

  it.skipIf(!haveWorker)('workers nobody takes do not keep the process alive', () => {
    const url = pathToFileURL(join(ROOT, 'dist', 'src', 'cli', 'prestart.js')).href;
    const code = `const { startWorkers } = await import(${JSON.stringify(url)}); startWorkers(2, { preset: 'default', zstd: true }); process.stdout.write('started');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 });
    expect(r.signal).toBeNull(); // not killed by the timeout
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('started');
  });

  it("loads nothing but Node's own modules (it runs before the CLI loads what a run needs)", () => {
    const { files, packages } = loadedBy(ROOT, 'src/cli/prestart.ts');
    expect([...files]).toEqual(['src/cli/prestart.ts']);
    expect([...packages]).toEqual([]);
  });
});
