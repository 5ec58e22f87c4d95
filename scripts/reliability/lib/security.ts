/**
 * Security checks beyond test/integration/server.test.ts: the default endpoint is loopback; the bind policy
 * refuses every non-loopback form (hostnames that merely start like loopback, IPv6 forms, other transports);
 * a CURVE server is not affected by clients with a wrong key, without CURVE, or speaking raw garbage TCP
 * (nothing reaches the application: its receive counter only counts the good client's requests, whose
 * trajectory stays byte-identical to an in-process run); the session cap holds under concurrent resets.
 */
import { connect } from 'node:net';
import { Client, ProtocolError } from '../../../src/client/client.js';
import { generateCurveKeyPair } from '../../../src/protocol/curve.js';
import { assertBindAllowed, classifyEndpoint, SecurityError } from '../../../src/server/security.js';
import { DEFAULT_ENDPOINT } from '../../../src/server/server.js';
import { ServerChild } from './children.js';
import { localDriver, remoteDriver, runPolicy } from './policy.js';
import { Prng, sleep } from './util.js';

/** Endpoints that must be refused without CURVE keys. */
export const REFUSED_WITHOUT_KEYS = [
  'tcp://0.0.0.0:5555',
  'tcp://*:5555',
  'tcp://[::]:5555',
  'tcp://[::ffff:127.0.0.1]:5555',
  'tcp://10.0.0.1:5555',
  'tcp://192.168.1.10:5555',
  'tcp://localhost.evil.example:5555',
  'tcp://127.0.0.1.evil.example:5555',
  'tcp://127.0.0.256:5555',
  'tcp://eth0:5555',
  'tcp://lo:5555',
  'tcp://127.1:5555',
  'tcp://0x7f000001:5555',
] as const;

/** Endpoints that must be refused even with keys (malformed, other transports). */
export const REFUSED_ALWAYS = ['udp://127.0.0.1:5555', 'pgm://127.0.0.1;239.192.1.1:5555', 'ws://127.0.0.1:5555', 'tcp://127.0.0.1', 'tcp://127.0.0.1:99999', '127.0.0.1:5555', ''] as const;

/** Endpoints allowed without keys. */
export const ALLOWED_WITHOUT_KEYS = ['tcp://127.0.0.1:0', 'tcp://127.255.0.9:0', 'tcp://localhost:0', 'tcp://[::1]:0', 'ipc:///tmp/ycgym-test.sock', 'inproc://ycgym'] as const;

/** Report of the bind-policy checks. */
export interface BindPolicyReport {
  default_endpoint: string;
  default_is_loopback: boolean;
  refused_without_keys: number;
  wrongly_allowed: string[];
  refused_always: number;
  wrongly_allowed_with_keys: string[];
  allowed_without_keys: number;
  wrongly_refused: string[];
}

function refused(endpoint: string, keys: boolean): boolean {
  try {
    assertBindAllowed(endpoint, keys);
    return false;
  } catch (e) {
    if (e instanceof SecurityError) return true;
    throw e;
  }
}

/** Check the bind policy (no socket is bound). */
export function bindPolicy(): BindPolicyReport {
  return {
    default_endpoint: DEFAULT_ENDPOINT,
    default_is_loopback: classifyEndpoint(DEFAULT_ENDPOINT).local,
    refused_without_keys: REFUSED_WITHOUT_KEYS.filter((e) => refused(e, false)).length,
    wrongly_allowed: REFUSED_WITHOUT_KEYS.filter((e) => !refused(e, false)),
    refused_always: REFUSED_ALWAYS.filter((e) => refused(e, true)).length,
    wrongly_allowed_with_keys: REFUSED_ALWAYS.filter((e) => !refused(e, true)),
    allowed_without_keys: ALLOWED_WITHOUT_KEYS.filter((e) => !refused(e, false)).length,
    wrongly_refused: ALLOWED_WITHOUT_KEYS.filter((e) => refused(e, false)),
  };
}

/** Report of the CURVE intruder check. */
export interface CurveIntrudersReport {
  intruders: { wrong_key: number; no_curve: number; raw_tcp: number };
  intruder_requests_sent: number;
  intruder_replies: number;
  /** Intruder requests their own ZeroMQ socket refused to send (EAGAIN: its connection had already failed the handshake). */
  intruder_sends_refused: number;
  raw_tcp_bytes_sent: number;
  good_client_steps: number;
  good_client_identical: boolean;
  requests_reaching_server: number;
  good_client_requests: number;
  server_alive: boolean;
}

