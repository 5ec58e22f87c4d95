/**
 * Faults: clients killed mid-episode (sessions reaped, memory back down), the server killed and restarted
 * (episodes rebuilt from client-held snapshots, identical trajectories), slow clients (a client that never
 * reads, a client sending huge batches) against another client's lockstep latency.
 */
import { Client } from '../../../src/client/client.js';
import { RecoveringEnv } from '../../../src/client/recovering-env.js';
import type { BatchesJob, FloodJob, HoldJob, PressureResult } from '../load-worker.js';
import { ServerChild, Worker, type ServerChildStats } from './children.js';
import { localDriver, remoteDriver, runPolicy, type Driver } from './policy.js';
import { percentiles, round, sleep, waitFor, type Percentiles } from './util.js';

// ---------------------------------------------------------------------------------------------------------
// Killed clients

/** Options of `killedClients`. */
export interface KilledClientsOptions {
  /** Sessions the doomed client process opens. */
  sessions: number;
  /** Kill/reap cycles. */
  cycles: number;
  /** Server idle timeout in ms. */
  idleTimeoutMs: number;
  /** Steps each session takes before the client announces it is ready to be killed (default 30). */
  warmSteps?: number;
}

/** One kill/reap cycle. */
export interface KillCycle {
  sessions_live_before_kill: number;
  reaped_after_ms: number;
  sessions_after_reap: number;
  heap_used_mib_peak: number;
  heap_used_mib_after: number;
  rss_mib_after: number;
}

/** The killed-clients report. */
export interface KilledClientsReport {
  sessions_per_client: number;
  idle_timeout_ms: number;
  baseline: { heap_used_mib: number; rss_mib: number; sessions: number };
  cycles: KillCycle[];
  /** Heap after the last reap minus heap after the first (a leak would grow with every cycle). */
  heap_growth_mib_first_to_last: number;
  /** Heap after the last reap minus the baseline (world caches warmed by the first cycle stay). */
  heap_over_baseline_mib: number;
  control_identical: boolean;
  server_alive: boolean;
}

