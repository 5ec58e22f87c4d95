/**
 * The turn protocol through the one episode loop (`runTurnEpisode`): a scripted turn agent plays the same run as
 * stepping the `TurnEnv` by hand, the loop's result follows the env's terminal rule (bankruptcy / horizon terminate,
 * `max_turns` truncates, an agent that stops truncates), and `ycgym play` (a turn agent fed by readline) handles
 * piped input in bursts without losing lines.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runPlay } from '../../src/cli/play.js';
import { makePolicy } from '../../baselines/index.js';
import { outputValue } from '../../src/env/episode.js';
import { type Out, toPlain } from '../../src/sim/index.js';
import { commandPolicyAgent, runTurnEpisode, type TurnAgent, type TurnObservation } from '../../src/turns/episode.js';
import { type TurnAction, type TurnResetArgs, TurnEnv, type TurnStepResult } from '../../src/turns/turns.js';

/** Accept the best listed task, staff it with everyone, dispatch, resume; browse again when nothing is open. */
class ScriptedAgent implements TurnAgent {
  readonly name = 'scripted';
  seen: TurnObservation[] = [];
  private n = 0;
  constructor(private readonly stopAfter: number | null = null) {}
  reset(): void {
    this.n = 0;
    this.seen = [];
  }
  act(obs: TurnObservation): TurnAction | null {
    this.seen.push(obs);
    if (this.stopAfter !== null && this.n >= this.stopAfter) return null;
    this.n++;
    if (this.n % 3 === 1) return { commands: ['yc-bench market browse --limit 3', 'yc-bench task accept --task-id Task-10'] };
    if (this.n % 3 === 2) return { commands: ['yc-bench task assign --task-id Task-10 --employee-id Emp_1', 'yc-bench task dispatch --task-id Task-10'] };
    return { commands: ['yc-bench sim resume'], content: 'waiting' };
  }
}

function byHand(args: TurnResetArgs, agent: ScriptedAgent, max: number): { results: TurnStepResult[]; env: TurnEnv } {
  const env = new TurnEnv();
  const first = env.reset(args);
  agent.reset();
  let obs: TurnObservation = { userMessage: first.messages[1]?.content ?? null, info: first.info, toolResults: [], values: env.lastTurnValues, messages: () => env.messages() };
  const results: TurnStepResult[] = [];
  for (let i = 0; i < max && !env.done; i++) {
    const a = agent.act(obs);
    if (a === null) break;
    const r = env.step(a);
    results.push(r);
    obs = { userMessage: r.nextUserMessage, info: r.info, toolResults: r.toolResults, values: env.lastTurnValues, messages: () => env.messages() };
  }
  return { results, env };
}

