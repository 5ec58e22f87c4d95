/**
 * Server benchmarks (not tests): lockstep step latency over ZeroMQ from TypeScript against a raw ROUTER/DEALER
 * echo round trip in the same run, step_batch throughput over 64 sessions, and memory per live session.
 * Server and client share this process (and its one thread), as in the contract tests.
 *
 *   node dist/bench/server.js            (add --expose-gc for steadier memory numbers)
 *
 * `serverSuite` is the `server` suite of `npm run bench`.
 */
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Dealer, Router } from 'zeromq';
import { Client } from '../src/client/client.js';
import { RemoteEnv } from '../src/client/remote-env.js';
import { Env } from '../src/env/env.js';
import { startServer } from '../src/server/server.js';
import type { Size, Suite } from './harness.js';
import { median } from './harness.js';

/** Options of `runServerBench`. */
export interface ServerBenchOptions {
  /** Lockstep steps (and echo round trips) to time (default 2000). */
  lockstepSteps?: number;
  /** Sessions in the step_batch benchmark (default 64). */
  batchSessions?: number;
  /** step_batch requests to time (default 100). */
  batchRounds?: number;
  /** Live sessions for the memory measurement (default 1000). */
  memorySessions?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

/** Commands that never advance the clock, so an episode never ends while we time it. */
const ACTIONS = ['company status', 'task list --status active', 'employee list', 'market browse --limit 10'];
/** The stall rule off: by default an episode is truncated after 200 steps in a row that do not advance time. */
const OPTIONS = { stall_steps: 0 };


function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) {
    g();
    g();
  }
}

async function echoMedianUs(rounds: number, payload: string): Promise<number> {
  const router = new Router({ linger: 0 });
  await router.bind('tcp://127.0.0.1:0');
  const endpoint = router.lastEndpoint as string;
  const echo = (async () => {
    for await (const frames of router) await router.send(frames);
  })();
  const d = new Dealer({ linger: 0 });
  d.connect(endpoint);
  const times: number[] = [];
  for (let i = 0; i < rounds + 50; i++) {
    const t0 = performance.now();
    await d.send(payload);
    await d.receive();
    if (i >= 50) times.push((performance.now() - t0) * 1000);
  }
  d.close();
  router.close();
  await echo;
  return median(times);
}

/** Run every server benchmark; numbers are medians in microseconds, rates per second, memory in KiB. */
export async function runServerBench(opts: ServerBenchOptions = {}): Promise<Record<string, number>> {
  const steps = opts.lockstepSteps ?? 2000;
  const nBatch = opts.batchSessions ?? 64;
  const batchRounds = opts.batchRounds ?? 100;
  const nMem = opts.memorySessions ?? 1000;
  const log = opts.log ?? (() => undefined);
  const out: Record<string, number> = {};

  const server = await startServer({ endpoint: 'tcp://127.0.0.1:0', maxSessions: Math.max(1024, nMem + nBatch + 8), maxSessionsPerClient: Math.max(1024, nMem + nBatch + 8) });
  const client = new Client({ endpoint: server.endpoint, timeoutMs: 120_000 });
  try {
    // 1. Lockstep latency: one RemoteEnv step at a time, against an in-process Env and a raw echo.
    const env = new RemoteEnv(client);
    await env.reset({ seed: 1, options: OPTIONS });
    const remote: number[] = [];
    for (let i = 0; i < steps + 50; i++) {
      const t0 = performance.now();
      await env.step(ACTIONS[i % ACTIONS.length] as string);
      if (i >= 50) remote.push((performance.now() - t0) * 1000);
    }
    await env.close();
    const local = new Env();
    local.reset({ seed: 1, options: OPTIONS });
    const inproc: number[] = [];
    for (let i = 0; i < steps + 50; i++) {
      const t0 = performance.now();
      local.step(ACTIONS[i % ACTIONS.length] as string);
      if (i >= 50) inproc.push((performance.now() - t0) * 1000);
    }
    const stepReq = JSON.stringify({ v: 1, id: 12345, op: 'step', session: 's1', action: 'company status' });
    const echo = await echoMedianUs(steps, stepReq);
    out['lockstep_step_median_us'] = round(median(remote));
    out['inprocess_step_median_us'] = round(median(inproc));
    out['echo_roundtrip_median_us'] = round(echo);
    out['lockstep_over_echo_ratio'] = round(median(remote) / echo, 2);
    out['lockstep_overhead_median_us'] = round(median(remote) - median(inproc));
    log(`lockstep: step ${out['lockstep_step_median_us']} us (in-process ${out['inprocess_step_median_us']} us), echo ${out['echo_roundtrip_median_us']} us, ratio ${out['lockstep_over_echo_ratio']}`);

    // 2. step_batch throughput over nBatch sessions.
    const sessions = (await Promise.all(Array.from({ length: nBatch }, (_, i) => client.reset({ seed: 1000 + i, options: OPTIONS })))).map((r) => r.session);
    const batchOf = (round: number) => sessions.map((session, j) => ({ session, action: ACTIONS[(round + j) % ACTIONS.length] as string }));
    await client.stepBatch(batchOf(0)); // warm-up
    let t0 = performance.now();
    for (let r = 0; r < batchRounds; r++) await client.stepBatch(batchOf(r));
    const batchSec = (performance.now() - t0) / 1000;
    const envs = Array.from({ length: nBatch }, (_, i) => {
      const e = new Env();
      e.reset({ seed: 1000 + i, options: OPTIONS });
      return e;
    });
    t0 = performance.now();
    for (let r = 0; r < batchRounds; r++) envs.forEach((e, j) => e.step(ACTIONS[(r + j) % ACTIONS.length] as string));
    const localSec = (performance.now() - t0) / 1000;
    out['batch64_steps_per_s'] = Math.round((batchRounds * nBatch) / batchSec);
    out['inprocess_steps_per_s'] = Math.round((batchRounds * nBatch) / localSec);
    out['batch64_over_inprocess_ratio'] = round(out['batch64_steps_per_s'] / out['inprocess_steps_per_s'], 2);
    out['batch64_request_median_ms'] = round((batchSec * 1000) / batchRounds, 2);
    log(`step_batch x${nBatch}: ${out['batch64_steps_per_s']} steps/s (in-process ${out['inprocess_steps_per_s']} steps/s)`);
    await Promise.all(sessions.map((s) => client.closeSession(s)));

    // 3. Memory per live session (RSS and heap deltas of this process, which hosts the server).
    gc();
    const before = process.memoryUsage();
    const live: string[] = [];
    for (let i = 0; i < nMem; i += 100) {
      const chunk = await Promise.all(Array.from({ length: Math.min(100, nMem - i) }, (_, k) => client.reset({ seed: i + k })));
      for (const r of chunk) live.push(r.session);
    }
    gc();
    const after = process.memoryUsage();
    out['sessions_live'] = server.sessionCount;
    out['rss_per_session_kib'] = round((after.rss - before.rss) / 1024 / nMem);
    out['heap_per_session_kib'] = round((after.heapUsed - before.heapUsed) / 1024 / nMem);
    log(`memory: ${out['rss_per_session_kib']} KiB RSS / session, ${out['heap_per_session_kib']} KiB heap / session (${nMem} sessions)`);
    for (let i = 0; i < live.length; i += 200) await Promise.all(live.slice(i, i + 200).map((s) => client.closeSession(s)));
  } finally {
    await client.close();
    await server.close();
  }
  return out;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await runServerBench({ log: (l) => process.stderr.write(l + '\n') });
  process.stdout.write(JSON.stringify(r, null, 2) + '\n');
}