/** A CURVE server, one good client stepping a scripted episode, and intruders hammering it meanwhile. */
export async function curveIntruders(opts: { intruders: number; steps: number }): Promise<CurveIntrudersReport> {
  const keys = generateCurveKeyPair();
  const server = await ServerChild.start({ curve: { secretKey: keys.secretKey } });
  const good = new Client({ endpoint: server.endpoint, curveServerKey: server.publicKey ?? '', timeoutMs: 60_000 });
  let stop = false;
  let sent = 0;
  let replies = 0;
  let sendsRefused = 0;
  let rawBytes = 0;
  const intruders: Promise<void>[] = [];
  const port = Number(/:(\d+)$/.exec(server.endpoint)?.[1]);
  try {
    for (let i = 0; i < opts.intruders; i++) {
      for (const kind of ['wrong_key', 'no_curve'] as const) {
        intruders.push(
          (async () => {
            // A new connection (and handshake) for every attempt.
            while (!stop) {
              const c = new Client({ endpoint: server.endpoint, timeoutMs: 100, ...(kind === 'wrong_key' ? { curveServerKey: generateCurveKeyPair().publicKey } : {}) });
              sent++;
              try {
                await c.reset({ seed: 1 });
                replies++;
              } catch (e) {
                // No reply within the timeout; or the intruder's own socket refusing the send: when the failed
                // handshake tears its connection down between ZeroMQ's writability check and the send, the send
                // fails with EAGAIN ("cannot send reset: Operation was not possible or timed out"). Either way the
                // intruder gets nothing; anything else fails the check.
                if (e instanceof ProtocolError && e.code === 'closed' && e.message.includes('cannot send')) sendsRefused++;
                else if (!(e instanceof ProtocolError && e.code === 'timeout')) throw e;
              }
              await c.close();
            }
          })(),
        );
      }
      intruders.push(
        (async () => {
          const rng = new Prng(i + 1);
          while (!stop) {
            await new Promise<void>((resolve) => {
              const s = connect(port, '127.0.0.1');
              setTimeout(() => {
                s.destroy();
                resolve();
              }, 1000).unref();
              s.on('error', () => resolve());
              s.on('close', () => resolve());
              s.on('connect', () => {
                // A ZMTP greeting claiming the NULL mechanism, then garbage; or garbage straight away.
                const greeting = Buffer.alloc(64);
                greeting[0] = 0xff;
                greeting[9] = 0x7f;
                greeting[10] = 3;
                greeting.write('NULL', 12);
                const junk = Buffer.from(Array.from({ length: 256 + rng.int(4096) }, () => rng.int(256)));
                const payload = rng.chance(0.5) ? Buffer.concat([greeting, junk]) : junk;
                rawBytes += payload.length;
                s.write(payload);
                setTimeout(() => s.destroy(), 20);
              });
            });
          }
        })(),
      );
    }
    await sleep(200);
    const run = await runPolicy(remoteDriver(good), { seed: 2718, steps: opts.steps });
    stop = true;
    await Promise.all(intruders);
    const reference = await runPolicy(localDriver(), { seed: 2718, steps: opts.steps });
    const st = await server.stats();
    return {
      intruders: { wrong_key: opts.intruders, no_curve: opts.intruders, raw_tcp: opts.intruders },
      intruder_requests_sent: sent,
      intruder_replies: replies,
      intruder_sends_refused: sendsRefused,
      raw_tcp_bytes_sent: rawBytes,
      good_client_steps: opts.steps,
      good_client_identical: run.hash === reference.hash,
      requests_reaching_server: st.counters.received,
      good_client_requests: opts.steps + run.episodes,
      server_alive: server.alive,
    };
  } finally {
    stop = true;
    await good.close();
    await server.stop();
  }
}

/** Report of the session-cap race. */
export interface SessionCapReport {
  max_sessions: number;
  attempts: number;
  created: number;
  refused_session_limit: number;
  other_errors: string[];
  message: string;
  created_after_closing: number;
}

/** Many clients racing resets against a small cap: exactly the cap succeeds, the rest get a clear error. */
export async function sessionCapRace(opts: { maxSessions: number; clients: number; resetsPerClient: number }): Promise<SessionCapReport> {
  const server = await ServerChild.start({ maxSessions: opts.maxSessions });
  const clients = Array.from({ length: opts.clients }, () => new Client({ endpoint: server.endpoint, timeoutMs: 60_000 }));
  try {
    const created: { c: Client; s: string }[] = [];
    let refusedCount = 0;
    let message = '';
    const other: string[] = [];
    await Promise.all(
      clients.flatMap((c, i) =>
        Array.from({ length: opts.resetsPerClient }, async (_, j) => {
          try {
            created.push({ c, s: (await c.reset({ seed: i * 100 + j })).session });
          } catch (e) {
            if (e instanceof ProtocolError && e.code === 'session_limit') {
              refusedCount++;
              message = e.message;
            } else other.push(String(e));
          }
        }),
      ),
    );
    // Closing some makes room again, exactly as many.
    const toClose = created.slice(0, Math.min(5, created.length));
    for (const x of toClose) await x.c.closeSession(x.s);
    let again = 0;
    for (let k = 0; k < toClose.length + 3; k++) {
      try {
        await (clients[0] as Client).reset({ seed: 9000 + k });
        again++;
      } catch (e) {
        if (!(e instanceof ProtocolError && e.code === 'session_limit')) other.push(String(e));
      }
    }
    return {
      max_sessions: opts.maxSessions,
      attempts: opts.clients * opts.resetsPerClient,
      created: created.length,
      refused_session_limit: refusedCount,
      other_errors: other.slice(0, 5),
      message,
      created_after_closing: again,
    };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  }
}
