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
