/**
 * Load and determinism under stress: N concurrent clients (each its own DEALER socket, spread over a few
 * worker processes) run the scripted policy in lockstep against one server process. Reports step latency
 * percentiles, errors, server memory before/after, and whether every client's trajectory hash equals the
 * hash of the same seeds and actions run alone in-process.
 */
import type { LoadJob, LoadResult } from '../load-worker.js';
import { ServerChild, Worker, type ServerChildStats } from './children.js';
import { percentiles, round, type Percentiles } from './util.js';

/** Options of `runLoad`. */
export interface LoadOptions {
  clients: number;
  steps: number;
  /** Worker processes the clients are spread over (default 2). */
  workers?: number;
  /** Seed of client i is seedBase + 1000 * i (default 1). */
  seedBase?: number;
  /** Per-run time bound in ms (default 30 min). */
  timeoutMs?: number;
}

/** The load report. */
export interface LoadReport {
  clients: number;
  steps_per_client: number;
  workers: number;
  total_steps: number;
  errors: number;
  first_errors: string[];
  elapsed_s: number;
  steps_per_sec: number;
  latency_ms: Percentiles;
  server: { before: ServerMemory; after: ServerMemory; sessions_after: number; max_unit_ms: number; crashed: boolean };
  determinism: { compared: number; identical: number; mismatched_seeds: number[] };
}

/** Memory figures of the server child. */
export type ServerMemory = Pick<ServerChildStats, 'rss_mib' | 'heap_used_mib'>;

function mem(s: ServerChildStats): ServerMemory {
  return { rss_mib: s.rss_mib, heap_used_mib: s.heap_used_mib };
}

/** Run the load test against a fresh server child. */
export async function runLoad(opts: LoadOptions): Promise<LoadReport> {
  const nWorkers = Math.max(1, Math.min(opts.workers ?? 2, opts.clients));
  const seedBase = opts.seedBase ?? 1;
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const server = await ServerChild.start({ maxSessions: Math.max(1024, opts.clients + 16) });
  const workers: Worker<LoadJob, LoadResult>[] = [];
  try {
    const before = await server.stats();
    const seeds = Array.from({ length: opts.clients }, (_, i) => seedBase + 1000 * i);
    const parts: number[][] = Array.from({ length: nWorkers }, () => []);
    seeds.forEach((s, i) => (parts[i % nWorkers] as number[]).push(s));
    for (let w = 0; w < nWorkers; w++) workers.push(new Worker<LoadJob, LoadResult>('load-worker'));
    const t0 = performance.now();
    const results = await Promise.all(
      workers.map((w, i) =>
        w.run({ kind: 'load', endpoint: server.endpoint, clients: (parts[i] as number[]).map((seed) => ({ seed, steps: opts.steps })), timeoutMs: 120_000, reference: true }, timeoutMs),
      ),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const after = await server.stats();
    const latencies: number[] = [];
    let errors = 0;
    const firstErrors: string[] = [];
    const mismatched: number[] = [];
    let compared = 0;
    let identical = 0;
    results.forEach((r, w) => {
      for (const x of r.latencies_us) latencies.push(x / 1000);
      errors += r.errors;
      firstErrors.push(...r.first_errors);
      r.hashes.forEach((h, j) => {
        compared++;
        if (r.reference !== null && h === r.reference[j]) identical++;
        else mismatched.push((parts[w] as number[])[j] as number);
      });
    });
    return {
      clients: opts.clients,
      steps_per_client: opts.steps,
      workers: nWorkers,
      total_steps: latencies.length,
      errors,
      first_errors: firstErrors.slice(0, 5),
      elapsed_s: round(elapsed, 2),
      steps_per_sec: round(latencies.length / elapsed, 1),
      latency_ms: percentiles(latencies),
      server: { before: mem(before), after: mem(after), sessions_after: after.sessions, max_unit_ms: after.counters.max_unit_ms, crashed: !server.alive },
      determinism: { compared, identical, mismatched_seeds: mismatched.slice(0, 20) },
    };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await server.stop();
  }
}
