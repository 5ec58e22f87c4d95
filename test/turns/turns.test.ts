/** TurnEnv behaviour: auto-advance, resume detection, truncation, scratchpad staleness, episodes, fixes, snapshots. */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import type { ExperimentConfig } from '../../src/sim/config/types.js';
import { EnvUsageError } from '../../src/env/env.js';
import { TurnEnv, type ChatMessage } from '../../src/turns/turns.js';

const START = [
  'yc-bench task accept --task-id Task-10',
  'yc-bench task assign --task-id Task-10 --employees Emp_4,Emp_6,Emp_7,Emp_8',
  'yc-bench task dispatch --task-id Task-10',
];

const users = (ms: ChatMessage[]): string[] => ms.filter((m) => m.role === 'user').map((m) => m.content);
const system = (env: TurnEnv): string => env.messages()[0]?.content ?? '';

function poorPreset(): ExperimentConfig {
  const cfg = loadPreset('default');
  cfg.world.initial_funds_cents = 1_000_000; // $10,000: the first payroll bankrupts the company
  return cfg;
}

describe('auto-advance and resume detection', () => {
  it('after N turns without a resume the harness resumes by itself; the agent does not see the command', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, options: { auto_advance_after_turns: 3 } });
    let r = env.step(START);
    expect(r.info).toMatchObject({ turns_since_resume: 1, auto_advanced: false, resumed: false });
    expect(r.nextUserMessage?.startsWith('## Turn 2 — Simulation State')).toBe(true);
    r = env.step([]);
    expect(r.info.turns_since_resume).toBe(2);
    r = env.step(['yc-bench company status']);
    expect(r.info.auto_advanced).toBe(true);
    expect(r.info.auto_resume?.exit_code).toBe(0);
    expect(r.info.turns_since_resume).toBe(0);
    expect(r.info.sim_time).toBe('2025-01-17T11:13:55.712087');
    // Labelled with the turn that just ended (3), as the reference does, and carrying the wake events.
    expect(r.nextUserMessage).toContain('## Turn 3 — Simulation State\n- **Current time**: 2025-01-17T11:13:55.712087');
    expect(r.nextUserMessage).toContain('### Events since last turn:\n- Task-10 (client: Vanguard ML): FAILED — missed deadline [late by 185h], no reward');
    const tools = env.messages().filter((m) => m.role === 'tool');
    expect(tools.some((m) => m.content.includes('sim resume'))).toBe(false);
  });

  it('a blocked auto-resume (no active task) still resets the counter and labels the next context with the previous turn', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, options: { auto_advance_after_turns: 2 } });
    env.step([]);
    const r = env.step([]);
    expect(r.info.auto_advanced).toBe(true);
    expect(r.info.auto_resume?.stdout).toContain('No active tasks');
    expect(r.info.turns_since_resume).toBe(0);
    expect(r.nextUserMessage?.startsWith('## Turn 2 — Simulation State')).toBe(true);
    expect(r.info.sim_time).toBe('2025-01-01T09:00:00');
  });

  it("the agent's blocked resume counts as a resume; the last resume of a turn wins", () => {
    const env = new TurnEnv();
    env.reset({ seed: 1 });
    let r = env.step(['yc-bench sim resume']);
    expect(r.info.resumed).toBe(true);
    expect(r.toolResults[0]?.exit_code).toBe(1);
    expect(r.nextUserMessage?.startsWith('## Turn 1 — Simulation State')).toBe(true);
    // A resume with bad arguments prints nothing on stdout and does not count.
    r = env.step(['yc-bench sim resume --now']);
    expect(r.info.resumed).toBe(false);
    expect(r.nextUserMessage?.startsWith('## Turn 3 — Simulation State')).toBe(true);
    // Two resumes: the first one advances, the second one's payload (blocked: nothing active) is what counts.
    r = env.step([...START, 'yc-bench sim resume', 'yc-bench sim resume']);
    expect(r.info.resumed).toBe(true);
    expect(r.nextUserMessage).not.toContain('Events since last turn');
    expect(r.nextUserMessage?.startsWith('## Turn 3 — Simulation State\n- **Current time**: 2025-01-17T11:13:55.712087')).toBe(true);
  });
});

