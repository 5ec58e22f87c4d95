/**
 * Build the self-contained server tree that the Python wheel ships (`ycgym/_server/` inside the wheel):
 *
 *   package.json             name "ycgym" and the version: `packageRoot()` and `hello` read it
 *   server.json              what this tree holds (version, protocol, one ZeroMQ addon per platform)
 *   dist/src/cli/main.js     the `ycgym` CLI bundled by esbuild with every npm dependency but zeromq
 *   dist/...                 the `ycgym run` worker thread, bundled to the path `workerScript()` resolves
 *   presets/, schema/, data/ the runtime files `packageRoot()` resolves (data/: the published leaderboard)
 *   node_modules/zeromq/     zeromq's own JavaScript, unmodified, with `build/manifest.json` and the prebuilt
 *                            addons it lists (the best one per os/arch/libc); cmake-ts's loader picks one at run time
 *   node_modules/parquet-wasm/  package.json and the WebAssembly module (`--format parquet`; its JS is bundled)
 *   THIRD_PARTY_LICENSES.md  licence texts of everything bundled
 *
 * Every platform's addon is kept here; the Python build (`bindings/python/setup.py`) keeps only the one of the
 * wheel it builds. The output is a pure function of the checkout (no time stamps), so an sdist and a wheel built
 * from it are reproducible. Needs `npm run build` first (it bundles tsc's output, the code the tests run).
 *
 * Usage: `node dist/scripts/package/bundle-server.js --out DIR` (DIR must be absent, empty, or an earlier output).
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { packageRoot } from '../../src/config/load.js';
import { workerScript } from '../../src/cli/prestart.js';
import { PROTOCOL_VERSION } from '../../src/protocol/protocol.js';

/** File that marks a directory as this script's output (so `--out` never wipes anything else). */
const MARKER = 'server.json';

/** One prebuilt addon of the zeromq package, as its build manifest describes it. */
export interface AddonEntry {
  readonly os: string;
  readonly arch: string;
  readonly libc: string;
  /** Node ABI the addon was built against (N-API addons load on any later Node). */
  readonly abi: number;
  /** Path of the addon relative to `zeromq/build/` (the manifest's spelling, `\` on Windows). */
  readonly path: string;
  /** The manifest key (a JSON object as text) that cmake-ts's loader parses. */
  readonly key: string;
}

interface ManifestKey {
  os?: unknown;
  arch?: unknown;
  libc?: unknown;
  abi?: unknown;
}

/** The addons of a zeromq build manifest, the highest ABI per (os, arch, libc) — the one cmake-ts's loader tries first. */
export function bestAddons(manifest: Readonly<Record<string, string>>): AddonEntry[] {
  const best = new Map<string, AddonEntry>();
  for (const key of Object.keys(manifest).sort()) {
    const k = JSON.parse(key) as ManifestKey;
    const path = manifest[key];
    if (typeof k.os !== 'string' || typeof k.arch !== 'string' || typeof k.libc !== 'string' || typeof k.abi !== 'number' || path === undefined) continue;
    const e: AddonEntry = { os: k.os, arch: k.arch, libc: k.libc, abi: k.abi, path, key };
    const id = `${e.os}-${e.arch}-${e.libc}`;
    const cur = best.get(id);
    if (cur === undefined || e.abi > cur.abi) best.set(id, e);
  }
  return [...best.values()].sort((a, b) => (a.os + a.arch + a.libc < b.os + b.arch + b.libc ? -1 : 1));
}

function packageDir(root: string, name: string): string {
  return join(root, 'node_modules', ...name.split('/'));
}

function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

function copy(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

/** Copy `entry` of a CommonJS package and every file it reaches through relative `require`s; returns bare specifiers it requires. */
function copyRequireGraph(pkgDir: string, entry: string, outPkgDir: string): string[] {
  const bare = new Set<string>();
  const seen = new Set<string>();
  const todo = [resolve(pkgDir, entry)];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    copy(file, join(outPkgDir, relative(pkgDir, file)));
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/require\("([^"]+)"\)/g)) {
      const spec = m[1] as string;
      if (spec.startsWith('.')) {
        const base = resolve(dirname(file), spec);
        const cand = [base, `${base}.js`, join(base, 'index.js')].find((p) => existsSync(p) && statSync(p).isFile());
        if (cand === undefined) throw new Error(`${relative(pkgDir, file)} requires ${spec}, which does not exist`);
        todo.push(cand);
      } else {
        bare.add(spec);
      }
    }
  }
  return [...bare].sort();
}

