/**
 * Issue 12, F1: one turn of 256 `scratchpad read` calls over a full scratchpad made 67 MB of tool output, kept in
 * the chat history, and took the server down. The tool output of one turn is now capped: later calls of the turn
 * are not executed and answer a clear error; the run goes on.
 */
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import { DEFAULT_MAX_TURN_OUTPUT_CHARS, TurnEnv } from '../../src/turns/turns.js';

const FILL = Array.from({ length: 4 }, () => `yc-bench scratchpad append --content ${'x'.repeat(60_000)}`);
const READS = (n: number): string[] => Array.from({ length: n }, () => 'yc-bench scratchpad read');

describe('per-turn tool output cap (F1)', () => {
  it('stops executing the calls of a turn once its tool output reached the cap, and the run goes on', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, preset: 'default' });
    expect(env.step(FILL).toolResults.every((r) => r.ok)).toBe(true);
    const r = env.step(READS(64));
    expect(r.toolResults).toHaveLength(64);
    const ran = r.toolResults.filter((x) => x.ok);
    const refused = r.toolResults.filter((x) => !x.ok);
    // Each read prints ~240 K characters: 5 reads reach the 1 Mi cap, the other 59 are refused without running.
    expect(ran.length).toBe(5);
    expect(refused.length).toBe(59);
    for (const x of refused) {
      expect(x.exit_code).toBe(2);
      expect(x.stdout).toBe('');
      expect(x.stderr).toMatch(/^not executed: the tool output of this turn reached \d+ characters \(limit 1048576\); end the turn and go on in the next one$/);
    }
    // The chat holds a tool message for every call (well-formed for the LLM API), at most one read beyond the cap.
    const msgs = env.messages();
    const tools = msgs.filter((m) => m.role === 'tool');
    const lastTurn = tools.slice(-64);
    const chars = lastTurn.reduce((n, m) => n + (m.role === 'tool' ? m.content.length : 0), 0);
    expect(chars).toBeLessThan(DEFAULT_MAX_TURN_OUTPUT_CHARS + 300_000);
    // The next turn starts with a fresh budget.
    const next = env.step(READS(2));
    expect(next.toolResults.every((x) => x.ok)).toBe(true);
    expect(next.done).toBe(false);
  });

  it('a snapshot taken mid-turn keeps the budget spent: the restored turn refuses at the same call', () => {
    const env = new TurnEnv();
    env.reset({ seed: 1, preset: 'default' });
    env.step(FILL);
    for (const c of READS(3)) env.run(c);
    const copy = new TurnEnv();
    copy.restore(JSON.parse(JSON.stringify(env.snapshot())));
    const go = (e: TurnEnv) => READS(4).map((c) => e.run(c).ok);
    // 3 reads before the snapshot, then 2 more run (5 reach the cap) and the rest are refused, in both.
    expect(go(copy)).toEqual([true, true, false, false]);
    expect(go(env)).toEqual([true, true, false, false]);
    expect(copy.endTurn()).toEqual(env.endTurn());
  });

  it('takes a smaller cap from the constructor and refuses a bad one', () => {
    const env = new TurnEnv({ maxTurnOutputChars: 1000 });
    env.reset({ seed: 2, preset: 'default' });
    const r = env.step(['yc-bench market browse --limit 5', 'yc-bench company status', 'yc-bench employee list']);
    expect(r.toolResults[0]?.ok).toBe(true);
    expect(r.toolResults.slice(1).every((x) => x.stderr.startsWith('not executed'))).toBe(true);
    expect(() => new TurnEnv({ maxTurnOutputChars: 0 })).toThrow(RangeError);
  });

  it('bounds the reply of a turn_step over the protocol', () => {
    const presets = listPresets();
    const h = new ProtocolHandler(new SessionManager({ presets }), { version: '9.9.9', presets, maxMessageBytes: 1 << 20 }, { validateReplies: true });
    const reset = h.handleValue({ v: 1, op: 'turn_reset', seed: 3 }).reply as { ok: true; result: { session: string } };
    const session = reset.result.session;
    expect(h.handleValue({ v: 1, op: 'turn_step', session, action: { commands: FILL } }).reply.ok).toBe(true);
    const out = h.handleValue({ v: 1, op: 'turn_step', session, action: { commands: READS(256) } });
    expect(out.reply.ok).toBe(true);
    // Before: ~67 MB (256 full reads) in one reply and in the history; now about the cap.
    expect(out.frame.length).toBeLessThan(4 * DEFAULT_MAX_TURN_OUTPUT_CHARS);
    const msgs = h.handleValue({ v: 1, op: 'turn_messages', session });
    expect(msgs.frame.length).toBeLessThan(6 * DEFAULT_MAX_TURN_OUTPUT_CHARS);
  });
});
