/**
 * The CLI loads what a command runs when the command runs: from src/cli/main.ts, the modules loaded with it (static
 * value imports, followed) include neither Arrow, Parquet, ZeroMQ nor the protocol server, so `ycgym world`,
 * `ycgym parity`, `--version` and `ycgym serve` (every Python process's local server) start without them
 * (src/cli/run-commands.ts and src/cli/serve.ts import them in their actions); neither they, a bulk-run worker nor the
 * server load ajv's schema compiler (the preset, request and snapshot validators are generated ahead of time).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadedBy, valueImports } from '../helpers/import-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the CLI entry point', () => {
  it('counts value imports and re-exports, not type-only ones or dynamic imports', () => {
    const src = [
      "import type { A } from './a.js';",
      "import { type B, type C } from './bc.js';",
      "import { d,\n  type E } from './d.js';",
      "import './side.js';",
      "export { f } from './f.js';",
      "export type { G } from './g.js';",
      "import x from 'pkg';",
      "const later = () => import('./later.js');",
    ].join('\n');
    expect(valueImports(src)).toEqual(['./d.js', './side.js', './f.js', 'pkg']);
  });

  it('loads neither Arrow, Parquet, ZeroMQ nor the server', () => {
    const { files, packages } = loadedBy(ROOT, 'src/cli/main.ts');
    expect(files.size).toBeGreaterThan(20); // the walk follows the graph
    expect(files).toContain('src/cli/run-commands.ts');
    for (const heavy of ['apache-arrow', 'parquet-wasm', 'zeromq', 'cli-progress', '@hpcc-js/wasm-zstd']) expect(packages, heavy).not.toContain(heavy);
    for (const m of ['src/cli/run.ts', 'src/cli/shard.ts', 'src/cli/report.ts', 'src/server/server.ts', 'src/export/arrow.ts', 'src/export/parquet.ts']) expect(files, m).not.toContain(m);
  });

  it("neither the CLI nor a bulk-run worker thread loads ajv's schema compiler (every validator they use is generated)", () => {
    for (const entry of ['src/cli/main.ts', 'src/cli/export-worker.ts']) {
      const { modules } = loadedBy(ROOT, entry);
      expect([...modules].filter((m) => m === 'ajv' || m.startsWith('ajv/dist/2020') || m.startsWith('ajv/dist/core')), entry).toEqual([]);
    }
  });

  it("a bulk run loads parquet-wasm only when it writes Parquet (src/cli/run.ts's parquetWriters): an Arrow run, the default, starts without it", () => {
    const { files, packages } = loadedBy(ROOT, 'src/cli/run.ts');
    expect(packages).not.toContain('parquet-wasm');
    expect(files).not.toContain('src/export/parquet.ts');
    expect(loadedBy(ROOT, 'src/export/parquet.ts').packages).toContain('parquet-wasm');
  });

  it('the modules that run those commands do load them (the check sees what it looks for)', () => {
    expect(loadedBy(ROOT, 'src/cli/run.ts').packages).toContain('apache-arrow');
    expect(loadedBy(ROOT, 'src/client/client.ts').packages).toContain('zeromq');
    expect(loadedBy(ROOT, 'scripts/gen/validators.ts').modules).toContain('ajv/dist/2020.js');
  });

  it("a server does not load ajv's schema compiler either (requests and restores use generated validators; only reply validation, a debugging option, requires it)", () => {
    const { files, modules } = loadedBy(ROOT, 'src/server/server.ts');
    expect(files).toContain('src/protocol/protocol.ts');
    expect([...modules].filter((m) => m === 'ajv' || m.startsWith('ajv/dist/2020') || m.startsWith('ajv/dist/core'))).toEqual([]);
  });

  it('a server loads ZeroMQ when it binds a socket, not at start: on the pipe transport (the local server of Python on Linux and macOS) it never does', () => {
    for (const entry of ['src/server/server.ts', 'src/server/zap.ts', 'src/server/security.ts']) {
      const { files, packages } = loadedBy(ROOT, entry);
      expect(files.size, entry).toBeGreaterThan(0);
      expect(packages, entry).not.toContain('zeromq');
    }
  });
});