describe('history truncation', () => {
  it('keeps the last K rounds behind the marker once there are more than K user messages', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, options: { history_keep_rounds: 3 } });
    for (let t = 1; t <= 3; t++) env.step([`yc-bench scratchpad append --content t${t}`]);
    // Turn 4: 3 earlier rounds + the new message, no marker yet.
    expect(users(env.messages())).toHaveLength(4);
    expect(env.messages()[1]?.content).toContain('## Simulation Start');
    env.step(['yc-bench scratchpad append --content t4']);
    const ms = env.messages();
    expect(ms[1]).toEqual({ role: 'user', content: '[Earlier turns removed. Only the last 3 turns are retained in this context window.]' });
    expect(ms[2]?.content).toMatch(/^## Turn 2 — /);
    expect(users(ms)).toHaveLength(5); // marker + rounds 2, 3, 4 + turn 5
    env.step([]);
    const ms2 = env.messages();
    expect(ms2.filter((m) => m.content?.startsWith('[Earlier turns removed')).length).toBe(1);
    expect(ms2[2]?.content).toMatch(/^## Turn 3 — /);
  });
});

describe('scratchpad in the system prompt', () => {
  it('is stale on a turn that follows a resume (reference) and fresh with the fix', () => {
    for (const fresh of [false, true]) {
      const env = new TurnEnv();
      env.reset({ seed: 1, options: { fixes: { fresh_scratchpad: fresh } } });
      env.step([...START, 'yc-bench scratchpad write --content "plan A"', 'yc-bench sim resume']);
      expect(system(env).includes('## Your Scratchpad Notes\nplan A')).toBe(fresh);
      env.step([]);
      expect(system(env).endsWith('\n\n## Your Scratchpad Notes\nplan A')).toBe(true);
    }
  });
});

describe('fixes', () => {
  it('resume_turn_label and memory_note_rounds', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, options: { history_keep_rounds: 6, fixes: { resume_turn_label: true, memory_note_rounds: true } } });
    const r = env.step(['yc-bench sim resume']);
    expect(r.nextUserMessage).toContain('## Turn 2 — Simulation State');
    expect(r.nextUserMessage).toContain('- **Memory**: Your context window holds 6 turns. 4 turns before oldest messages start dropping.');
    expect(() => new TurnEnv().reset({ seed: 1, options: { fixes: { nope: true } as never } })).toThrow(RangeError);
  });

  it('commands without the prefix are rejected as in the reference unless accept_unprefixed', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1 });
    let r = env.step(['company status']);
    expect(r.toolResults[0]).toEqual({ ok: false, exit_code: 2, stdout: '', stderr: 'only top-level `yc-bench` commands are allowed', sim_time: null, command: 'company status' });
    env.reset({ seed: 1, options: { accept_unprefixed: true, auto_advance_after_turns: 99 } });
    r = env.step([...START.map((c) => c.replace('yc-bench ', '')), 'sim resume']);
    expect(r.toolResults.every((t) => t.ok)).toBe(true);
    expect(r.info.resumed).toBe(true);
  });
});

describe('max_turns and terminal states', () => {
  it('max_turns ends the run as an error; stepping afterwards is a usage error', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, options: { max_turns: 2 } });
    expect(env.step([]).done).toBe(false);
    const r = env.step([]);
    expect(r).toMatchObject({ done: true, terminalReason: 'error', nextUserMessage: null });
    expect(r.info.terminal_detail).toBe('max_turns=2 reached');
    expect(() => env.step([])).toThrow(EnvUsageError);
  });
});

function goBankrupt(env: TurnEnv): ReturnType<TurnEnv['step']> {
  // One employee on Task-10: the task outlasts the first payroll, which the $10,000 company cannot pay.
  const slow = [START[0] as string, 'yc-bench task assign --task-id Task-10 --employees Emp_1', START[2] as string];
  let r = env.step([...slow, 'yc-bench scratchpad write --content "remember: hire less"', 'yc-bench sim resume']);
  for (let i = 0; i < 10 && !r.info.episode_end; i++) r = env.step(['yc-bench sim resume']);
  return r;
}

