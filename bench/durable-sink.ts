/**
 * A recording's write cost as it grows: `--batches` one-row record batches through an Arrow step sink, plain (what
 * `ycgym run` writes) and durable (what `ycgym serve --record-dir` writes: the file on disk is always complete, see
 * src/export/arrow.ts `ArrowFileSink`). Per mode, the median over `--repeats` runs of the wall time, the µs per batch
 * over the first and the last tenth of the batches (flat when a batch costs the same however many came before), and
 * the bytes of the file and of the footers written after batches. With `--against DIR` (another checkout, built) its
 * durable sink runs the same batches in the same run, alternately.
 *
 *   npm run build && node dist/bench/durable-sink.js [--batches 20000] [--repeats 3] [--against ../other-checkout]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stepBuilder, stepSink } from '../src/export/arrow.js';
import { flagValue, median } from './harness.js';

interface Sink {
  writeBuffers(t: unknown): void;
  close(): void;
  footerBytesWritten?: number;
}
interface Build {
  stepSink(path: string, compression: 'none', durable: boolean): Sink;
  stepBuilder(): { append(row: unknown): void; finish(): unknown };
}

/** One step row (the values do not matter; a short text keeps a batch small, as a recorded one-step episode's is). */
const ROW = {
  run_id: 'bench', episode_id: 0, policy: 'p', preset: 'default', seed: 1, step: 0, action: 'company status',
  observation_text: 'x'.repeat(200), ok: true, exit_code: 0, command: 'company status', sim_time: 0, funds_cents: 1,
  monthly_payroll_cents: 1, runway_months: 1, prestige_research: 1, prestige_inference: 1, prestige_data_environment: 1,
  prestige_training: 1, active_tasks: 0, planned_tasks: 0, completed_tasks: 0, reward: 0, reward_cents: 0, terminated: false,
  truncated: false, is_first: true, is_last: true, sim_day: 0, days_left: 1, trust: {},
};

interface Run {
  seconds: number;
  first_tenth_us_per_batch: number;
  last_tenth_us_per_batch: number;
  file_bytes: number;
  footer_bytes: number | null;
}

function runOnce(build: Build, path: string, batches: number, durable: boolean): Run {
  rmSync(path, { force: true });
  const b = build.stepBuilder();
  const sink = build.stepSink(path, 'none', durable);
  const tenth = Math.max(1, Math.floor(batches / 10));
  const t0 = performance.now();
  let firstEnd = t0;
  let lastStart = t0;
  for (let i = 0; i < batches; i++) {
    if (i === batches - tenth) lastStart = performance.now();
    b.append({ ...ROW, episode_id: i });
    sink.writeBuffers(b.finish());
    if (i === tenth - 1) firstEnd = performance.now();
  }
  const end = performance.now();
  const footer = sink.footerBytesWritten ?? null;
  sink.close();
  return {
    seconds: (end - t0) / 1000,
    first_tenth_us_per_batch: ((firstEnd - t0) * 1000) / tenth,
    last_tenth_us_per_batch: ((end - lastStart) * 1000) / tenth,
    file_bytes: statSync(path).size,
    footer_bytes: footer,
  };
}

function summary(runs: Run[]): Record<string, number | null> {
  const pick = (k: keyof Run): number | null => {
    const xs = runs.map((r) => r[k]).filter((x): x is number => x !== null);
    return xs.length > 0 ? +median(xs).toFixed(3) : null;
  };
  return {
    seconds: pick('seconds'),
    first_tenth_us_per_batch: pick('first_tenth_us_per_batch'),
    last_tenth_us_per_batch: pick('last_tenth_us_per_batch'),
    file_bytes: pick('file_bytes'),
    footer_bytes: pick('footer_bytes'),
  };
}

export async function durableSinkBench(batches: number, repeats: number, against: string | null): Promise<Record<string, unknown>> {
  const load = async (root: string): Promise<Build> => (await import(pathToFileURL(join(root, 'dist', 'src', 'export', 'arrow.js')).href)) as Build;
  const here = { stepSink, stepBuilder } as unknown as Build;
  const other = against !== null ? await load(resolve(against)) : null;
  const dir = mkdtempSync(join(tmpdir(), 'ycgym-durable-'));
  try {
    const path = join(dir, 'rec.arrow');
    const runs: Record<string, Run[]> = { plain: [], durable: [], ...(other ? { against_durable: [] } : {}) };
    for (let k = 0; k < repeats; k++) {
      runs['plain']?.push(runOnce(here, path, batches, false));
      runs['durable']?.push(runOnce(here, path, batches, true));
      if (other) runs['against_durable']?.push(runOnce(other, path, batches, true));
    }
    const out: Record<string, unknown> = { batches, repeats };
    for (const [mode, rs] of Object.entries(runs)) out[mode] = summary(rs);
    const d = out['durable'] as Record<string, number | null>;
    const p = out['plain'] as Record<string, number | null>;
    if (d['seconds'] && p['seconds']) out['ratio_durable_vs_plain_seconds'] = +(d['seconds'] / p['seconds']).toFixed(2);
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const val = (name: string) => flagValue(process.argv, name);
  console.log(JSON.stringify(await durableSinkBench(Number(val('--batches') ?? 20000), Number(val('--repeats') ?? 3), val('--against'))));
}
