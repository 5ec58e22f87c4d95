/**
 * The npm package as a user gets it: `npm pack` of this checkout installs into an empty folder and
 * `npx ycgym run --policy greedy --seeds 1 --out DIR` works there, byte-identical to the checkout's own CLI.
 *
 * Offline: instead of resolving the dependencies on the registry, the empty folder gets a lockfile holding the
 * runtime entries of this checkout's package-lock.json (exact versions and integrity), so `npm ci --offline`
 * takes the tarballs from the npm cache that `npm ci` filled when this checkout was installed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface LockEntry {
  version?: string;
  dev?: boolean;
  license?: string;
  dependencies?: Record<string, string>;
  bin?: Record<string, string>;
  engines?: Record<string, string>;
}

interface PackResult {
  filename: string;
  files: { path: string }[];
}

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}: ${err.message}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
  }
}

describe('npm pack', () => {
  let work: string;
  let pack: PackResult;

  beforeAll(() => {
    expect(existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js')), 'build first (npm run build)').toBe(true);
    work = mkdtempSync(join(tmpdir(), 'ycgym-npm-'));
    // --ignore-scripts: `prepack` would rebuild dist/ from scratch, which `make test` has just built.
    const out = run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT);
    pack = (JSON.parse(out.slice(out.indexOf('['))) as PackResult[])[0] as PackResult;
  });

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('ships the compiled CLI, library and runtime files, and no sources, tests or source maps', () => {
    const files = pack.files.map((f) => f.path);
    for (const f of ['package.json', 'README.md', 'THIRD_PARTY_NOTICES.md', 'dist/src/cli/main.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'presets/default.toml', 'schema/protocol.schema.json', 'schema/preset.schema.json', 'data/leaderboard/yc-bench-data.json']) {
      expect(files).toContain(f);
    }
    expect(files.some((f) => f.startsWith('dist/baselines/'))).toBe(true);
    const stray = files.filter((f) => f.endsWith('.map') || f.endsWith('.ts') && !f.endsWith('.d.ts') || /^(src|test|bench|scripts|bindings)\//.test(f) || f.startsWith('dist/test') || f.startsWith('dist/bench') || f.startsWith('dist/scripts'));
    expect(stray).toEqual([]);
  });

  it('installs into an empty folder and `npx ycgym run` matches the checkout byte for byte', () => {
    const app = join(work, 'app');
    const tgz = join(work, pack.filename);
    const spec = `file:${tgz}`;
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const self = lock.packages[''] as LockEntry;
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
    const packages: Record<string, unknown> = {
      '': { name: 'app', dependencies: { ycgym: spec } },
      'node_modules/ycgym': { version: self.version, resolved: spec, integrity, license: self.license, dependencies: self.dependencies, bin: self.bin, engines: self.engines },
    };
    for (const [path, entry] of Object.entries(lock.packages)) if (path !== '' && entry.dev !== true) packages[path] = entry;
    run('mkdir', ['-p', app], work);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, dependencies: { ycgym: spec } }, null, 2));
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }, null, 2));
    run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], app);

    const installed = readdirSync(join(app, 'node_modules'));
    expect(installed).toContain('ycgym');
    for (const dev of ['typescript', 'vitest', 'esbuild', 'fast-check']) expect(installed).not.toContain(dev);

    const got = join(work, 'run-npm');
    run('npx', ['--offline', 'ycgym', 'run', '--policy', 'greedy', '--seeds', '1', '--out', got, '--no-progress'], app);
    const want = join(work, 'run-checkout');
    run(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'run', '--policy', 'greedy', '--seeds', '1', '--out', want, '--no-progress'], ROOT);
    const files = readdirSync(want).sort();
    expect(files).toContain('summary.json');
    expect(readdirSync(got).sort()).toEqual(files);
    for (const f of files) expect(readFileSync(join(got, f)).equals(readFileSync(join(want, f))), f).toBe(true);

    // The library entry point resolves from the installed package.
    const lib = run(process.execPath, ['--input-type=module', '-e', "import { Env } from 'ycgym'; const e = new Env(); const r = e.reset({ seed: 1 }); console.log(typeof r.observation.status.funds_cents);"], app);
    expect(lib.trim()).toBe('number');
    // The in-process entry `ycgym/core` resolves too, and holds the env without the network client.
    const core = run(process.execPath, ['--input-type=module', '-e', "import * as c from 'ycgym/core'; const r = new c.Env().reset({ seed: 1 }); console.log(typeof r.observation.status.funds_cents, typeof c.runEpisode, 'Client' in c);"], app);
    expect(core.trim()).toBe('number function false');
    // `ycgym/arrow` reads the run's default (zstd-compressed) files, and registers the codec with apache-arrow, so
    // Arrow JS's own tableFromIPC reads them too. Without it a user had no way to read them: the codec was
    // registered only by the package's internal export code, which its exports do not reach ("Record batch is
    // compressed but codec not found").
    const read = [
      "import { readFileSync } from 'node:fs';",
      "import { tableFromIPC } from 'apache-arrow';",
      "import { readArrowFile, readParquetFile, STEP_SCHEMA } from 'ycgym/arrow';",
      `const steps = readArrowFile(${JSON.stringify(join(got, 'trajectories.arrow'))});`,
      `const episodes = tableFromIPC(readFileSync(${JSON.stringify(join(got, 'episodes.arrow'))}));`,
      "console.log(steps.numRows > 1, steps.schema.metadata.get('ycgym.schema'), episodes.numRows, episodes.get(0).policy, typeof readParquetFile, STEP_SCHEMA.fields.length === steps.schema.fields.length);",
    ].join('\n');
    expect(run(process.execPath, ['--input-type=module', '-e', read], app).trim()).toBe('true steps 1 greedy function true');
  });
});
