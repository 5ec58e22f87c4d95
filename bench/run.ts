/**
 * `npm run bench`: every benchmark suite, medians and ratios, written to bench/results.json and printed
 * as a Markdown table. `--quick` for a short run; `--only core|server|export` to pick suites.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { runCoreBench } from './core.js';

type Suite = (opts: { quick: boolean }) => Promise<Record<string, unknown>> | Record<string, unknown>;

async function optionalSuite(modulePath: string, exportName: string): Promise<Suite | null> {
  try {
    const m = (await import(modulePath)) as Record<string, unknown>;
    const f = m[exportName];
    return typeof f === 'function' ? (f as Suite) : null;
  } catch {
    return null;
  }
}

function flatten(prefix: string, v: unknown, out: [string, string][]): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) flatten(prefix ? `${prefix}.${k}` : k, x, out);
  } else if (typeof v === 'number') out.push([prefix, Number.isInteger(v) ? String(v) : v.toPrecision(4)]);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const onlyIdx = args.indexOf('--only');
  const only = onlyIdx >= 0 ? (args[onlyIdx + 1] ?? '').split(',') : null;
  const want = (s: string) => only === null || only.includes(s);
  const results: Record<string, unknown> = {
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version },
    quick,
  };
  if (want('core')) results['core'] = runCoreBench({ quick });
  const extra: [string, string, string][] = [
    ['server', './server.js', 'runServerBench'],
    ['export', './export.js', 'runExportBench'],
  ];
  for (const [name, path, fn] of extra) {
    if (!want(name)) continue;
    const suite = await optionalSuite(path, fn);
    if (suite) results[name] = await suite({ quick });
  }
  writeFileSync(new URL('../../bench/results.json', import.meta.url), JSON.stringify(results, null, 2) + '\n');
  const rows: [string, string][] = [];
  flatten('', results, rows);
  console.log('| metric | value |\n| --- | --- |');
  for (const [k, v] of rows.filter(([k]) => !k.includes('.rounds.'))) console.log(`| ${k} | ${v} |`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
