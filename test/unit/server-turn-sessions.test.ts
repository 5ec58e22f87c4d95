/** The session table with turn-protocol sessions: shared ids and limits, kinds kept apart, failures contained. */
import { describe, expect, it } from 'vitest';
import { TurnSession } from '../../src/server/turn-session.js';
import { SessionError, SessionManager, type CloseReason } from '../../src/server/sessions.js';

const PRESETS = ['default', 'multi'];

function err(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof SessionError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return 'no error';
}

/** A turn session whose step throws on the command "__boom__" (an environment bug). */
class BoomTurns extends TurnSession {
  override step(...args: Parameters<TurnSession['step']>): ReturnType<TurnSession['step']> {
    if (args[0].commands?.[0] === '__boom__') throw new Error('test-only failure');
    return super.step(...args);
  }
}

describe('SessionManager with turn sessions', () => {
  it('one id sequence, one session limit, close and idle reaping for both kinds', () => {
    let now = 0;
    const closed: [string, CloseReason][] = [];
    const m = new SessionManager({ presets: PRESETS, maxSessions: 3, idleTimeoutMs: 100, now: () => now, hooks: { onClose: (e) => closed.push([e.session, e.reason]) } });
    expect(m.reset({ seed: 1 }).session).toBe('s1');
    expect(m.turnReset({ seed: 1 }).session).toBe('s2');
    const snap = m.turnSnapshot('s2');
    expect(m.turnRestore(snap).session).toBe('s3');
    expect(err(() => m.turnReset({ seed: 2 }))).toMatch(/^session_limit: /);
    expect(err(() => m.turnRestore(snap))).toMatch(/^session_limit: /);
    expect(m.turnReset({ seed: 2, session: 's3' }).session).toBe('s3');
    m.close('s3');
    expect(err(() => m.turnMessages('s3'))).toMatch(/^unknown_session: /);
    now = 50;
    m.turnStep('s2', { commands: ['yc-bench company status'] });
    now = 120;
    expect(m.reapIdle()).toEqual(['s1']);
    now = 200;
    expect(m.reapIdle()).toEqual(['s2']);
    expect(closed).toEqual([
      ['s3', 'close'],
      ['s1', 'idle'],
      ['s2', 'idle'],
    ]);
  });

  it('keeps the kinds apart and leaves both sessions as they were', () => {
    const m = new SessionManager({ presets: PRESETS });
    const e = m.reset({ seed: 1 }).session;
    const t = m.turnReset({ seed: 1 }).session;
    const envSnap = m.snapshot(e);
    const turnSnap = m.turnSnapshot(t);
    const before = m.turnMessages(t);
    for (const f of [() => m.step(t, 'company status'), () => m.snapshot(t), () => m.reset({ seed: 2, session: t }), () => m.restore(envSnap, t)]) {
      expect(err(f)).toBe(`invalid_request: session ${t} is a turn-protocol session (TurnEnv): use turn_step, turn_messages, turn_snapshot, turn_restore, turn_time_series or close`);
    }
    for (const f of [
      () => m.turnStep(e, { commands: [] }),
      () => m.turnMessages(e),
      () => m.turnSnapshot(e),
      () => m.turnTimeSeries(e),
      () => m.turnReset({ seed: 2, session: e }),
      () => m.turnRestore(turnSnap, e),
    ]) {
      expect(err(f)).toBe(`invalid_request: session ${e} is an Env session: turn_* ops need a turn-protocol session (turn_reset without session creates one)`);
    }
    expect(m.turnMessages(t)).toEqual(before);
    expect(m.step(e, 'company status').info.step).toBe(1);
    expect(m.ids()).toEqual([e, t]);
  });

  it('maps failures to protocol codes; a failed reset or restore leaves the target unchanged', () => {
    const m = new SessionManager({ presets: PRESETS });
    const t = m.turnReset({ seed: 1, options: { max_turns: 1 } }).session;
    const before = m.turnMessages(t);
    expect(err(() => m.turnReset({ seed: 1, preset: 'nope', session: t }))).toMatch(/^bad_preset: /);
    expect(err(() => m.turnReset({ seed: 1, session: t, options: { history_keep_rounds: 0 } }))).toBe('invalid_request: /options/history_keep_rounds: must be >= 1');
    expect(err(() => m.reset({ seed: 1, options: { horizon_years: 0 } }))).toBe('invalid_request: /options/horizon_years: must be >= 1');
    const snap = m.turnSnapshot(t);
    expect(err(() => m.turnRestore({ ...snap, version: 2 as 1 }, t))).toMatch(/^bad_snapshot: cannot restore this turn snapshot: /);
    expect(err(() => m.turnRestore({ ...snap, sim: { ...snap.sim, state: { ...snap.sim.state, tasks: 'x' as never } } }, t))).toMatch(/^bad_snapshot: /);
    expect(m.turnMessages(t)).toEqual(before);
    expect(m.turnStep(t, { content: 'hi' }).done).toBe(true);
    expect(err(() => m.turnStep(t, { commands: [] }))).toBe(`episode_over: session ${t}: the run is over; send turn_reset`);
  });

  it('an environment bug closes the session (internal)', () => {
    const m = new SessionManager({ presets: PRESETS, turnFactory: () => new BoomTurns() });
    const t = m.turnReset({ seed: 1 }).session;
    expect(err(() => m.turnStep(t, { commands: ['__boom__'] }))).toMatch(/^internal: internal error during turn_step in session s1 \(the session was closed\): test-only failure/);
    expect(m.ids()).toEqual([]);
  });

  it('checkTurnRestored refuses a restored state', () => {
    const m = new SessionManager({ presets: PRESETS, checkTurnRestored: (r) => (r.info.turn > 0 ? '/info/turn: too late' : null) });
    const t = m.turnReset({ seed: 1 }).session;
    const fresh = m.turnSnapshot(t);
    m.turnStep(t, { commands: ['yc-bench company status'] });
    const later = m.turnSnapshot(t);
    expect(err(() => m.turnRestore(later))).toBe('bad_snapshot: this turn snapshot restores to an invalid state: /info/turn: too late');
    expect(m.turnRestore(fresh, t).info.turn).toBe(0);
  });
});