describe('runTurnEpisode: the turn protocol through the one loop', () => {
  it('plays the same run as stepping by hand; max_turns truncates', async () => {
    const args: TurnResetArgs = { seed: 1, preset: 'default', options: { max_turns: 12 } };
    const hand = byHand(args, new ScriptedAgent(), 1000);
    const env = new TurnEnv();
    const agent = new ScriptedAgent();
    const turns: TurnStepResult[] = [];
    const r = await runTurnEpisode(env, agent, args, { onStep: (t) => turns.push(t.result) });
    expect(turns).toEqual(hand.results);
    expect(env.messages()).toEqual(hand.env.messages());
    expect(r.stepCount).toBe(12);
    expect(r.outcome).toBe('truncated');
    expect(r.truncated).toBe(true);
    expect(r.finalFundsCents).toBe(hand.results.at(-1)?.info.funds_cents);
    // The agent saw each turn's user message and the last turn's tool results.
    expect(agent.seen[1]?.userMessage).toBe(hand.results[0]?.nextUserMessage);
    expect(agent.seen[1]?.toolResults.map((t) => t.command)).toEqual(['yc-bench market browse --limit 3', 'yc-bench task accept --task-id Task-10']);
    expect((await agent.seen[2]?.messages())?.[0]?.role).toBe('system');
  });

  it("in process the agent sees each call's typed value: what its tool result's text decodes to", async () => {
    const env = new TurnEnv();
    const agent = new ScriptedAgent();
    await runTurnEpisode(env, agent, { seed: 1, preset: 'default', options: { max_turns: 4 } });
    const seen = agent.seen.slice(1);
    expect(seen.length).toBe(3);
    for (const o of seen) {
      expect(o.values).not.toBeNull();
      expect(o.values?.length).toBe(o.toolResults.length);
      o.toolResults.forEach((t, i) => {
        const v = toPlain(o.values?.[i] as Out);
        // A usage error's text is a rich panel on stderr (nothing to decode); its value is the `{error}` it renders.
        if (t.exit_code === 2) expect(v).toEqual({ error: expect.any(String) as unknown });
        else expect(v).toEqual(outputValue({ text: t.stdout, exit_code: t.exit_code }));
      });
    }
  });

  it('an agent that stops truncates the run; the env is left open', async () => {
    const env = new TurnEnv();
    const r = await runTurnEpisode(env, new ScriptedAgent(2), { seed: 2, preset: 'default' });
    expect(r).toMatchObject({ stepCount: 2, outcome: 'truncated', terminated: false, truncated: true, policy: 'scripted', seed: 2 });
    expect(env.done).toBe(false);
  });

  it.each([
    [3, 'bankruptcy'],
    [1, 'horizon_end'],
  ] as const)('a baseline as a turn agent (seed %i): the run ends by the simulation (%s) and is terminated', async (seed, outcome) => {
    const turns: TurnStepResult[] = [];
    const r = await runTurnEpisode(new TurnEnv(), commandPolicyAgent(makePolicy('greedy')), { seed, preset: 'default', options: { max_turns: 5000 } }, { onStep: (t) => turns.push(t.result) });
    expect(r).toMatchObject({ outcome, terminated: true, truncated: false, policy: 'greedy', bankrupt: outcome === 'bankruptcy' });
    expect(r.stepCount).toBe(turns.length);
    const last = turns.at(-1);
    expect(last?.done).toBe(true);
    expect(last?.terminalReason).toBe(outcome);
    expect(r.finalFundsCents).toBe(last?.info.funds_cents);
    // One command per turn, as the baseline chose it.
    expect(turns.every((t) => t.toolResults.length === 1)).toBe(true);
  });
});

async function play(input: string): Promise<string> {
  const inp = new PassThrough();
  const out = new PassThrough();
  let text = '';
  out.on('data', (b: Buffer) => (text += b.toString('utf8')));
  const done = runPlay({ seed: 1, preset: 'default', fixes: {}, maxEpisodes: 1, input: inp, output: out, color: false });
  inp.end(input);
  await done;
  return text;
}

describe('ycgym play over piped input', () => {
  it('every line of a burst is handled, in order, across turns', async () => {
    const text = await play(['market browse --limit 3', 'task accept --task-id Task-10', 'end', 'company status', 'quit', 'company status'].join('\n') + '\n');
    expect(text).toContain('ycgym play — seed 1, preset default');
    expect(text).toContain('3 shown (offset 0, limit 3)');
    expect(text).toContain('"status": "planned"');
    const turn2 = text.indexOf('[turn 2]');
    expect(turn2).toBeGreaterThan(text.indexOf('"status": "planned"'));
    // `company status` ran once, in turn 2; the line after `quit` did not run.
    expect(text.split('"company_name"').length - 1).toBe(1);
    expect(text.indexOf('"company_name"')).toBeGreaterThan(turn2);
    expect(text.indexOf('[turn 3]')).toBe(-1);
  });

  it('a resume that returns its payload ends the turn; end of input leaves', async () => {
    const text = await play(['task accept --task-id Task-10', 'task assign --task-id Task-10 --employee-id Emp_1', 'task dispatch --task-id Task-10', 'sim resume'].join('\n') + '\n');
    expect(text).toContain('[turn 2]');
    expect(text).not.toContain('Run over');
  });
});
