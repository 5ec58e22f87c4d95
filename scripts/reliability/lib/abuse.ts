/**
 * Attacks of issue 12, each against a fresh server child: an absurd restored snapshot (F2), restores of large
 * snapshots against a memory budget (F3), many clients sending 4,096-step batches (F4), a client that sends
 * but never reads (backpressure), a client on another client's sessions and one opening all sessions (F7), a
 * turn of hundreds of full-scratchpad reads (F1). For each: the peak resident memory of the server process during the attack
 * (Linux VmHWM), the slowest answer a fresh client got while it ran, and whether the server stayed up.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Dealer } from 'zeromq';
import { Client, ProtocolError } from '../../../src/client/client.js';
import { Env } from '../../../src/env/env.js';
import { ServerChild } from './children.js';
import type { ServerChildOptions } from '../server-child.js';
import { round, sleep } from './util.js';

/** One attack's outcome. */
export interface AttackReport {
  attack: string;
  /** What stops it. */
  limit: string;
  /** Peak resident set size of the server process (MiB; null where /proc is unavailable). */
  peak_rss_mib: number | null;
  /** Slowest `hello` of a fresh client during the attack (ms). */
  worst_fresh_hello_ms: number;
  server_alive: boolean;
  /** Attack-specific figures. */
  figures: Record<string, unknown>;
  ok: boolean;
}

/** The whole section. */
export interface AbuseReport {
  attacks: AttackReport[];
}

/** Sizes of one mode. */
export interface AbuseParams {
  batchClients: number;
  restores: number;
  floodRequests: number;
  /** F7: requests of the thief on the victim's (and guessed) sessions. */
  hijackTries: number;
  /** F1: `scratchpad read` calls in the one turn. */
  turnReads: number;
  /** F6: steps of the one recorded episode. */
  recordedSteps: number;
}

function peakRssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

async function freshHello(endpoint: string): Promise<number> {
  const c = new Client({ endpoint, timeoutMs: 10_000 });
  const t0 = performance.now();
  try {
    await c.hello();
    return performance.now() - t0;
  } catch {
    return Number.POSITIVE_INFINITY;
  } finally {
    await c.close();
  }
}

/** Run `attack` against a fresh server, probing a fresh client's hello every 100 ms. */
async function underAttack(name: string, limit: string, opts: ServerChildOptions, attack: (endpoint: string) => Promise<Record<string, unknown> & { ok: boolean }>): Promise<AttackReport> {
  const server = await ServerChild.start(opts);
  try {
    let done = false;
    const run = attack(server.endpoint).finally(() => (done = true));
    let worst = 0;
    while (!done) {
      worst = Math.max(worst, await freshHello(server.endpoint));
      await sleep(100);
    }
    const { ok, ...figures } = await run;
    worst = Math.max(worst, await freshHello(server.endpoint));
    const alive = server.alive;
    const st = alive ? await server.stats() : null;
    return {
      attack: name,
      limit,
      peak_rss_mib: peakRssMiB(server.proc.pid),
      worst_fresh_hello_ms: round(worst, 1),
      server_alive: alive,
      figures: { ...figures, ...(st ? { send_failures: st.counters.send_failures, dropped_requests: st.counters.dropped_requests, peak_batch_bytes: st.counters.peak_batch_bytes, errors: st.counters.errors } : {}) },
      ok: ok && alive && worst < 1000,
    };
  } finally {
    await server.stop();
  }
}

/** A fresh episode's snapshot, with `appends` x 60,000 characters in its scratchpad. */
function snapshotOf(seed: number, appends: number): Record<string, any> {
  const env = new Env();
  env.reset({ seed });
  for (let i = 0; i < appends; i++) env.step(`scratchpad append --content ${'x'.repeat(60_000)}`);
  return JSON.parse(JSON.stringify(env.snapshot())) as Record<string, any>;
}

