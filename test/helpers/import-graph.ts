/**
 * The relative-import graph of the project's TypeScript sources, read with the TypeScript compiler's own import
 * scanner (`ts.preProcessFile`: static, type-only, re-export and dynamic imports), and the layering rules of
 * docs/architecture.md checked over it. Paths are repo-relative with `/` separators.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import ts from 'typescript';

/** File -> the repo-relative files it imports (relative specifiers only; packages are not edges). */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

function walk(root: string, dir: string, out: string[]): void {
  for (const name of readdirSync(join(root, dir)).sort()) {
    const rel = posix.join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) walk(root, rel, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
}

/** Resolve `spec` imported by `from` (NodeNext style: `./x.js` names `./x.ts`); throws on a dangling import. */
function resolveSpec(root: string, from: string, spec: string): string {
  const target = relative(root, join(root, dirname(from), spec)).split(sep).join('/');
  const candidates = target.endsWith('.js') ? [target.slice(0, -3) + '.ts', target] : [target, target + '.ts'];
  for (const c of candidates) if (existsSync(join(root, c)) && statSync(join(root, c)).isFile()) return c;
  throw new Error(`${from}: cannot resolve import ${JSON.stringify(spec)}`);
}

/** The import graph of every `.ts` file under `dirs` (repo-relative folders of `root`), in sorted order. */
export function importGraph(root: string, dirs: readonly string[]): ImportGraph {
  const files: string[] = [];
  for (const d of dirs) walk(root, d, files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const info = ts.preProcessFile(readFileSync(join(root, f), 'utf8'), true, true);
    const specs = info.importedFiles.map((i) => i.fileName).filter((s) => s.startsWith('.'));
    graph.set(f, [...new Set(specs.map((s) => resolveSpec(root, f, s)))].sort());
  }
  return graph;
}

/** Every node reached from `start` (itself included), following `next`. */
export function reach(start: string, next: (node: string) => readonly string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [start];
  while (todo.length > 0) {
    const f = todo.pop() as string;
    if (seen.has(f)) continue;
    seen.add(f);
    todo.push(...next(f));
  }
  return seen;
}

/**
 * The modules a file loads when it is loaded: its `import` and `export ... from` declarations as written (relative
 * specifiers and package names), without `import type`, `export type` and declarations whose every binding is a type
 * (the compiler drops them), and without dynamic `import()` (loaded when it runs). Read with the compiler's parser.
 * An import whose bindings are only used as types is dropped by the compiler too but counted here: a check that a
 * module is not loaded errs on the safe side.
 */
export function valueImports(source: string): string[] {
  const sf = ts.createSourceFile('x.ts', source, ts.ScriptTarget.Latest, false);
  const out: string[] = [];
  const allTypes = (elements: readonly { isTypeOnly: boolean }[]): boolean => elements.length > 0 && elements.every((e) => e.isTypeOnly);
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st)) {
      const c = st.importClause;
      if (c !== undefined && (c.isTypeOnly || (c.name === undefined && c.namedBindings !== undefined && ts.isNamedImports(c.namedBindings) && allTypes(c.namedBindings.elements)))) continue;
      out.push((st.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(st) && st.moduleSpecifier !== undefined && !st.isTypeOnly) {
      if (st.exportClause !== undefined && ts.isNamedExports(st.exportClause) && allTypes(st.exportClause.elements)) continue;
      out.push((st.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  return out;
}

/**
 * The project files (repo-relative), packages (by name) and package modules (as imported, e.g. `ajv/dist/2020.js`)
 * that loading `entry` loads: `valueImports` followed.
 */
export function loadedBy(root: string, entry: string): { files: Set<string>; packages: Set<string>; modules: Set<string> } {
  const packages = new Set<string>();
  const modules = new Set<string>();
  const files = reach(entry, (f) => {
    const next: string[] = [];
    for (const spec of valueImports(readFileSync(join(root, f), 'utf8'))) {
      if (spec.startsWith('.')) next.push(resolveSpec(root, f, spec));
      else if (!spec.startsWith('node:')) {
        modules.add(spec);
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));
      }
    }
    return next;
  });
  return { files, packages, modules };
}

/** Strongly connected components with more than one file (or a file importing itself): the import cycles. */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm; sorted input keeps the output order stable.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** The graph collapsed to layers: `layerOf` names a file's layer (null: not part of the picture). */
export function layerGraph(graph: ImportGraph, layerOf: (file: string) => string | null): ImportGraph {
  const out = new Map<string, Set<string>>();
  for (const [from, tos] of graph) {
    const a = layerOf(from);
    if (a === null) continue;
    if (!out.has(a)) out.set(a, new Set());
    for (const to of tos) {
      const b = layerOf(to);
      if (b !== null && b !== a) out.get(a)!.add(b);
    }
  }
  return new Map([...out].map(([k, v]) => [k, [...v].sort()]));
}

/** One import that breaks a rule. */
export interface Violation {
  readonly from: string;
  readonly to: string;
  readonly rule: string;
}

/** A layering rule: `applies` picks the importing files, `allowed` says which of their imports are legal. */
export interface Rule {
  readonly name: string;
  readonly applies: (from: string) => boolean;
  readonly allowed: (to: string, from: string) => boolean;
}

/** Every import of `graph` that one of `rules` forbids. */
export function violations(graph: ImportGraph, rules: readonly Rule[]): Violation[] {
  const out: Violation[] = [];
  for (const [from, tos] of graph) {
    for (const rule of rules) {
      if (!rule.applies(from)) continue;
      for (const to of tos) if (!rule.allowed(to, from)) out.push({ from, to, rule: rule.name });
    }
  }
  return out;
}
