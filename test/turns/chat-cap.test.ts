/**
 * The chat a turn session keeps is bounded. Before, a client could start a run with `history_keep_rounds` huge and
 * `max_turns: null`, then send turns whose assistant `content` was ~8 MB each: every turn stayed in the history, and
 * about 510 such turns (under two minutes) took the shared server down out of memory (V8 abort: every session lost).
 * Now a turn whose assistant text would take the kept chat past `maxChatChars` (16 Mi characters by default) is refused
 * before it runs (`invalid_request`, state unchanged), and under memory pressure `turn_step`, which adds bulk state,
 * passes the server's admission control like `turn_reset`.
 */
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import { DEFAULT_MAX_CHAT_CHARS, TurnEnv, type ChatMessage } from '../../src/turns/turns.js';
import { EnvUsageError } from '../../src/env/env.js';

const presets = listPresets();

function handler(admit?: () => string | null): ProtocolHandler {
  return new ProtocolHandler(new SessionManager({ presets }), { version: '9.9.9', presets, maxMessageBytes: 1 << 20 }, admit === undefined ? {} : { admit });
}

function chatChars(msgs: readonly ChatMessage[]): number {
  let n = 0;
  for (const m of msgs) {
    if (m.role === 'system') continue;
    n += m.content?.length ?? 0;
    if (m.role === 'assistant') {
      n += m.reasoning_content?.length ?? 0;
      for (const tc of m.tool_calls ?? []) n += tc.id.length + tc.function.name.length + tc.function.arguments.length;
    }
    if (m.role === 'tool') n += m.tool_call_id.length;
  }
  return n;
}

describe('the chat of a turn session is bounded', () => {
  it('refuses, before it runs, a turn whose assistant text would take the kept chat past the cap (over the protocol)', () => {
    const h = handler();
    const reset = h.handleValue({ v: 1, op: 'turn_reset', seed: 1, options: { history_keep_rounds: 1_000_000, max_turns: null } }).reply;
    if (!reset.ok) throw new Error(JSON.stringify(reset));
    const session = (reset.result as { session: string }).session;
    const big = 'é'.repeat(6 * 2 ** 20);
    let refused: { code: string; message: string } | null = null;
    let turns = 0;
    for (let i = 0; i < 6 && refused === null; i++) {
      const r = h.handleValue({ v: 1, op: 'turn_step', session, action: { content: big, commands: ['yc-bench company status'] } }).reply;
      if (r.ok) turns++;
      else refused = r.error;
    }
    // Two turns of 6 Mi characters fit in 16 Mi; the third would not.
    expect(turns).toBe(2);
    expect(refused?.code).toBe('invalid_request');
    expect(refused?.message).toMatch(
      /^\/action: not executed: the chat of this turn session holds \d+ characters and this turn's assistant message adds 6291479 \(limit 16777216\); start a new run \(turn_reset\), keep fewer rounds \(history_keep_rounds\) or send shorter turns$/,
    );
    // Nothing ran: the turn count and the chat are as they were, and a small turn is refused as well while the chat is full.
    const msgs = h.handleValue({ v: 1, op: 'turn_messages', session }).reply as { ok: true; result: { messages: ChatMessage[] } };
    expect(msgs.result.messages.filter((m) => m.role === 'assistant')).toHaveLength(2);
    expect(chatChars(msgs.result.messages)).toBeLessThanOrEqual(DEFAULT_MAX_CHAT_CHARS);
    const small = h.handleValue({ v: 1, op: 'turn_step', session, action: { content: 'x'.repeat(5 * 2 ** 20) } }).reply;
    expect(small.ok ? null : small.error.code).toBe('invalid_request');
    const snap = h.handleValue({ v: 1, op: 'turn_snapshot', session }).reply as { ok: true; result: { snapshot: { state: { turn: number } } } };
    expect(snap.result.snapshot.state.turn).toBe(2);
    // A run that keeps the default 20 rounds forgets old turns and never meets the cap.
    const d = h.handleValue({ v: 1, op: 'turn_reset', seed: 1, options: { max_turns: null } }).reply as { ok: true; result: { session: string } };
    for (let i = 0; i < 30; i++) {
      const r = h.handleValue({ v: 1, op: 'turn_step', session: d.result.session, action: { content: 'x'.repeat(2 ** 19) } }).reply;
      expect(r.ok).toBe(true);
    }
  });

  it('counts tool call ids, names and arguments, and reasoning, as the assistant message holds them (in process)', () => {
    const env = new TurnEnv({ maxChatChars: 200_000 });
    env.reset({ seed: 2, preset: 'default', options: { history_keep_rounds: 1000, max_turns: null } });
    const call = { id: 'c'.repeat(1000), name: 'run_command', arguments: JSON.stringify({ command: 'yc-bench company status', pad: 'p'.repeat(40_000) }) };
    env.step({ tool_calls: [call], reasoning_content: 'r'.repeat(40_000) });
    const before = env.snapshot();
    expect(() => env.step({ tool_calls: [call, call], reasoning_content: 'r'.repeat(40_000) })).toThrow(EnvUsageError);
    expect(env.snapshot()).toEqual(before);
    expect(() => new TurnEnv({ maxChatChars: 0 })).toThrow(RangeError);
  });

  it('under memory pressure turn_step is refused with capacity like turn_reset; close and hello are served', () => {
    let over: string | null = null;
    const h = handler(() => over);
    const reset = h.handleValue({ v: 1, op: 'turn_reset', seed: 1 }).reply as { ok: true; result: { session: string } };
    const session = reset.result.session;
    expect(h.handleValue({ v: 1, op: 'turn_step', session, action: { commands: ['yc-bench company status'] } }).reply.ok).toBe(true);
    over = 'server at capacity: test; retry later';
    const r = h.handleValue({ v: 1, id: 7, op: 'turn_step', session, action: { content: 'x' } }).reply;
    expect(r).toEqual({ v: 1, id: 7, ok: false, error: { code: 'capacity', message: over } });
    expect(h.handleValue({ v: 1, op: 'hello' }).reply.ok).toBe(true);
    expect(h.handleValue({ v: 1, op: 'turn_time_series', session }).reply.ok).toBe(true);
    expect(h.handleValue({ v: 1, op: 'close', session }).reply.ok).toBe(true);
  });
});
