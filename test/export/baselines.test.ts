import { describe, expect, it } from 'vitest';
import { makePolicy, POLICY_NAMES } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { rollout } from '../../src/export/rollout.js';

const cfg = loadPreset('default');

/** One episode of a baseline through the episode loop, with its commands and output texts. */
function play(seed: number, name: string) {
  const steps: { cmd: string; text: string }[] = [];
  const r = runEpisode(new Env(), makePolicy(name), { seed, preset: cfg }, { onStep: (s) => steps.push({ cmd: s.action, text: s.result.observation.text }) });
  return { ...r, steps };
}

describe('baseline policies', () => {
  it('registry has the five baselines', () => {
    expect(POLICY_NAMES).toEqual(['greedy', 'random', 'throughput', 'prestige', 'expert']);
    expect(() => makePolicy('nope')).toThrow(/unknown policy/);
  });

  it('greedy through the registry reproduces the golden final funds', () => {
    expect(runEpisode(new Env(), makePolicy('greedy'), { seed: 1, preset: cfg }).finalFundsCents).toBe(42029521);
  });

  it.each(['random', 'throughput', 'prestige'])('%s: plays one task at a time with every employee, deterministically', (name) => {
    const a = play(5, name);
    const b = play(5, name);
    expect(a.steps.map((s) => s.cmd)).toEqual(b.steps.map((s) => s.cmd));
    expect(a.finalFundsCents).toBe(b.finalFundsCents);
    const assigns = a.steps.filter((s) => s.cmd.startsWith('task assign'));
    expect(assigns.length).toBeGreaterThan(3);
    for (const s of assigns) expect(s.cmd.split('--employees ')[1]?.split(',').length).toBe(8);
    // Never two tasks at once: each accept is preceded by an empty active list.
    const cmds = a.steps.map((s) => s.cmd);
    for (let i = 0; i < cmds.length; i++) if (cmds[i]?.startsWith('task accept')) expect(a.steps[i - (name === 'prestige' ? 3 : 2)]?.text).toContain('"count": 0');
  });

  it('expert beats the golden focused policy (154001529 on seed 1) by far, without failures', () => {
    const r = rollout(cfg, makePolicy('expert'), { runId: 'r', episodeId: 0, policy: 'expert', preset: 'default', seed: 1 });
    expect(r.episode.outcome).toBe('horizon_end');
    expect(r.episode.final_funds_cents).toBeGreaterThan(2 * 154001529);
    expect(r.episode.tasks_failed).toBe(0);
    expect(r.episode.accepted_from_adversarial).toBeLessThanOrEqual(2);
  });
});
