/**
 * A turn snapshot's `state.open` (a turn opened in process and not ended) was typed only as "an object or null":
 * `turn_restore` accepted any object there, and the restored session then answered `turn_step` with replies that
 * break the protocol schema (a `reward` of NaN sent as null, `tool_results` entries that are no tool results, tool
 * messages without the assistant tool call they answer). Now such snapshots are `bad_snapshot`, and a real mid-turn
 * snapshot still restores and continues exactly.
 */
import { describe, expect, it } from 'vitest';
import type { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { protocolHandler } from '../helpers/protocol-handler.js';
import { TurnEnv, type TurnSnapshot } from '../../src/turns/turns.js';

const handler = (): ProtocolHandler => protocolHandler();

/** A snapshot taken in process in the middle of a turn: one call made, the turn not ended. */
function midTurn(): TurnSnapshot {
  const env = new TurnEnv();
  env.reset({ seed: 4, preset: 'default' });
  env.step(['yc-bench company status']);
  env.run('yc-bench market browse --limit 2');
  return JSON.parse(JSON.stringify(env.snapshot())) as TurnSnapshot;
}

describe('turn_restore of a forged open turn', () => {
  it('a real mid-turn snapshot restores over the protocol and its turn ends with a valid reply, as in process', () => {
    const h = handler();
    const snap = midTurn();
    expect(snap.state.open).not.toBeNull();
    const r = h.handleValue({ v: 1, op: 'turn_restore', snapshot: snap }).reply;
    if (!r.ok) throw new Error(JSON.stringify(r.error));
    const session = (r.result as { session: string }).session;
    const step = h.handleValue({ v: 1, op: 'turn_step', session, action: { commands: ['yc-bench company status'] } }).reply;
    if (!step.ok) throw new Error(JSON.stringify(step.error));
    const local = new TurnEnv();
    local.restore(midTurn());
    const want = local.step(['yc-bench company status']);
    expect((step.result as { tool_results: unknown[] }).tool_results).toEqual(want.toolResults);
    expect((step.result as { info: unknown }).info).toEqual(want.info);
  });

  it('is bad_snapshot, whatever is forged in it', () => {
    const h = handler();
    const base = midTurn();
    const open = base.state.open as unknown as Record<string, unknown>;
    const assistant = open['assistant'] as number;
    const session = base.state.session;
    const withOpen = (o: unknown, s = session): TurnSnapshot => ({ ...base, state: { ...base.state, open: o as TurnSnapshot['state']['open'], session: s } });
    const forged: [string, TurnSnapshot][] = [
      ['funds_before a string', withOpen({ ...open, funds_before: 'x' })],
      ['funds_before not an integer', withOpen({ ...open, funds_before: 1.5 })],
      ['assistant a string', withOpen({ ...open, assistant: 'abc' })],
      ['assistant negative', withOpen({ ...open, assistant: -5 })],
      ['assistant past the chat', withOpen({ ...open, assistant: session.length + 3 })],
      ['assistant on a user message', withOpen({ ...open, assistant: 0 })],
      ['calls a string', withOpen({ ...open, calls: 'zz' })],
      ['an unknown field', withOpen({ ...open, extra: 1 })],
      ['a missing field', withOpen({ funds_before: 0, assistant, calls: 1 })],
      ['resume_stdout an object', withOpen({ ...open, resume_stdout: { a: 1 } })],
      [
        'a tool message that is no tool result',
        withOpen(open, [...session.slice(0, -1), { role: 'tool', tool_call_id: (session[session.length - 1] as { tool_call_id: string }).tool_call_id, content: '{"weird": [1, 2]}' }]),
      ],
      ['a user message inside the open turn', withOpen(open, [...session, { role: 'user', content: 'hi' }])],
      ['a tool message without its call', withOpen(open, [...session, session[session.length - 1] as TurnSnapshot['state']['session'][number]])],
    ];
    for (const [what, snap] of forged) {
      const r = h.handleValue({ v: 1, op: 'turn_restore', snapshot: snap }).reply;
      expect(r.ok ? 'ok' : r.error.code, what).toBe('bad_snapshot');
    }
  });
});
