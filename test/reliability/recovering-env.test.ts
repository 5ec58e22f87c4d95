/**
 * The recovery recipe (docs/reliability.md) as a library: `RecoveringEnv` rebuilds its episode after the
 * server restarts or reaps its session, and the trajectory is byte-identical to an uninterrupted in-process
 * run. Servers run in child processes on loopback (closing and re-binding a ZeroMQ server in the same
 * process as a connected client can trip a libzmq assertion and abort the process); every wait bounded.
 */
import { describe, expect, it } from 'vitest';
import { RecoveringEnv } from '../../src/client/recovering-env.js';
import { Client, ProtocolError } from '../../src/client/client.js';
import { ServerChild } from '../../scripts/reliability/lib/children.js';
import { localDriver, runPolicy, type Driver } from '../../scripts/reliability/lib/policy.js';

type Server = ServerChild;
const startServer = (opts: { endpoint: string; idleTimeoutMs?: number }): Promise<Server> => ServerChild.start(opts);

/** Start a server on `endpoint`, retrying while the previous one's port is still being released (bounded). */
async function restartOn(endpoint: string): Promise<Server> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startServer({ endpoint });
    } catch (e) {
      if (attempt >= 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function driverOf(env: RecoveringEnv, afterStep: (n: number) => Promise<void>): Driver {
  let n = 0;
  return {
    reset: (seed, options) => env.reset({ seed, options }),
    step: async (action) => {
      const r = await env.step(action);
      await afterStep(++n);
      return r;
    },
  };
}

describe('RecoveringEnv', () => {
  for (const snapshotEvery of [1, 7, 64]) {
    it(`survives server restarts (snapshot every ${snapshotEvery} steps) with an identical trajectory`, async () => {
      let server: Server = await startServer({ endpoint: 'tcp://127.0.0.1:0' });
      const endpoint = server.endpoint;
      const env = new RecoveringEnv({ endpoint, timeoutMs: 500, snapshotEvery, retryDelayMs: 20, recoverWithinMs: 20_000 });
      const restartAt = new Set([40, 41, 97, 150]);
      try {
        const run = await runPolicy(
          driverOf(env, async (n) => {
            if (!restartAt.has(n)) return;
            await server.stop(); // every session is gone
            server = await restartOn(endpoint);
          }),
          { seed: 77, steps: 200, maxSteps: 120 },
        );
        const ref = await runPolicy(localDriver(), { seed: 77, steps: 200, maxSteps: 120 });
        expect(run.hash).toBe(ref.hash);
        expect(env.recoveries).toBe(restartAt.size);
      } finally {
        await env.close();
        await server.stop();
      }
    });
  }

  it('rebuilds a session the server reaped while the client was idle', async () => {
    const server = await startServer({ endpoint: 'tcp://127.0.0.1:0', idleTimeoutMs: 150 });
    const env = new RecoveringEnv({ endpoint: server.endpoint, timeoutMs: 2000, snapshotEvery: 5 });
    try {
      const run = await runPolicy(
        driverOf(env, async (n) => {
          if (n % 25 === 0) await new Promise((r) => setTimeout(r, 400));
        }),
        { seed: 12, steps: 60 },
      );
      expect(run.hash).toBe((await runPolicy(localDriver(), { seed: 12, steps: 60 })).hash);
      expect(env.recoveries).toBeGreaterThan(0);
    } finally {
      await env.close();
      await server.stop();
    }
  });

  it('session ids are not reused across server instances: a stale request cannot reach a new session', async () => {
    const a = await startServer({ endpoint: 'tcp://127.0.0.1:0' });
    const endpoint = a.endpoint;
    const c1 = new Client({ endpoint, timeoutMs: 5000 });
    const old = (await c1.reset({ seed: 1 })).session;
    await c1.close();
    await a.stop();
    const b = await restartOn(endpoint);
    const c2 = new Client({ endpoint, timeoutMs: 5000 });
    try {
      const fresh = (await c2.reset({ seed: 2 })).session;
      // The first session of each instance: ids are 128 random bits (issue 12, F7), not `s1.<tag>` any more.
      expect(fresh).toMatch(/^s[A-Za-z0-9_-]{22}$/);
      expect(old).toMatch(/^s[A-Za-z0-9_-]{22}$/);
      expect(fresh).not.toBe(old);
      await expect(c2.step(old, 'company status')).rejects.toMatchObject({ code: 'unknown_session' });
      expect((await c2.step(fresh, 'company status')).info.step).toBe(1);
    } finally {
      await c2.close();
      await b.stop();
    }
  });

  it('gives up with the last error when the server stays down', async () => {
    const server = await startServer({ endpoint: 'tcp://127.0.0.1:0' });
    const env = new RecoveringEnv({ endpoint: server.endpoint, timeoutMs: 200, recoverWithinMs: 800, retryDelayMs: 50 });
    await env.reset({ seed: 1 });
    await server.stop();
    const t0 = Date.now();
    const err = await env.step('company status').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(5000);
    await env.close();
  });
});