/** Kill a client process holding `sessions` busy sessions, `cycles` times; measure reaping and memory. */
export async function killedClients(opts: KilledClientsOptions): Promise<KilledClientsReport> {
  const server = await ServerChild.start({ idleTimeoutMs: opts.idleTimeoutMs, maxSessions: opts.sessions + 16 });
  const control = new Client({ endpoint: server.endpoint, timeoutMs: 60_000 });
  try {
    const baseline = await server.stats();
    // A control session keeps stepping (paced, well within the idle timeout) through all the cycles.
    let stop = false;
    const controlDriver = remoteDriver(control);
    const paced: Driver = {
      reset: (seed, options) => controlDriver.reset(seed, options),
      step: async (action) => {
        if (!stop) await sleep(Math.min(50, opts.idleTimeoutMs / 10));
        return controlDriver.step(action);
      },
    };
    const controlSteps = 80 * opts.cycles;
    const controlRun = runPolicy(paced, { seed: 9001, steps: controlSteps });
    const cycles: KillCycle[] = [];
    for (let c = 0; c < opts.cycles; c++) {
      const w = new Worker<HoldJob, never>('load-worker');
      const ready = w.waitFor<{ sessions: string[] }>('ready', 120_000);
      w.proc.send({ type: 'run', req: { kind: 'hold', endpoint: server.endpoint, sessions: opts.sessions, seed: 500, warmSteps: opts.warmSteps ?? 30, maxMs: 300_000 } satisfies HoldJob });
      await ready;
      await sleep(100); // mid-episode: the sessions are stepping right now
      const peak = await server.stats();
      await w.kill('SIGKILL');
      const t0 = Date.now();
      let st: ServerChildStats = peak;
      const limit = 3 * opts.idleTimeoutMs + 10_000;
      await waitFor(async () => {
        st = await server.stats();
        return st.sessions <= 1;
      }, limit, 50);
      const reapedAfter = Date.now() - t0;
      const after = await server.stats();
      cycles.push({
        sessions_live_before_kill: peak.sessions,
        reaped_after_ms: reapedAfter,
        sessions_after_reap: after.sessions,
        heap_used_mib_peak: peak.heap_used_mib,
        heap_used_mib_after: after.heap_used_mib,
        rss_mib_after: after.rss_mib,
      });
    }
    stop = true;
    const controlResult = await controlRun;
    const reference = await runPolicy(localDriver(), { seed: 9001, steps: controlSteps });
    const first = cycles[0] as KillCycle;
    const last = cycles[cycles.length - 1] as KillCycle;
    return {
      sessions_per_client: opts.sessions,
      idle_timeout_ms: opts.idleTimeoutMs,
      baseline: { heap_used_mib: baseline.heap_used_mib, rss_mib: baseline.rss_mib, sessions: baseline.sessions },
      cycles,
      heap_growth_mib_first_to_last: round(last.heap_used_mib_after - first.heap_used_mib_after, 2),
      heap_over_baseline_mib: round(last.heap_used_mib_after - baseline.heap_used_mib, 2),
      control_identical: controlResult.hash === reference.hash,
      server_alive: server.alive,
    };
  } finally {
    await control.close();
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Server restart

/** Options of `serverRestart`. */
export interface ServerRestartOptions {
  /** Concurrent episodes (each a RecoveringEnv with its own connection). */
  clients: number;
  /** Steps per episode stream. */
  steps: number;
  /** Kill the server after this many steps in total (across clients); repeated `kills` times. */
  killEvery: number;
  kills: number;
  /** Snapshot interval of the clients (steps). */
  snapshotEvery: number;
  /** How long the server stays down before it is restarted (ms). */
  downMs?: number;
}

/** The server-restart report. */
export interface ServerRestartReport {
  clients: number;
  steps_per_client: number;
  kills: number;
  snapshot_every: number;
  recoveries: number;
  replayed_steps: number;
  down_ms: number;
  all_identical: boolean;
  mismatched_seeds: number[];
  errors: string[];
  elapsed_s: number;
}

/** Kill the server mid-run (SIGKILL) and restart it on the same endpoint; clients recover by the recipe. */
export async function serverRestart(opts: ServerRestartOptions): Promise<ServerRestartReport> {
  const downMs = opts.downMs ?? 300;
  let server = await ServerChild.start({});
  const endpoint = server.endpoint;
  const envs = Array.from({ length: opts.clients }, () => new RecoveringEnv({ endpoint, timeoutMs: 1500, snapshotEvery: opts.snapshotEvery, recoverWithinMs: 60_000, retryDelayMs: 50 }));
  const errors: string[] = [];
  const t0 = performance.now();
  let total = 0;
  let killsDone = 0;
  let restarting: Promise<void> | null = null;
  const maybeKill = (): void => {
    total++;
    if (restarting === null && killsDone < opts.kills && total >= (killsDone + 1) * opts.killEvery) {
      killsDone++;
      restarting = (async () => {
        await server.kill('SIGKILL');
        await sleep(downMs);
        // Bind the same endpoint again (retry briefly: the port may take a moment to be free).
        for (let attempt = 0; ; attempt++) {
          try {
            server = await ServerChild.start({ endpoint });
            break;
          } catch (e) {
            if (attempt >= 40) throw e;
            await sleep(100);
          }
        }
        restarting = null;
      })().catch((e: unknown) => {
        errors.push(`restart failed: ${(e as Error).message}`);
      });
    }
  };
  const seeds = Array.from({ length: opts.clients }, (_, i) => 700 + 1000 * i);
  try {
    const hashes = await Promise.all(
      envs.map(async (env, i) => {
        const driver: Driver = {
          reset: (seed, options) => env.reset({ seed, options }),
          step: async (action) => {
            const r = await env.step(action);
            maybeKill();
            return r;
          },
        };
        try {
          return (await runPolicy(driver, { seed: seeds[i] as number, steps: opts.steps })).hash;
        } catch (e) {
          errors.push(`seed ${seeds[i]}: ${(e as Error).message}`);
          return 'error';
        }
      }),
    );
    if (restarting !== null) await restarting;
    const mismatched: number[] = [];
    for (let i = 0; i < opts.clients; i++) {
      const ref = await runPolicy(localDriver(), { seed: seeds[i] as number, steps: opts.steps });
      if (ref.hash !== hashes[i]) mismatched.push(seeds[i] as number);
    }
    return {
      clients: opts.clients,
      steps_per_client: opts.steps,
      kills: killsDone,
      snapshot_every: opts.snapshotEvery,
      recoveries: envs.reduce((a, e) => a + e.recoveries, 0),
      replayed_steps: envs.reduce((a, e) => a + e.replayedSteps, 0),
      down_ms: downMs,
      all_identical: mismatched.length === 0 && errors.length === 0,
      mismatched_seeds: mismatched,
      errors: errors.slice(0, 5),
      elapsed_s: round((performance.now() - t0) / 1000, 2),
    };
  } finally {
    await Promise.all(envs.map((e) => e.close().catch(() => undefined)));
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Slow clients

/** Options of `slowClients`. */
export interface SlowClientsOptions {
  /** Lockstep steps measured per condition. */
  steps: number;
  /** Entries per huge batch (default 4096). */
  batchSize?: number;
  /** Also measure huge batches with slicing off (the behaviour before this change) for comparison. */
  compareUnsliced?: boolean;
  /** Only the lockstep client alone, next to a non-reading `hello` flood and next to huge batches (read). */
  short?: boolean;
}

/** Lockstep latency of the well-behaved client under one condition. */
export interface Condition {
  latency_ms: Percentiles;
  pressure: PressureResult | null;
  server_max_unit_ms: number;
  server_rss_mib: number;
  server_alive: boolean;
}

/** The slow-clients report. */
export interface SlowClientsReport {
  steps: number;
  batch: { size: number; action: string };
  alone: Condition;
  non_reading_flood_hello: Condition;
  non_reading_flood_browse?: Condition;
  huge_batches_read: Condition;
  huge_batches_pipelined?: Condition;
  huge_batches_unsliced?: Condition;
  control_identical: boolean;
}

const BATCH_ACTION = 'market browse --limit 200';

async function condition(steps: number, pressure: FloodJob | BatchesJob | null, sliceMs?: number): Promise<{ c: Condition; hash: string }> {
  const server = await ServerChild.start(sliceMs !== undefined ? { batchSliceMs: sliceMs } : {});
  const client = new Client({ endpoint: server.endpoint, timeoutMs: 300_000 });
  const w = pressure !== null ? new Worker<FloodJob | BatchesJob, PressureResult>('load-worker') : null;
  try {
    const driver = remoteDriver(client);
    // Warm up the lockstep client's world before pressure starts (the first reset generates it).
    await runPolicy(driver, { seed: 31337, steps: 5 });
    let pressureRun: Promise<PressureResult> | null = null;
    if (w !== null && pressure !== null) {
      pressureRun = w.run({ ...pressure, endpoint: server.endpoint }, pressure.durationMs + 600_000);
      await sleep(300); // let the pressure build up
    }
    const lat: number[] = [];
    const run = await runPolicy(driver, { seed: 31337, steps, onLatency: (us) => lat.push(us / 1000) });
    const stats = await server.stats();
    const pr = pressureRun !== null ? await pressureRun : null;
    return {
      c: { latency_ms: percentiles(lat), pressure: pr, server_max_unit_ms: stats.counters.max_unit_ms, server_rss_mib: stats.rss_mib, server_alive: server.alive },
      hash: run.hash,
    };
  } finally {
    if (w !== null) await w.kill();
    await client.close();
    await server.stop();
  }
}

/** Lockstep latency alone, next to non-reading flooders, and next to huge batches. */
export async function slowClients(opts: SlowClientsOptions): Promise<SlowClientsReport> {
  const size = opts.batchSize ?? 4096;
  // Pressure lasts about as long as the measured run (estimated from the run alone).
  const alone = await condition(opts.steps, null);
  const dur = Math.max(2000, Math.ceil(alone.c.latency_ms.mean * opts.steps * 3));
  const floodHello = await condition(opts.steps, { kind: 'flood', endpoint: '', durationMs: dur, what: 'hello' });
  const batchesRead = await condition(opts.steps, { kind: 'batches', endpoint: '', durationMs: dur, size, action: BATCH_ACTION, read: true });
  const rep: SlowClientsReport = {
    steps: opts.steps,
    batch: { size, action: BATCH_ACTION },
    alone: alone.c,
    non_reading_flood_hello: floodHello.c,
    huge_batches_read: batchesRead.c,
    control_identical: floodHello.hash === alone.hash && batchesRead.hash === alone.hash,
  };
  if (opts.short !== true) {
    const floodBrowse = await condition(opts.steps, { kind: 'flood', endpoint: '', durationMs: dur, what: 'browse' });
    const batchesPipelined = await condition(opts.steps, { kind: 'batches', endpoint: '', durationMs: dur, size, action: BATCH_ACTION, read: false });
    rep.non_reading_flood_browse = floodBrowse.c;
    rep.huge_batches_pipelined = batchesPipelined.c;
    rep.control_identical = rep.control_identical && floodBrowse.hash === alone.hash && batchesPipelined.hash === alone.hash;
  }
  if (opts.compareUnsliced === true) {
    rep.huge_batches_unsliced = (await condition(opts.steps, { kind: 'batches', endpoint: '', durationMs: dur, size, action: BATCH_ACTION, read: true }, 1e9)).c;
  }
  return rep;
}
