/**
 * The CLI loads what a command runs when the command runs: from src/cli/main.ts, the modules reached by static
 * (non-type) imports do not include Arrow, Parquet, ZeroMQ or the protocol server, so `ycgym world`, `ycgym parity`,
 * `--version` and `ycgym serve` (every Python process's local server) start without them (./run-commands.ts,
 * ./serve.ts import them in their actions).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Specifiers of a TypeScript module's static value imports and re-exports (`import type` and `export type` left out). */
export function staticImports(source: string): string[] {
  const out: string[] = [];
  // `import X from '...'`, `import { ... } from '...'` (over several lines), `import '...'`, `export { ... } from '...'`, `export * from '...'`.
  const re = /^(import|export)\s+(?!type\s|')([^;]*?)\bfrom\s+'([^']+)'|^import\s+'([^']+)'/gm;
  for (let m = re.exec(source); m !== null; m = re.exec(source)) {
    const spec = m[3] ?? m[4];
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

/** Every module (project files by path, packages by name) statically reachable from `entry`. */
function reachable(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const f = todo.pop() as string;
    if (files.has(f)) continue;
    files.add(f);
    for (const spec of staticImports(readFileSync(f, 'utf8'))) {
      if (spec.startsWith('.')) todo.push(resolve(dirname(f), spec.replace(/\.js$/, '.ts')));
      else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));
    }
  }
  return { files, packages };
}

describe('the CLI entry point', () => {
  it('reads static imports, not type-only ones', () => {
    const src = "import type { A } from './a.js';\nimport { b,\n  c } from './b.js';\nimport './side.js';\nexport { d } from './d.js';\nexport type { E } from './e.js';\nimport x from 'pkg';";
    expect(staticImports(src)).toEqual(['./b.js', './side.js', './d.js', 'pkg']);
  });

  it('reaches neither Arrow, Parquet, ZeroMQ nor the server statically', () => {
    const { files, packages } = reachable(join(ROOT, 'src', 'cli', 'main.ts'));
    expect(files.size).toBeGreaterThan(20); // the walk follows the graph (a regex that found nothing would pass)
    expect(files).toContain(join(ROOT, 'src', 'cli', 'run-commands.ts'));
    for (const heavy of ['apache-arrow', 'parquet-wasm', 'zeromq', 'cli-progress', '@hpcc-js/wasm-zstd']) expect(packages, heavy).not.toContain(heavy);
    for (const module of ['cli/run.ts', 'cli/shard.ts', 'cli/report.ts', 'server/server.ts', 'export/arrow.ts', 'export/parquet.ts']) {
      expect(files, module).not.toContain(join(ROOT, 'src', module));
    }
  });

  it('the modules that run those commands do reach them (the check sees what it looks for)', () => {
    expect(reachable(join(ROOT, 'src', 'cli', 'run.ts')).packages).toContain('apache-arrow');
    expect(reachable(join(ROOT, 'src', 'server', 'server.ts')).packages).toContain('zeromq');
  });
});
