/**
 * Client worker process of the reliability suite (fork() it). IPC: `{type: "run", req}` starts one job and
 * is answered by `{type: "done", result}` or `{type: "error", message}`.
 *
 * - `load`: one `Client` (its own DEALER socket) per entry, all running the scripted policy in lockstep
 *   concurrently; returns per-client trajectory hashes, every step latency, the errors, and (optionally)
 *   the hashes of the same seeds run alone in-process afterwards.
 * - `hold`: open sessions and keep stepping them until killed (the fault tests SIGKILL this process);
 *   sends `{type: "ready", sessions}` once every session has taken `warmSteps` steps.
 * - `flood`: a DEALER that sends as fast as it can and never reads a reply.
 * - `batches`: huge step_batch requests back to back (read or not).
 */
import { Dealer } from 'zeromq';
import { Client } from '../../src/client/client.js';
import { localDriver, remoteDriver, runPolicy } from './lib/policy.js';

/** A `load` job. */
export interface LoadJob {
  kind: 'load';
  endpoint: string;
  curveServerKey?: string;
  clients: { seed: number; steps: number }[];
  maxSteps?: number;
  timeoutMs: number;
  /** Also run every client's seeds alone in-process and return those hashes. */
  reference: boolean;
}

/** A `hold` job. */
export interface HoldJob {
  kind: 'hold';
  endpoint: string;
  sessions: number;
  seed: number;
  warmSteps: number;
  /** Stop by itself after this long (a safety net: the test kills it much earlier). */
  maxMs: number;
}

/** A `flood` job: send requests without ever reading a reply, until `durationMs` elapse. */
export interface FloodJob {
  kind: 'flood';
  endpoint: string;
  durationMs: number;
  /** `hello` (small replies) or `browse` (steps with ~20 KB replies on its own session). */
  what: 'hello' | 'browse';
}

/** A `batches` job: send step_batch requests of `size` expensive entries back to back, for `durationMs`. */
export interface BatchesJob {
  kind: 'batches';
  endpoint: string;
  durationMs: number;
  size: number;
  action: string;
  /** Await each reply before sending the next batch (true), or send one every 50 ms regardless (false). */
  read: boolean;
}

/** Result of `flood` and `batches` jobs. */
export interface PressureResult {
  sent: number;
  replies_read: number;
}

/** Result of a `load` job. */
export interface LoadResult {
  hashes: string[];
  reference: string[] | null;
  latencies_us: number[];
  errors: number;
  first_errors: string[];
  elapsed_ms: number;
}

async function load(job: LoadJob): Promise<LoadResult> {
  const latencies: number[] = [];
  const firstErrors: string[] = [];
  let errors = 0;
  const t0 = performance.now();
  const hashes = await Promise.all(
    job.clients.map(async (c) => {
      const client = new Client({ endpoint: job.endpoint, timeoutMs: job.timeoutMs, ...(job.curveServerKey !== undefined ? { curveServerKey: job.curveServerKey } : {}) });
      try {
        const driver = remoteDriver(client);
        const run = await runPolicy(driver, { seed: c.seed, steps: c.steps, ...(job.maxSteps !== undefined ? { maxSteps: job.maxSteps } : {}), onLatency: (us) => latencies.push(us) });
        if (driver.session !== null) await client.closeSession(driver.session);
        return run.hash;
      } catch (e) {
        errors++;
        if (firstErrors.length < 5) firstErrors.push(`seed ${c.seed}: ${(e as Error).message}`);
        return `error: ${(e as Error).message}`;
      } finally {
        await client.close();
      }
    }),
  );
  const elapsed = performance.now() - t0;
  let reference: string[] | null = null;
  if (job.reference) {
    reference = [];
    for (const c of job.clients) reference.push((await runPolicy(localDriver(), { seed: c.seed, steps: c.steps, ...(job.maxSteps !== undefined ? { maxSteps: job.maxSteps } : {}) })).hash);
  }
  return { hashes, reference, latencies_us: latencies, errors, first_errors: firstErrors, elapsed_ms: elapsed };
}

async function hold(job: HoldJob): Promise<void> {
  const client = new Client({ endpoint: job.endpoint, timeoutMs: 60_000 });
  const drivers = Array.from({ length: job.sessions }, () => remoteDriver(client));
  let warmed = 0;
  const deadline = Date.now() + job.maxMs;
  await Promise.all(
    drivers.map(async (d, i) => {
      let announced = false;
      // runPolicy in rounds of warmSteps: the first round warms up, later rounds keep the session busy.
      while (Date.now() < deadline) {
        // The same seeds every round and every run: world caches hold the same worlds, so memory compares.
        await runPolicy(d, { seed: job.seed + i, steps: job.warmSteps });
        if (!announced) {
          announced = true;
          if (++warmed === drivers.length) process.send?.({ type: 'ready', sessions: drivers.map((x) => x.session) });
        }
      }
    }),
  );
  await client.close();
  process.exit(0);
}

async function flood(job: FloodJob): Promise<PressureResult> {
  const d = new Dealer({ linger: 0, sendTimeout: 2000 });
  d.connect(job.endpoint);
  let session = '';
  if (job.what === 'browse') {
    await d.send(JSON.stringify({ v: 1, op: 'reset', seed: 77 }));
    const [m] = await d.receive();
    session = (JSON.parse((m as Buffer).toString()) as { result: { session: string } }).result.session;
  }
  const req = job.what === 'hello' ? JSON.stringify({ v: 1, op: 'hello' }) : JSON.stringify({ v: 1, op: 'step', session, action: 'market browse --limit 30' });
  const end = Date.now() + job.durationMs;
  let sent = 0;
  while (Date.now() < end) {
    try {
      await d.send(req);
      sent++;
    } catch {
      // the send timed out: our outgoing queue is full because the server reads no faster; keep trying
    }
  }
  d.close();
  return { sent, replies_read: 0 };
}

async function batches(job: BatchesJob): Promise<PressureResult> {
  const client = new Client({ endpoint: job.endpoint, timeoutMs: 600_000, maxMessageBytes: 1 << 20 });
  const { session } = await client.reset({ seed: 78 });
  const steps = Array.from({ length: job.size }, () => ({ session, action: job.action }));
  const end = Date.now() + job.durationMs;
  let sent = 0;
  let read = 0;
  const pending: Promise<unknown>[] = [];
  while (Date.now() < end) {
    const p = client.stepBatch(steps).then(() => read++);
    sent++;
    if (job.read) await p;
    else {
      pending.push(p.catch(() => undefined));
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  await client.close();
  return { sent, replies_read: read };
}

process.on('message', (m: { type?: string; req?: LoadJob | HoldJob | FloodJob | BatchesJob }) => {
  if (m.type !== 'run' || m.req === undefined) return;
  const req = m.req;
  const done = (result: unknown): void => void process.send?.({ type: 'done', result });
  const job =
    req.kind === 'load' ? load(req).then(done) : req.kind === 'flood' ? flood(req).then(done) : req.kind === 'batches' ? batches(req).then(done) : hold(req);
  job.catch((e: unknown) => process.send?.({ type: 'error', message: e instanceof Error ? e.stack ?? e.message : String(e) }));
});
process.on('disconnect', () => process.exit(0));
