import { describe, expect, it } from 'vitest';
import { Env, type EnvSnapshot } from '../../src/env/env.js';
import { SessionError, SessionManager, type CloseReason } from '../../src/server/sessions.js';

const PRESETS = ['default', 'multi'];

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof SessionError) return e.code;
    throw e;
  }
  return 'no error';
}

describe('SessionManager', () => {
  it('hands out s1, s2, ... and never reuses ids', () => {
    const m = new SessionManager({ presets: PRESETS });
    expect(m.reset({ seed: 1 }).session).toBe('s1');
    expect(m.reset({ seed: 2 }).session).toBe('s2');
    m.close('s1');
    expect(m.reset({ seed: 3 }).session).toBe('s3');
    expect(m.reset({ seed: 4, session: 's2' }).session).toBe('s2');
    expect(m.ids()).toEqual(['s2', 's3']);
  });

  it('caps live sessions', () => {
    const m = new SessionManager({ presets: PRESETS, maxSessions: 2 });
    m.reset({ seed: 1 });
    const { snapshot } = { snapshot: m.snapshot('s1') };
    m.reset({ seed: 2 });
    expect(code(() => m.reset({ seed: 3 }))).toBe('session_limit');
    expect(code(() => m.restore(snapshot))).toBe('session_limit');
    // Reusing a session is always possible.
    expect(m.reset({ seed: 3, session: 's1' }).session).toBe('s1');
    expect(m.restore(snapshot, 's2').session).toBe('s2');
  });

  it('maps errors to protocol codes and leaves sessions unchanged on failure', () => {
    const m = new SessionManager({ presets: PRESETS });
    m.reset({ seed: 1, options: { max_steps: 1 } });
    const before = m.snapshot('s1');
    expect(code(() => m.step('nope', 'company status'))).toBe('unknown_session');
    expect(code(() => m.reset({ seed: 1, preset: 'nope' }))).toBe('bad_preset');
    expect(code(() => m.reset({ seed: 1, preset: './presets/default.toml' }))).toBe('bad_preset');
    expect(code(() => m.reset({ seed: 1, session: 's1', options: { start_date: '2024-02-29' } }))).toBe('invalid_request');
    expect(code(() => m.restore({ format: 'x' } as unknown as EnvSnapshot, 's1'))).toBe('bad_snapshot');
    expect(m.snapshot('s1')).toEqual(before);
    m.step('s1', 'company status');
    expect(code(() => m.step('s1', 'company status'))).toBe('episode_over');
    expect(code(() => m.close('s9'))).toBe('unknown_session');
  });

  it('closes a session whose environment throws (internal)', () => {
    class Broken extends Env {
      override step(action: string) {
        if (action === 'boom') throw new Error('kaput');
        return super.step(action);
      }
    }
    const closed: [string, CloseReason][] = [];
    const m = new SessionManager({ presets: PRESETS, envFactory: () => new Broken(), hooks: { onClose: (e) => closed.push([e.session, e.reason]) } });
    m.reset({ seed: 1 });
    m.reset({ seed: 1 });
    expect(code(() => m.step('s1', 'boom'))).toBe('internal');
    expect(closed).toEqual([['s1', 'internal']]);
    expect(code(() => m.step('s1', 'company status'))).toBe('unknown_session');
    expect(m.step('s2', 'company status').observation.ok).toBe(true);
  });

  it('reaps idle sessions on an injected clock', () => {
    let now = 1000;
    const closed: [string, CloseReason][] = [];
    const m = new SessionManager({ presets: PRESETS, idleTimeoutMs: 100, now: () => now, hooks: { onClose: (e) => closed.push([e.session, e.reason]) } });
    m.reset({ seed: 1 });
    m.reset({ seed: 2 });
    now = 1050;
    m.step('s2', 'company status');
    now = 1120;
    expect(m.reapIdle()).toEqual(['s1']);
    expect(m.size).toBe(1);
    now = 1200;
    expect(m.reapIdle()).toEqual(['s2']);
    expect(closed).toEqual([
      ['s1', 'idle'],
      ['s2', 'idle'],
    ]);
    const never = new SessionManager({ presets: PRESETS, idleTimeoutMs: 0, now: () => now });
    never.reset({ seed: 1 });
    now = 1e12;
    expect(never.reapIdle()).toEqual([]);
  });

  it('a request for a session reaped as idle says so (the idle time and the timeout), to its owner only', () => {
    // Before, it was the same "unknown session (closed, reaped or never created)" as for an id never handed out: a
    // training loop paused past the timeout could not tell why its episode was gone, nor what to change.
    let now = 0;
    const m = new SessionManager({ presets: PRESETS, idleTimeoutMs: 600_000, now: () => now });
    m.reset({ seed: 1 }, 'alice');
    m.reset({ seed: 2 }, 'alice');
    now = 700_000;
    expect(m.reapIdle()).toEqual(['s1', 's2']);
    const message = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        expect((e as SessionError).code).toBe('unknown_session');
        return (e as Error).message;
      }
      throw new Error('no error');
    };
    expect(message(() => m.step('s1', 'company status', 'alice'))).toBe(
      'session "s1" was closed by the server after 700 s without a request (its idle timeout is 600 s: `ycgym serve --idle-timeout SECONDS`, 0 for never); its episode is gone: reset to start another',
    );
    // Another client learns nothing of it.
    expect(message(() => m.step('s2', 'company status', 'bob'))).toBe('unknown session "s2" (closed, reaped or never created)');
    // Closed by its client: as before.
    m.reset({ seed: 3 }, 'alice');
    m.close('s3', 'alice');
    expect(message(() => m.step('s3', 'company status', 'alice'))).toBe('unknown session "s3" (closed, reaped or never created)');
    // The record of reaped ids is bounded (`rememberReaped`, default the session limit): the oldest are forgotten.
    const many = new SessionManager({ presets: PRESETS, idleTimeoutMs: 10, now: () => now, rememberReaped: 3 });
    for (let k = 0; k < 4; k++) many.reset({ seed: 1 });
    now += 20;
    expect(many.reapIdle().length).toBe(4);
    expect(message(() => many.step('s1', 'company status'))).toMatch(/^unknown session/);
    expect(message(() => many.step('s2', 'company status'))).toMatch(/^session "s2" was closed by the server after 0\.02 s without a request/);
  });

  it('calls the recorder hooks', () => {
    const seen: string[] = [];
    const m = new SessionManager({
      presets: PRESETS,
      hooks: {
        onReset: (e) => seen.push(`reset ${e.session} ${e.seed} ${e.preset}`),
        onStep: (e) => seen.push(`step ${e.session} ${e.action} ${e.result.info.step}`),
        onRestore: (e) => seen.push(`restore ${e.session} ${e.result.info.step}`),
        onClose: (e) => seen.push(`close ${e.session} ${e.reason}`),
      },
    });
    m.reset({ seed: 7, preset: 'multi' });
    m.step('s1', 'company status');
    m.restore(m.snapshot('s1'));
    m.closeAll();
    expect(seen).toEqual(['reset s1 7 multi', 'step s1 company status 1', 'restore s2 1', 'close s1 shutdown', 'close s2 shutdown']);
  });
});