const LICENSE_FILE = /^(licen[cs]e|copying|notice)([._-].*)?$/i;

interface Licensed {
  name: string;
  version: string;
  license: string;
  texts: { file: string; text: string }[];
}

function licenseOf(dir: string): Licensed {
  const pkg = readJson(join(dir, 'package.json'));
  const files = readdirSync(dir)
    .filter((f) => LICENSE_FILE.test(f) && statSync(join(dir, f)).isFile())
    .sort();
  return {
    name: String(pkg['name']),
    version: String(pkg['version']),
    license: typeof pkg['license'] === 'string' ? pkg['license'] : 'see package',
    texts: files.map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8').trimEnd() })),
  };
}

/** The package directories (`.../node_modules/NAME`) of the bundle's inputs, outermost match per input. */
function inputPackages(root: string, inputs: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const input of inputs) {
    const parts = resolve(root, input).split(sep);
    const i = parts.lastIndexOf('node_modules');
    if (i < 0) continue;
    const scoped = (parts[i + 1] ?? '').startsWith('@');
    dirs.add(parts.slice(0, i + (scoped ? 3 : 2)).join(sep));
  }
  return [...dirs].sort();
}

function licensesText(root: string, pkgs: Licensed[]): string {
  const out = [
    '# Third-party licences of the bundled ycgym server',
    '',
    'The server in this directory is ycgym (Apache-2.0) bundled with the npm packages listed below. Their',
    'licence texts follow, as each package ships them. ycgym itself also contains code derived from the',
    'software listed in its THIRD_PARTY_NOTICES.md, reproduced at the end.',
    '',
  ];
  for (const p of pkgs) {
    out.push(`## ${p.name} ${p.version} (${p.license})`, '');
    if (p.texts.length === 0) out.push('(The package ships no licence file; its package.json declares the licence above.)', '');
    for (const t of p.texts) out.push(`${t.file}:`, '', '```', t.text, '```', '');
  }
  out.push('---', '', readFileSync(join(root, 'THIRD_PARTY_NOTICES.md'), 'utf8').trimEnd(), '');
  return out.join('\n');
}

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => (d.isDirectory() ? listFiles(join(dir, d.name), base) : [relative(base, join(dir, d.name)).split(sep).join('/')]))
    .sort();
}