const SIZES: Record<Size, Required<Omit<ServerBenchOptions, 'log'>>> = {
  full: { lockstepSteps: 2000, batchSessions: 64, batchRounds: 100, memorySessions: 1000 },
  quick: { lockstepSteps: 500, batchSessions: 64, batchRounds: 30, memorySessions: 200 },
  tiny: { lockstepSteps: 20, batchSessions: 4, batchRounds: 3, memorySessions: 10 },
};

/**
 * The server suite: lockstep `step` over ZeroMQ against a raw echo round trip and an in-process step, `step_batch`
 * throughput against in-process steps (each ratio in the same repeat), and memory per live session.
 */
export const serverSuite: Suite = {
  name: 'server',
  metrics: {
    lockstep_step_median_us: { unit: 'µs', better: 'lower', baselines: ['echo_roundtrip_median_us'], doc: 'TS RemoteEnv.step over ZeroMQ (server in this process); ratio: over a raw ROUTER/DEALER echo round trip' },
    echo_roundtrip_median_us: { unit: 'µs', better: 'lower' },
    inprocess_step_median_us: { unit: 'µs', better: 'lower' },
    step_batch_steps_per_s: { unit: 'env-steps/s', better: 'higher', baselines: ['inprocess_steps_per_s'], doc: 'step_batch over `batch_sessions` sessions, TS client; ratio: over the same steps in process' },
    inprocess_steps_per_s: { unit: 'env-steps/s', better: 'higher' },
    step_batch_request_median_ms: { unit: 'ms', better: 'lower' },
    rss_per_session_kib: { unit: 'KiB', better: 'lower', doc: 'RSS growth per live session (`memory_sessions` sessions)' },
    heap_per_session_kib: { unit: 'KiB', better: 'lower' },
  },
  params: (size) => ({ lockstep_steps: SIZES[size].lockstepSteps, batch_sessions: SIZES[size].batchSessions, batch_rounds: SIZES[size].batchRounds, memory_sessions: SIZES[size].memorySessions }),
  async run(_ctx, size) {
    const r = await runServerBench(SIZES[size]);
    const pick = (k: string): number => r[k] ?? NaN;
    return {
      lockstep_step_median_us: pick('lockstep_step_median_us'),
      echo_roundtrip_median_us: pick('echo_roundtrip_median_us'),
      inprocess_step_median_us: pick('inprocess_step_median_us'),
      step_batch_steps_per_s: pick('batch64_steps_per_s'),
      inprocess_steps_per_s: pick('inprocess_steps_per_s'),
      step_batch_request_median_ms: pick('batch64_request_median_ms'),
      rss_per_session_kib: pick('rss_per_session_kib'),
      heap_per_session_kib: pick('heap_per_session_kib'),
    };
  },
};
