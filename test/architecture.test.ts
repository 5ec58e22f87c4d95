/**
 * The layering of docs/architecture.md, checked over the real import graph of src/, baselines/, bench/ and
 * scripts/ (tests may reach into any module they test). The rule checks are first shown to catch a deliberate
 * violation on a small made-up graph, so a rule that can no longer fail is noticed.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, layerGraph, reach, violations, type ImportGraph, type Rule } from './helpers/import-graph.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const SIM = 'src/sim/';
const FACADE = 'src/sim/index.ts';
const PUBLIC = 'src/index.ts';
/** The in-process public entry (no network, no Arrow): what the baselines and worker threads load. */
const CORE = 'src/core.ts';

/** The layers of the simulation, lowest first: a file may import its own layer and those below it. */
const SIM_LAYERS = ['py', 'config', 'model', 'commands', '(root)'] as const;

function simLayer(file: string): number {
  const sub = file.slice(SIM.length).split('/');
  return SIM_LAYERS.indexOf((sub.length > 1 ? sub[0] : '(root)') as (typeof SIM_LAYERS)[number]);
}

/** The top-level layer of a file (`src/<folder>`, `src/index.ts`, `baselines`, ...); null outside the picture. */
function layerOf(file: string): string | null {
  const p = file.split('/');
  if (p[0] !== 'src') return p[0] === 'baselines' ? 'baselines' : null;
  return p.length > 2 ? p[1]! : 'index';
}

/** The layers each layer may import (the picture in docs/architecture.md). */
const LAYER_DEPS: Readonly<Record<string, readonly string[]>> = {
  sim: [],
  config: ['sim'],
  env: ['sim', 'config'],
  turns: ['sim', 'config', 'env'],
  export: ['sim', 'config', 'env'],
  protocol: ['sim', 'config', 'env', 'turns'],
  server: ['sim', 'config', 'env', 'turns', 'export', 'protocol'],
  client: ['env', 'protocol'],
  cli: ['sim', 'config', 'env', 'turns', 'export', 'protocol', 'server', 'client', 'baselines'],
  index: ['sim', 'config', 'env', 'turns', 'export', 'protocol', 'server', 'client'],
  baselines: ['index'],
};

const RULES: readonly Rule[] = [
  {
    name: 'src/sim imports nothing outside src/sim',
    applies: (f) => f.startsWith(SIM),
    allowed: (t) => t.startsWith(SIM),
  },
  {
    name: 'inside src/sim a file imports only its own sub-layer and those below it (py < config < model < commands < simulation)',
    applies: (f) => f.startsWith(SIM),
    allowed: (t, f) => !t.startsWith(SIM) || simLayer(t) <= simLayer(f),
  },
  {
    name: 'outside src/sim the simulation is reached only through its facade src/sim/index.ts',
    applies: (f) => !f.startsWith(SIM),
    allowed: (t) => !t.startsWith(SIM) || t === FACADE,
  },
  {
    name: 'baselines/ import only the in-process public entry src/core.ts',
    applies: (f) => f.startsWith('baselines/'),
    allowed: (t) => t.startsWith('baselines/') || t === CORE,
  },
  {
    name: 'only the CLI composition root (src/cli) imports baselines/',
    applies: (f) => f.startsWith('src/') && !f.startsWith('src/cli/'),
    allowed: (t) => !t.startsWith('baselines/'),
  },
  {
    name: 'a layer imports only the layers below it (LAYER_DEPS)',
    applies: (f) => layerOf(f) !== null,
    allowed: (t, f) => {
      const a = layerOf(f)!;
      const b = layerOf(t);
      return b === null || b === a || (LAYER_DEPS[a] ?? []).includes(b);
    },
  },
];

const graphOf = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges));

describe('the rule checks catch violations', () => {
  it('finds an import cycle, including a file importing itself', () => {
    const g = graphOf({ 'src/a/x.ts': ['src/b/y.ts'], 'src/b/y.ts': ['src/a/x.ts'], 'src/c/z.ts': ['src/c/z.ts'], 'src/d/w.ts': ['src/a/x.ts'] });
    expect(importCycles(g)).toEqual([['src/a/x.ts', 'src/b/y.ts'], ['src/c/z.ts']]);
    expect(importCycles(layerGraph(g, layerOf))).toEqual([['a', 'b']]);
  });

  it('flags each forbidden import once per rule it breaks', () => {
    const g = graphOf({
      'src/sim/model/engine.ts': ['src/config/load.ts', 'src/sim/commands/spec.ts', 'src/sim/py/pyfloat.ts'],
      'src/sim/py/pyjson.ts': ['src/sim/model/engine.ts'],
      'src/env/env.ts': ['src/sim/simulation.ts', 'src/sim/index.ts', 'baselines/index.ts', 'src/server/server.ts'],
      'baselines/greedy.ts': ['src/env/policy.ts', 'src/index.ts', 'src/core.ts', 'baselines/bot.ts'],
      'bench/core.ts': ['src/sim/model/world-cache.ts'],
      'src/cli/run.ts': ['baselines/index.ts', 'src/sim/index.ts'],
    });
    const got = violations(g, RULES).map((v) => `${v.from} -> ${v.to}`);
    expect(got.sort()).toEqual(
      [
        'src/sim/model/engine.ts -> src/config/load.ts',
        'src/sim/model/engine.ts -> src/config/load.ts',
        'src/sim/model/engine.ts -> src/sim/commands/spec.ts',
        'src/sim/py/pyjson.ts -> src/sim/model/engine.ts',
        'src/env/env.ts -> src/sim/simulation.ts',
        'src/env/env.ts -> baselines/index.ts',
        'src/env/env.ts -> baselines/index.ts',
        'src/env/env.ts -> src/server/server.ts',
        'baselines/greedy.ts -> src/env/policy.ts',
        'baselines/greedy.ts -> src/env/policy.ts',
        'baselines/greedy.ts -> src/index.ts',
        'bench/core.ts -> src/sim/model/world-cache.ts',
      ].sort(),
    );
  });
});

describe('the source tree keeps its layers', () => {
  const graph = importGraph(ROOT, ['src', 'baselines', 'bench', 'scripts']);

  it('reads the whole tree (the scanner sees the imports)', () => {
    expect(graph.size).toBeGreaterThan(60);
    expect(graph.get('src/env/env.ts')).toContain(FACADE);
  });

  it('has no import cycle in src/', () => {
    const src = new Map([...graph].filter(([f]) => f.startsWith('src/')));
    expect(importCycles(src)).toEqual([]);
  });

  it('has no cycle between layers', () => {
    expect(importCycles(layerGraph(graph, layerOf))).toEqual([]);
  });

  it('breaks no layering rule', () => {
    expect(violations(graph, RULES)).toEqual([]);
  });

  it('the in-process entry src/core.ts reaches no network, protocol or export module (transitively), and src/index.ts re-exports it', () => {
    const seen = reach(CORE, (f) => graph.get(f) ?? []);
    const heavy = [...seen].filter((f) => ['src/server/', 'src/client/', 'src/protocol/', 'src/export/', 'src/cli/'].some((p) => f.startsWith(p)) || f === PUBLIC);
    expect(heavy).toEqual([]);
    expect(seen.size).toBeGreaterThan(20);
    expect(graph.get(PUBLIC)).toContain(CORE);
  });
});
