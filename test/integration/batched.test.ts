/**
 * The vector driver of the one episode loop: `runEpisodesBatched` plays many episodes through one `step_batch` per
 * round and gets exactly the results (and steps) of `runEpisode` in process; its resets go out together; a refused
 * reset or step fails the run with the server's error and leaves no session behind.
 */
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { runEpisodesBatched } from '../../src/client/batched.js';
import { Client, ProtocolError } from '../../src/client/client.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { serverFixture } from '../helpers/server-fixture.js';

const fx = serverFixture();
const cfg = loadPreset('default');

describe('runEpisodesBatched', () => {
  it('six episodes of three policies in lockstep equal runEpisode in process, step for step', async () => {
    const plan = [
      ['greedy', 1],
      ['greedy', 3],
      ['random', 2],
      ['expert', 4],
      ['random', 5],
      ['greedy', 6],
    ] as const;
    const options = { max_steps: 400 };
    const actions: string[][] = plan.map(() => []);
    const rounds: number[] = [];
    const got = await runEpisodesBatched(
      fx.client,
      plan.map(([p, seed]) => ({ policy: makePolicy(p), args: { seed, preset: 'default', options } })),
      { onStep: (i, s) => actions[i]?.push(s.action), onRound: (n) => rounds.push(n) },
    );
    for (const [k, [p, seed]] of plan.entries()) {
      const inProcess: string[] = [];
      const want = runEpisode(new Env(), makePolicy(p), { seed, preset: cfg, options }, { onStep: (s) => inProcess.push(s.action) });
      expect(got[k]).toEqual(want);
      expect(actions[k]).toEqual(inProcess);
    }
    // One round per step of the longest episode; the count of running episodes only goes down.
    expect(rounds.length).toBe(Math.max(...got.map((r) => r.stepCount)));
    expect(rounds.at(-1)).toBe(0);
    expect([...rounds].sort((a, b) => b - a)).toEqual(rounds);
  });

  it('a refused step fails the run with the server error; its sessions are closed', async () => {
    const c = new Client({ endpoint: fx.server.endpoint, timeoutMs: 20_000 });
    try {
      const before = fx.server.sessionCount;
      const endless = { name: 'endless', reset() {}, act: () => 'company status' };
      // A command over the server's message limit: the whole step_batch is refused (`message_too_large`).
      const huge = { name: 'huge', reset() {}, act: () => `company status ${'x'.repeat(5_000_000)}` };
      await expect(runEpisodesBatched(c, [{ policy: endless, args: { seed: 1, preset: 'default', options: { stall_steps: 0, max_steps: 3 } } }, { policy: huge, args: { seed: 2, preset: 'default' } }])).rejects.toMatchObject({ code: 'message_too_large' });
      expect(fx.server.sessionCount).toBe(before);
      const again = await runEpisodesBatched(c, [{ policy: endless, args: { seed: 1, preset: 'default', options: { stall_steps: 0, max_steps: 3 } } }]);
      expect(again[0]).toMatchObject({ stepCount: 3, outcome: 'truncated' });
      expect(fx.server.sessionCount).toBe(before);
    } finally {
      await c.close();
    }
  });

  it('sends every reset before the first is answered, and a refused reset closes the sessions the others opened', async () => {
    const c = new Client({ endpoint: fx.server.endpoint, timeoutMs: 20_000 });
    try {
      const before = fx.server.sessionCount;
      const inFlightAtReset: number[] = [];
      const reset = c.reset.bind(c);
      c.reset = (a) => {
        inFlightAtReset.push(c.inFlight);
        return reset(a);
      };
      const short = (seed: number, preset = 'default') => ({ policy: makePolicy('greedy'), args: { seed, preset, options: { max_steps: 2 } } });
      const got = await runEpisodesBatched(c, [short(1), short(2), short(3), short(4)]);
      expect(got.map((r) => r.stepCount)).toEqual([2, 2, 2, 2]);
      // One after another, each reset would find none in flight.
      expect(inFlightAtReset).toEqual([0, 1, 2, 3]);
      expect(fx.server.sessionCount).toBe(before);
      // The middle one names no preset the server has: the episodes before and after it were reset; all are closed.
      await expect(runEpisodesBatched(c, [short(1), short(2, 'no-such-preset'), short(3)])).rejects.toBeInstanceOf(ProtocolError);
      expect(fx.server.sessionCount).toBe(before);
    } finally {
      await c.close();
    }
  });
});
