/**
 * `npm run bench` in process on a tiny budget: the shape of bench/results.json (never the timings), the command
 * line, and the reference suite's plumbing against a stand-in for YC-Bench's CLI (the reference itself is not
 * installed here).
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { medianPairRatio, quantile, summarize, type BenchmarkResult, type BenchResults } from '../../bench/harness.js';
import { findReference, sameStatus } from '../../bench/reference.js';
import { parseArgs, runBench, SUITES } from '../../bench/run.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-bench-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const savedRef = process.env['YCB_REF'];
afterEach(() => {
  if (savedRef === undefined) delete process.env['YCB_REF'];
  else process.env['YCB_REF'] = savedRef;
});

function expectSummary(s: unknown, n: number): void {
  const x = s as { median: number; p10: number; p90: number; samples: number[] };
  expect(Object.keys(x).sort()).toEqual(['median', 'p10', 'p90', 'samples']);
  expect(x.samples.length).toBe(n);
  for (const v of [x.median, x.p10, x.p90, ...x.samples]) expect(Number.isFinite(v)).toBe(true);
  expect(x.p10).toBeLessThanOrEqual(x.median);
  expect(x.median).toBeLessThanOrEqual(x.p90);
}

/** A stand-in for a YC-Bench checkout: a Python that logs its seeding call, a yc-bench that logs each command. */
function fakeReference(root: string): string {
  const bin = join(root, '.venv', 'bin');
  mkdirSync(bin, { recursive: true });
  mkdirSync(join(root, 'src', 'yc_bench'), { recursive: true });
  const log = join(root, 'calls.log');
  writeFileSync(join(bin, 'python'), `#!/bin/sh\nprintf 'seed %s %s %s\\n' "$3" "$DATABASE_URL" "$YC_BENCH_EXPERIMENT" >> '${log}'\n`);
  writeFileSync(join(bin, 'yc-bench'), `#!/bin/sh\necho "$*" >> '${log}'\nif [ "$1" = market ]; then exit 1; fi\necho '{"fake": true}'\n`);
  chmodSync(join(bin, 'python'), 0o755);
  chmodSync(join(bin, 'yc-bench'), 0o755);
  return log;
}

