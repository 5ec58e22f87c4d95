/**
 * The one episode loop: the same episode whichever way it is driven (in-process without hooks through
 * `Env.advance`, in-process with an `onStep` hook through `Env.step`, asynchronously over an env that only speaks
 * JSON like a remote one), and the decoding of output text for envs that send only text.
 */
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env, type EnvLike, type EnvSnapshot, type ResetArgs, type ResetResult, type StepResult } from '../../src/env/env.js';
import { outputValue, runEpisode, runEpisodeAsync } from '../../src/env/episode.js';
import { toPlain } from '../../src/sim/index.js';

const cfg = loadPreset('default');

/** An in-process env seen only through JSON text, as a client of a server sees one (no typed values). */
class JsonOnlyEnv implements EnvLike {
  private readonly env = new Env();
  async reset(args: ResetArgs): Promise<ResetResult> {
    return JSON.parse(JSON.stringify(this.env.reset(args))) as ResetResult;
  }
  async step(action: string): Promise<StepResult> {
    return JSON.parse(JSON.stringify(this.env.step(action))) as StepResult;
  }
  async snapshot(): Promise<EnvSnapshot> {
    return this.env.snapshot();
  }
  async restore(snap: EnvSnapshot): Promise<ResetResult> {
    return this.env.restore(snap);
  }
  close(): void {
    this.env.close();
  }
}

describe('runEpisode: one loop for every env', () => {
  it.each([
    ['greedy', 2, undefined],
    ['expert', 1, 300],
    ['random', 4, 150],
  ] as const)('%s seed %i (max_steps %s): same steps and result without hooks, with a hook, and over JSON-only async', async (name, seed, maxSteps) => {
    const args: ResetArgs = { seed, preset: cfg, ...(maxSteps !== undefined ? { options: { max_steps: maxSteps } } : {}) };
    const fast = runEpisode(new Env(), makePolicy(name), args);
    const actions: string[] = [];
    const hooked = runEpisode(new Env(), makePolicy(name), args, { onStep: (s) => actions.push(s.action) });
    expect(hooked).toEqual(fast);
    expect(actions.length).toBe(fast.stepCount);
    const remoteActions: string[] = [];
    const remoteArgs: ResetArgs = { ...args, preset: 'default' };
    const remote = await runEpisodeAsync(new JsonOnlyEnv(), makePolicy(name), remoteArgs, { onStep: (s) => remoteActions.push(s.action) });
    expect(remote).toEqual(fast);
    expect(remoteActions).toEqual(actions);
    expect(fast.terminated).toBe(fast.outcome !== 'truncated');
    expect(fast.truncated).toBe(!fast.terminated);
    if (maxSteps !== undefined) expect(fast.stepCount).toBeLessThanOrEqual(maxSteps);
  });

  it('the loop stops at the terminal step: the env is never stepped past the end', () => {
    const env = new Env();
    const r = runEpisode(env, makePolicy('greedy'), { seed: 3, preset: cfg });
    expect(r.outcome).toBe('bankruptcy');
    expect(r.bankrupt).toBe(true);
    expect(() => env.step('company status')).toThrow(/episode is over/);
  });

  it('onAdvance sees every step\'s outcome, the same whether the env builds observations or not', async () => {
    type Seen = [number, string, number, number, boolean, boolean, unknown];
    const args: ResetArgs = { seed: 4, preset: cfg, options: { max_steps: 120 } };
    const watch = (seen: Seen[]) => (s: { step: number; action: string; result: { exit_code: number; reward: number; terminated: boolean; truncated: boolean; info: unknown } }) =>
      seen.push([s.step, s.action, s.result.exit_code, s.result.reward, s.result.terminated, s.result.truncated, s.result.info]);
    const fast: Seen[] = [];
    runEpisode(new Env(), makePolicy('random'), args, { onAdvance: watch(fast) });
    const stepped: Seen[] = [];
    const steps: number[] = [];
    runEpisode(new Env(), makePolicy('random'), args, { onStep: (s) => steps.push(s.step), onAdvance: watch(stepped) });
    const remote: Seen[] = [];
    await runEpisodeAsync(new JsonOnlyEnv(), makePolicy('random'), { ...args, preset: 'default' }, { onAdvance: watch(remote) });
    expect(fast.length).toBe(120);
    expect(fast.map((x) => x[0])).toEqual(steps);
    expect(stepped).toEqual(fast);
    expect(remote).toEqual(fast);
  });

  it('hooks see the reset and every step in order', () => {
    const seen: number[] = [];
    runEpisode(new Env(), makePolicy('random'), { seed: 1, preset: cfg, options: { max_steps: 7 } }, { onReset: (f) => seen.push(f.info.step), onStep: (s) => seen.push(s.step) });
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('outputValue: the value of an output that came as text', () => {
  it('JSON documents, usage errors, help text', () => {
    const env = new Env();
    env.reset({ seed: 1, preset: cfg });
    for (const cmd of ['company status', 'task accept --task-id nope', 'no such command', 'task accept', 'sim --help', 'market browse --limit 2']) {
      const r = env.step(cmd);
      const v = outputValue(r.observation);
      const typed = toPlain(env.lastValue);
      expect(v).toEqual(typed);
    }
  });
});