describe('episodes after bankruptcy', () => {
  it('a restored env restarts from the config it restored, whatever the caller does to the snapshot afterwards', () => {
    const a = new TurnEnv();
    a.reset({ seed: 1, preset: poorPreset(), options: { max_episodes: 2 } });
    const snap = structuredClone(a.snapshot());
    const env = new TurnEnv();
    env.restore(snap);
    // The caller's snapshot object, changed after the restore: the restart after the bankruptcy must not see it (it
    // used to: the env kept the snapshot's config object, not the validated copy its simulation runs on).
    snap.sim.config.world.initial_funds_cents = 3_000_000;
    const r = goBankrupt(env);
    expect(r.info.episode).toBe(2);
    expect(r.nextUserMessage).toContain('- **Funds**: $10,000.00 (1000000 cents)');
  });

  it('reference: fresh world with the same seed, scratchpad kept, chat and turn count carried over', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, preset: poorPreset(), options: { max_episodes: 2 } });
    const r = goBankrupt(env);
    expect(r.info.episode_end).toMatchObject({ episode: 1, terminal_reason: 'bankruptcy' });
    expect(r.done).toBe(false);
    expect(r.info.episode).toBe(2);
    const turn = r.info.turn;
    expect(r.nextUserMessage?.startsWith(`## Turn ${turn + 1} — Simulation State`)).toBe(true);
    expect(r.nextUserMessage).toContain('- **Funds**: $10,000.00 (1000000 cents)');
    expect(system(env).endsWith('## Your Scratchpad Notes\nremember: hire less')).toBe(true);
    expect(users(env.messages())[0]).toContain('## Simulation Start'); // episode 1's chat is still there
    const r2 = goBankrupt(env);
    expect(r2).toMatchObject({ done: true, terminalReason: 'bankruptcy' });
    expect(r2.info.episode_end?.episode).toBe(2);
  });

  it('episode_restart fix: chat cleared, turn 1 with the episode prompt', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, preset: poorPreset(), options: { max_episodes: 3, fixes: { episode_restart: true } } });
    const r = goBankrupt(env);
    expect(r.info).toMatchObject({ episode: 2, turn: 0 });
    const ms = env.messages();
    expect(ms).toHaveLength(2);
    expect(ms[0]?.content?.endsWith('## Your Scratchpad Notes\nremember: hire less')).toBe(true);
    expect(ms[1]?.content?.startsWith('## Episode 2 — Restarting After Bankruptcy\n\nYou went bankrupt in episode 1.')).toBe(true);
    expect(ms[1]?.content).toContain('- funds: $10,000.00');
  });
});

describe('snapshot and restore', () => {
  it('continue identically after a JSON round trip', () => {
    const a = new TurnEnv();
    a.reset({ seed: 4, options: { auto_advance_after_turns: 2, history_keep_rounds: 2 } });
    a.step(['yc-bench market browse --limit 2', 'yc-bench scratchpad write --content x']);
    a.step(START.map((c) => c.replace(/Task-10/g, 'Task-1')));
    const b = new TurnEnv();
    b.restore(JSON.parse(JSON.stringify(a.snapshot())));
    expect(b.messages()).toEqual(a.messages());
    for (const cmds of [[], ['yc-bench sim resume'], ['yc-bench task list'], []]) {
      expect(b.step(cmds)).toEqual(a.step(cmds));
      expect(b.messages()).toEqual(a.messages());
    }
    const c = a.clone();
    expect(c.step(['yc-bench company status'])).toEqual(a.step(['yc-bench company status']));
  });
});

describe('horizon end', () => {
  it('a run that survives the year ends with horizon_end from the resume payload', () => {
    const cfg = loadPreset('default');
    cfg.world.initial_funds_cents = 10_000_000_000;
    const env = new TurnEnv();
    env.reset({ seed: 5, preset: cfg });
    let r: ReturnType<TurnEnv['step']> | null = null;
    for (let turn = 0; turn < 400 && !env.done; turn++) {
      const browse = env.run('yc-bench market browse --limit 1');
      const top = (JSON.parse(browse.stdout) as { tasks: { task_id: string }[] }).tasks[0]?.task_id;
      if (top) {
        env.run(`yc-bench task accept --task-id ${top}`);
        env.run(`yc-bench task assign --task-id ${top} --employees Emp_1,Emp_2,Emp_3,Emp_4,Emp_5,Emp_6,Emp_7,Emp_8`);
        env.run(`yc-bench task dispatch --task-id ${top}`);
      }
      env.run('yc-bench sim resume');
      r = env.endTurn();
    }
    expect(r).toMatchObject({ done: true, terminalReason: 'horizon_end', nextUserMessage: null });
    expect(r?.info.episode_end).toMatchObject({ episode: 1, terminal_reason: 'horizon_end', terminal_detail: 'horizon_end' });
    expect(r?.info.sim_time).toBe('2026-01-01T09:00:00');
  });
});