describe('npm run bench', () => {
  it('the median pair ratio is the median of the per-round ratios, not the ratio of the medians', () => {
    // Ratios 2, 3, 2: the median is 2, where the medians' ratio is 12 / 4 = 3.
    expect(medianPairRatio([2, 12, 20], [1, 4, 10])).toBe(2);
    expect(medianPairRatio([3, 6], [1, 2])).toBe(3);
    expect(() => medianPairRatio([1, 2], [1])).toThrow(/2 and 1 samples/);
    expect(() => medianPairRatio([], [])).toThrow(/0 and 0 samples/);
  });

  it('quantiles interpolate between order statistics', () => {
    expect(quantile([3, 1, 2], 0.5)).toBe(2);
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([10, 20], 0.1)).toBeCloseTo(11);
    expect(summarize([5])).toEqual({ median: 5, p10: 5, p90: 5, samples: [5] });
  });

  it('parses --quick, --repeats, --only and --out, and refuses anything else', () => {
    expect(parseArgs([])).toEqual({ size: 'full' });
    expect(parseArgs(['--quick', '--repeats', '7', '--only', 'core,server', '--out', 'x.json'])).toEqual({ size: 'quick', repeats: 7, only: ['core', 'server'], out: 'x.json' });
    for (const bad of [['--repeats', '0'], ['--repeats', '1.5'], ['--repeats'], ['--fast']]) expect(() => parseArgs(bad)).toThrow();
  });

  it('writes results.json: the machine, and per benchmark median, p10/p90 over the repeats and ratios taken in the same run', async () => {
    delete process.env['YCB_REF'];
    const out = join(dir, 'results.json');
    const r = await runBench({ size: 'tiny', repeats: 2, out });
    const file = JSON.parse(readFileSync(out, 'utf8')) as BenchResults;
    expect(file).toEqual(JSON.parse(JSON.stringify(r)));
    expect(file.format).toBe('ycgym-bench');
    expect(Object.keys(file.machine).sort()).toEqual(['arch', 'cores', 'cpu_model', 'load_average_end', 'load_average_start', 'memory_gib', 'node', 'platform']);
    expect(file.machine.cores).toBeGreaterThan(0);
    expect(file.machine.node).toBe(process.version);
    expect(file.machine.load_average_start.length).toBe(3);
    expect(file.run).toMatchObject({ size: 'tiny', repeats: 2 });
    expect(Object.keys(file.suites)).toEqual(SUITES.map((s) => s.name));
    // Without YCB_REF the reference suite is skipped with a note.
    expect(file.suites['reference']).toEqual({ skipped: expect.stringMatching(/YCB_REF is not set/) as unknown });
    let ratios = 0;
    for (const suite of SUITES.filter((s) => s.name !== 'reference')) {
      const s = file.suites[suite.name];
      if (!s || 'skipped' in s || 'failed' in s) throw new Error(`${suite.name}: ${JSON.stringify(s)}`);
      expect(s.repeats).toBe(2);
      expect(Object.keys(s.benchmarks)).toEqual(Object.keys(suite.metrics));
      for (const [name, b] of Object.entries(s.benchmarks) as [string, BenchmarkResult][]) {
        const spec = suite.metrics[name];
        expect(b.unit).toBe(spec?.unit);
        expectSummary({ median: b.median, p10: b.p10, p90: b.p90, samples: b.samples }, 2);
        expect(Object.keys(b.ratios ?? {})).toEqual(spec?.baselines ?? []);
        for (const [base, ratio] of Object.entries(b.ratios ?? {})) {
          expectSummary(ratio, 2);
          // Each ratio is taken within one repeat.
          const baseSamples = (s.benchmarks[base] as BenchmarkResult).samples;
          expect(ratio.samples).toEqual(b.samples.map((v, i) => v / (baseSamples[i] as number)));
          ratios++;
        }
      }
    }
    expect(ratios).toBeGreaterThanOrEqual(6);
  });

  it("the final status check ignores UUIDs (the reference's company id is a random uuid4) and trailing whitespace only", () => {
    const ours = '{\n  "company_id": "78b9bb0f-ced4-4739-9b56-bd9a0cde704a",\n  "funds_cents": 42029521\n}';
    expect(sameStatus('{\n  "company_id": "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",\n  "funds_cents": 42029521\n}\n', ours)).toBe(true);
    expect(sameStatus('{\n  "company_id": "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",\n  "funds_cents": 42029522\n}', ours)).toBe(false);
  });

  it('reference suite: seeds the world, then runs one yc-bench process per greedy command, next to ycgym', async () => {
    const root = join(dir, 'yc-bench');
    const log = fakeReference(root);
    process.env['YCB_REF'] = join(dir, 'nowhere');
    expect(findReference()).toMatch(/no src\/yc_bench/);
    process.env['YCB_REF'] = root;
    const ref = findReference();
    expect(ref).toEqual({ root, python: join(root, '.venv', 'bin', 'python'), cli: [join(root, '.venv', 'bin', 'yc-bench')] });
    const r = await runBench({ size: 'tiny', repeats: 1, only: ['reference'], out: null });
    const s = r.suites['reference'];
    if (!s || 'skipped' in s || 'failed' in s) throw new Error(JSON.stringify(s));
    expect(s.params).toMatchObject({ preset: 'default', seed: 1, max_commands: 20 });
    const b = s.benchmarks;
    expect(Object.keys(b).sort()).toEqual(Object.keys(SUITES.find((x) => x.name === 'reference')?.metrics ?? {}).sort());
    expect(Object.keys(b['reference_greedy_year_s']?.ratios ?? {})).toEqual(['ycgym_greedy_year_cli_s', 'ycgym_greedy_year_in_process_s']);
    // The stand-in prints something else than ycgym's `company status`.
    expect(b['reference_final_status_identical']?.median).toBe(0);
    const calls = readFileSync(log, 'utf8').trim().split('\n');
    expect(calls[0]).toMatch(/^seed 1 sqlite:\/\/\/.*reference\.db default$/);
    expect(calls.length).toBe(1 + 20 + 1);
    // Greedy's first 20 commands of seed 1, each its own process, then the final `company status`.
    const greedy: string[] = [];
    runEpisode(new Env(), new GreedyPolicy(), { seed: 1, preset: 'default', options: { max_steps: 20 } }, { onStep: ({ action }) => void greedy.push(action) });
    expect(greedy.length).toBe(20);
    expect(calls.slice(1)).toEqual([...greedy, 'company status']);
  });
});