/** Build the server tree into `out` (see the module comment); returns its `server.json` content. */
export async function bundleServer(out: string): Promise<Record<string, unknown>> {
  const root = packageRoot();
  const mainJs = join(root, 'dist', 'src', 'cli', 'main.js');
  const workerJs = fileURLToPath(workerScript());
  for (const f of [mainJs, workerJs]) if (!existsSync(f)) throw new Error(`${f} is missing: run \`npm run build\` first`);
  if (existsSync(out) && readdirSync(out).length > 0) {
    if (!existsSync(join(out, MARKER))) throw new Error(`refusing to overwrite ${out}: not empty and not an earlier bundle (no ${MARKER})`);
    rmSync(out, { recursive: true, force: true });
  }
  mkdirSync(out, { recursive: true });

  const entryPoints: Record<string, string> = {};
  for (const f of [mainJs, workerJs]) entryPoints[relative(root, f).replace(/\.js$/, '').split(sep).join('/')] = f;
  const result = await build({
    absWorkingDir: root,
    entryPoints,
    outdir: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // zeromq finds its native addon relative to its own files: it stays a package beside the bundle.
    external: ['zeromq'],
    // Bundled CommonJS dependencies `require` Node built-ins; an ES module has no `require` of its own.
    banner: { js: "import { createRequire as __ycgymCreateRequire } from 'node:module';\nconst require = __ycgymCreateRequire(import.meta.url);" },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });

  for (const dir of ['presets', 'schema', 'data']) for (const f of listFiles(join(root, dir))) copy(join(root, dir, f), join(out, dir, f));
  const rootPkg = readJson(join(root, 'package.json'));
  const version = String(rootPkg['version']);
  const pkg = { name: rootPkg['name'], version, description: rootPkg['description'], type: 'module', license: rootPkg['license'], private: true };
  writeFileSync(join(out, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');

  // zeromq: its JavaScript unmodified, its manifest restricted to the addons copied.
  const zmqDir = packageDir(root, 'zeromq');
  const zmqOut = join(out, 'node_modules', 'zeromq');
  const zmqPkg = readJson(join(zmqDir, 'package.json'));
  copy(join(zmqDir, 'package.json'), join(zmqOut, 'package.json'));
  const externals = copyRequireGraph(zmqDir, String(zmqPkg['main']), zmqOut);
  const manifest = readJson(join(zmqDir, 'build', 'manifest.json')) as Record<string, string>;
  const addons = bestAddons(manifest);
  const kept: Record<string, string> = {};
  for (const a of addons) {
    const rel = a.path.split('\\').join('/');
    copy(join(zmqDir, 'build', rel), join(zmqOut, 'build', rel));
    kept[a.key] = a.path;
  }
  writeFileSync(join(zmqOut, 'build', 'manifest.json'), JSON.stringify(kept, null, 2) + '\n');
  // parquet-wasm: its JavaScript is bundled; src/export/parquet.ts loads the WebAssembly module through
  // node_modules resolution, so the package's manifest (its exports map) and that one file ship beside the bundle.
  const pqDir = packageDir(root, 'parquet-wasm');
  const pqOut = join(out, 'node_modules', 'parquet-wasm');
  copy(join(pqDir, 'package.json'), join(pqOut, 'package.json'));
  copy(join(pqDir, 'esm', 'parquet_wasm_bg.wasm'), join(pqOut, 'esm', 'parquet_wasm_bg.wasm'));
  const licensedDirs = new Set(inputPackages(root, Object.keys(result.metafile.inputs)));
  licensedDirs.add(zmqDir);
  for (const spec of externals) {
    if (spec.startsWith('node:') || !spec.includes('/')) continue; // built-ins (events, path)
    const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
    const dir = packageDir(root, name);
    const sub = spec.slice(name.length + 1);
    const pkgOut = join(out, 'node_modules', ...name.split('/'));
    copy(join(dir, 'package.json'), join(pkgOut, 'package.json'));
    const inner = copyRequireGraph(dir, `${sub}.js`, pkgOut);
    const unexpected = inner.filter((s) => s.includes('/') && !s.startsWith('node:'));
    if (unexpected.length > 0) throw new Error(`${spec} requires packages this script does not ship: ${unexpected.join(', ')}`);
    licensedDirs.add(dir);
  }
  const licensed = [...licensedDirs].sort().map(licenseOf);
  writeFileSync(join(out, 'THIRD_PARTY_LICENSES.md'), licensesText(root, licensed));

  const files = listFiles(out);
  const digest = createHash('sha256');
  for (const f of files) digest.update(f).update('\0').update(readFileSync(join(out, f)));
  const info = {
    name: 'ycgym-server',
    version,
    protocol: PROTOCOL_VERSION,
    entry: 'dist/src/cli/main.js',
    entries: Object.keys(entryPoints).map((e) => `${e}.js`),
    addons: addons.map((a) => ({ os: a.os, arch: a.arch, libc: a.libc, abi: a.abi, path: a.path })),
    bundled_packages: licensed.map((p) => `${p.name}@${p.version}`),
    sha256: digest.digest('hex'),
  };
  writeFileSync(join(out, MARKER), JSON.stringify(info, null, 2) + '\n');
  return info;
}

function parseArgs(argv: readonly string[]): { out: string } {
  let out: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out' && argv[i + 1] !== undefined) out = resolve(argv[++i] as string);
    else throw new Error(`usage: bundle-server --out DIR (got ${JSON.stringify(a)})`);
  }
  if (out === undefined) throw new Error('usage: bundle-server --out DIR');
  return { out };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const { out } = parseArgs(process.argv.slice(2));
    const info = await bundleServer(out);
    process.stdout.write(`bundled ycgym ${String(info['version'])} server into ${out} (${(info['addons'] as unknown[]).length} platform addons)\n`);
  } catch (e) {
    process.stderr.write(`bundle-server: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
