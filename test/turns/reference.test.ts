/**
 * TurnEnv against recordings of the reference harness itself (recorded by running the reference's
 * `run_benchmark` with a scripted stand-in for litellm and records every `messages` array sent to the LLM).
 * Replaying the same tool calls, `messages()` before every call equals what the reference sent, byte for byte
 * (UUIDs aside), and the run ends the same way.
 *
 * - mixed (seed 1, default + max_turns 26): resumes with wake events, a blocked resume, scratchpad edits, every
 *   kind of command error, help screens, a text-only turn, an empty turn, auto-advance (blocked and real),
 *   truncation at 20 rounds, the stale scratchpad, the end by max_turns.
 * - success (seed 3, task_progress_milestones [0.5], 392 calls): top-4 free specialists per task, a planned-but-not-dispatched
 *   turn, SUCCESS lines with salary bumps, 50% milestone events, payroll events, the end at the horizon.
 * - bankrupt (seed 2, history_keep_rounds 6, max_episodes 2): payroll events, bankruptcy, the second episode
 *   through the reference's crash-recovery path (chat restored, turn numbers continue), a second bankruptcy.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPresetFromText, presetDir } from '../../src/config/load.js';
import { TurnEnv, type ChatMessage, type TurnAction } from '../../src/turns/turns.js';
import { canonMessage, canonMessageTies, fixture } from './helpers.js';

interface Recording {
  scenario: string;
  seed: number;
  max_episodes: number;
  toml: string;
  tools: unknown;
  tool_choice: string;
  pool: ChatMessage[];
  calls: { messages: number[]; reply: { content: string | null; tool_calls: { id: string; name: string; arguments: string }[] } }[];
  terminal_reason: string;
  terminal_detail: string;
  turns_completed: number;
  episodes: { episode?: number; turns_completed: number; terminal_reason: string; terminal_detail: string }[];
  final_scratchpad: unknown;
}

function norm(ms: readonly ChatMessage[]): string[] {
  return ms.map(canonMessage);
}

function replay(rec: Recording, form: 'commands' | 'tool_calls', maxTies = 0): void {
  const cfg = loadPresetFromText(rec.toml, `${rec.scenario}.toml`, (name) => readFileSync(join(presetDir(), `${name}.toml`), 'utf8'));
  const env = new TurnEnv();
  env.reset({ seed: rec.seed, preset: cfg, options: { max_episodes: rec.max_episodes } });
  expect(env.tools()).toEqual(rec.tools);
  const endings: { episode: number; terminal_reason: string; terminal_detail: string; turns_completed: number }[] = [];
  let ties = 0;
  rec.calls.forEach((call, k) => {
    const want = call.messages.map((i) => rec.pool[i] as ChatMessage);
    const got = env.messages();
    // Exact, except where events fell at the same instant (random order in the reference): then the looser form.
    if (JSON.stringify(norm(got)) !== JSON.stringify(norm(want))) {
      expect(got.map(canonMessageTies), `messages before call ${k + 1}`).toEqual(want.map(canonMessageTies));
      ties++;
    }
    const tc = call.reply.tool_calls;
    const action: TurnAction =
      tc.length === 0 ? { content: call.reply.content } : form === 'commands' ? { commands: tc.map((t) => (JSON.parse(t.arguments) as { command: string }).command) } : { tool_calls: tc };
    const r = env.step(action);
    if (r.info.episode_end) endings.push(r.info.episode_end);
    expect(r.done, `done after call ${k + 1}`).toBe(k === rec.calls.length - 1);
  });
  expect(env.done).toBe(true);
  expect(ties, 'calls that matched only up to the order of same-instant events').toBeLessThanOrEqual(maxTies);
  const last = endings[endings.length - 1];
  expect(last?.terminal_reason).toBe(rec.terminal_reason);
  expect(last?.terminal_detail).toBe(rec.terminal_detail);
  // The reference's rollout adds up per-episode turn counts that are already cumulative (24 = 8 + 16 here).
  expect(rec.episodes.reduce((a, e) => a + e.turns_completed, 0)).toBe(rec.turns_completed);
  expect(last?.turns_completed).toBe(rec.episodes[rec.episodes.length - 1]?.turns_completed);
  if (rec.max_episodes > 1) {
    expect(endings.map((e) => [e.episode, e.terminal_reason, e.turns_completed])).toEqual(rec.episodes.map((e) => [e.episode, e.terminal_reason, e.turns_completed]));
  }
}

describe('TurnEnv reproduces the reference harness', () => {
  it('mixed scenario (run_command calls given as command strings)', () => {
    replay(fixture<Recording>('ref-mixed.json.gz'), 'commands');
  });
  it('success scenario with milestones (tool calls given verbatim)', () => {
    // One resume (call 200) completes two tasks at the same instant, which the reference lists in random order;
    // its output stays in the chat for 21 calls (the post-resume context and the 20 kept rounds).
    replay(fixture<Recording>('ref-success.json.gz'), 'tool_calls', 21);
  });
  it('bankruptcy and a second episode (tool calls given verbatim)', () => {
    replay(fixture<Recording>('ref-bankrupt.json.gz'), 'tool_calls');
  });
});