/** Run every attack. */
export async function abuse(p: AbuseParams): Promise<AbuseReport> {
  const attacks: AttackReport[] = [];

  attacks.push(
    await underAttack('F2: restore of a snapshot claiming a 3,000,000-task market', 'preset schema maxima (num_market_tasks <= 10000, ...): bad_snapshot', {}, async (endpoint) => {
      const snap = snapshotOf(1, 0);
      snap['sim'].config.world.num_market_tasks = 3_000_000;
      const c = new Client({ endpoint, timeoutMs: 60_000, maxMessageBytes: 8 << 20 });
      try {
        const code = await c.restore(snap as never).then(
          () => 'ok',
          (e: unknown) => (e instanceof ProtocolError ? e.code : 'other'),
        );
        return { reply: code, ok: code === 'bad_snapshot' };
      } finally {
        await c.close();
      }
    }),
  );

  const budgetMiB = 512;
  attacks.push(
    await underAttack(`F3: ${p.restores} restores of large snapshots from one client`, `--max-memory ${budgetMiB} MiB: capacity; at most 1024 sessions`, { maxMemoryBytes: budgetMiB * 2 ** 20 }, async (endpoint) => {
      const snap = snapshotOf(2, 4);
      const bytes = JSON.stringify(snap).length;
      const c = new Client({ endpoint, timeoutMs: 120_000, maxMessageBytes: 8 << 20 });
      const codes: Record<string, number> = {};
      try {
        for (let i = 0; i < p.restores; i++) {
          const code = await c.restore(snap as never).then(
            () => 'ok',
            (e: unknown) => (e instanceof ProtocolError ? e.code : 'other'),
          );
          codes[code] = (codes[code] ?? 0) + 1;
        }
        return { snapshot_bytes: bytes, replies: codes, ok: Object.keys(codes).every((k) => ['ok', 'capacity', 'session_limit'].includes(k)) };
      } finally {
        await c.close();
      }
    }),
  );

  attacks.push(
    await underAttack(`F4: ${p.batchClients} clients each sending a 4,096-step batch`, 'batch reply cap (64 MiB) and batch bytes in flight (256 MiB): the oldest batch advances, the others wait', {}, async (endpoint) => {
      // Raw sockets: the replies (up to 64 MiB each) are measured, not decoded, so that decoding them in this
      // process does not delay the fresh-client probe.
      const socks = Array.from({ length: p.batchClients }, () => {
        const d = new Dealer({ linger: 0 });
        d.connect(endpoint);
        return d;
      });
      try {
        const replyBytes = await Promise.all(
          socks.map(async (d, i) => {
            await d.send(JSON.stringify({ v: 1, op: 'reset', seed: 100 + i }));
            const [r] = await d.receive();
            const session = (JSON.parse(String(r)) as { result: { session: string } }).result.session;
            await d.send(JSON.stringify({ v: 1, op: 'step_batch', steps: Array.from({ length: 4096 }, () => ({ session, action: 'market browse --limit 200' })) }));
            const [reply] = await d.receive();
            const ok = reply !== undefined && reply.subarray(0, 40).toString().includes('"ok":true');
            return ok ? (reply as Buffer).length : -1;
          }),
        );
        return { batch_reply_mib: replyBytes.map((b) => round(b / 2 ** 20, 1)), ok: replyBytes.every((b) => b > 0) };
      } finally {
        for (const d of socks) d.close();
      }
    }),
  );

  attacks.push(
    await underAttack(`backpressure: a client sends ${p.floodRequests} requests and never reads`, 'send high-water mark 64 + a one-reply outbox per peer; a peer stalled 10 s is dropped; 1024 queued requests per client', { stallTimeoutMs: 2000 }, async (endpoint) => {
      const mute = new Dealer({ linger: 0, receiveHighWaterMark: 1 });
      mute.connect(endpoint);
      try {
        await mute.send(JSON.stringify({ v: 1, op: 'reset', seed: 1 }));
        const [first] = await mute.receive();
        const session = (JSON.parse(String(first)) as { result: { session: string } }).result.session;
        const steps = Array.from({ length: 64 }, () => ({ session, action: 'market browse --limit 200' }));
        for (let i = 0; i < p.floodRequests; i++) await mute.send(JSON.stringify({ v: 1, id: i, op: 'step_batch', steps }));
        await sleep(4000);
        return { requests: p.floodRequests, ok: true };
      } finally {
        mute.close();
      }
    }),
  );

  attacks.push(
    await underAttack(
      `F7: a client steps, snapshots and closes another client's sessions (${p.hijackTries} tries: guessed ids and the victim's real ids)`,
      'sessions belong to their connection; ids are 128 random bits: unknown_session, word for word as for a missing id',
      {},
      async (endpoint) => {
        const victim = new Client({ endpoint, timeoutMs: 30_000 });
        const thief = new Client({ endpoint, timeoutMs: 30_000 });
        try {
          // No stall truncation: the victim only browses and reads while the thief tries.
          const sid = (await victim.reset({ seed: 11, options: { stall_steps: 0 } })).session;
          const ref = new Env();
          ref.reset({ seed: 11, options: { stall_steps: 0 } });
          const codes: Record<string, number> = {};
          let identical = true;
          for (let i = 0; i < p.hijackTries; i++) {
            // Guessed ids of the old form (s1, s2.<tag>, ...) and the victim's real id, which a leak could reveal.
            const target = i % 4 === 0 ? sid : i % 4 === 1 ? `s${i}` : i % 4 === 2 ? `s${i}.AAAAAAAA` : `s${'A'.repeat(22)}`;
            const op = i % 3 === 0 ? thief.step(target, 'sim resume') : i % 3 === 1 ? thief.snapshot(target) : thief.closeSession(target);
            const code = await op.then(
              () => 'ok',
              (e: unknown) => (e instanceof ProtocolError ? e.code : 'other'),
            );
            codes[code] = (codes[code] ?? 0) + 1;
            // The victim plays on, and its episode is the one it would be alone.
            const action = i % 2 === 0 ? 'market browse --limit 5' : 'company status';
            identical &&= (await victim.step(sid, action)).observation.text === ref.step(action).observation.text;
          }
          return { replies: codes, victim_byte_identical: identical, ok: identical && Object.keys(codes).every((k) => k === 'unknown_session') };
        } finally {
          await victim.close();
          await thief.close();
        }
      },
    ),
  );

  attacks.push(
    await underAttack(
      'F7: one client opens sessions until it is refused',
      '--max-sessions-per-client (default 256 of the 1024): session_limit; other clients still get sessions',
      {},
      async (endpoint) => {
        const greedy = new Client({ endpoint, timeoutMs: 30_000 });
        const other = new Client({ endpoint, timeoutMs: 30_000 });
        try {
          let opened = 0;
          let code = 'ok';
          while (code === 'ok' && opened < 2000) {
            code = await greedy.reset({ seed: opened + 1 }).then(
              () => 'ok',
              (e: unknown) => (e instanceof ProtocolError ? e.code : 'other'),
            );
            if (code === 'ok') opened++;
          }
          const otherOk = await other.reset({ seed: 1 }).then(
            () => true,
            () => false,
          );
          return { sessions_opened: opened, then: code, other_client_served: otherOk, ok: code === 'session_limit' && otherOk && opened === 256 };
        } finally {
          await greedy.close();
          await other.close();
        }
      },
    ),
  );

  attacks.push(
    await underAttack(
      `F1: a turn of ${p.turnReads} \`scratchpad read\` calls over a full scratchpad`,
      'per-turn tool output cap (1 Mi characters): later calls of the turn are not executed and answer an error',
      {},
      async (endpoint) => {
        const c = new Client({ endpoint, timeoutMs: 120_000 });
        try {
          const session = (await c.turnReset({ seed: 1 })).session;
          await c.turnStep(session, Array.from({ length: 4 }, () => `yc-bench scratchpad append --content ${'x'.repeat(60_000)}`));
          const t0 = performance.now();
          const r = await c.turnStep(session, Array.from({ length: p.turnReads }, () => 'yc-bench scratchpad read'));
          const ms = performance.now() - t0;
          const results = r.tool_results;
          const ran = results.filter((x) => x.ok).length;
          const next = await c.turnStep(session, ['yc-bench company status']);
          return { executed: ran, refused: results.length - ran, turn_ms: round(ms, 1), next_turn_ok: next.tool_results[0]?.ok === true, ok: ran < results.length && next.tool_results[0]?.ok === true };
        } finally {
          await c.close();
        }
      },
    ),
  );

  const recordDir = mkdtempSync(join(tmpdir(), 'ycgym-abuse-rec-'));
  try {
    attacks.push(
      await underAttack(
        `F5 and F6: a recorded session plays ${p.recordedSteps} steps of \`market browse --limit 50\` in one episode; another recording tries a name that would write its files`,
        'rows streamed to disk every 1,024 rows; a name whose files exist or belong to a recording in progress: invalid_request',
        { recordDir },
        async (endpoint) => {
          const c = new Client({ endpoint, timeoutMs: 120_000 });
          const other = new Client({ endpoint, timeoutMs: 30_000 });
          try {
            const sid = (await c.reset({ seed: 1, options: { stall_steps: 0, record: { path: 'long.episodes.arrow' } } as never })).session;
            for (let i = 0; i < p.recordedSteps; i += 512) {
              const n = Math.min(512, p.recordedSteps - i);
              await c.stepBatch(Array.from({ length: n }, () => ({ session: sid, action: 'market browse --limit 50' })));
            }
            const collide = await other.reset({ seed: 2, options: { record: { path: 'long.arrow' } } as never }).then(
              () => 'ok',
              (e: unknown) => (e instanceof ProtocolError ? e.code : 'other'),
            );
            await c.closeSession(sid);
            const bytes = statSync(join(recordDir, 'long.episodes.arrow')).size;
            return { collision_reply: collide, recording_mib: round(bytes / 2 ** 20, 1), ok: collide === 'invalid_request' };
          } finally {
            await c.close();
            await other.close();
          }
        },
      ),
    );
  } finally {
    rmSync(recordDir, { recursive: true, force: true });
  }

  return { attacks };
}
