import { describePreset } from '../../src/env/env.js';
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { DEFAULT_LIMITS } from '../../src/sim/simulation.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { checkReply, MAX_ACTION_CHARS, type Reply } from '../../src/protocol/protocol.js';
import { splitFrames } from '../../src/server/server.js';
import { SessionManager } from '../../src/server/sessions.js';
import { protocolHandler } from '../helpers/protocol-handler.js';

const handler = (maxSessions = 8): ProtocolHandler => protocolHandler({ maxSessions, maxMessageBytes: 1000 });

function send(h: ProtocolHandler, req: unknown): Reply {
  return h.handleValue(req).reply;
}

function err(r: Reply): [string, string] {
  if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r).slice(0, 200)}`);
  return [r.error.code, r.error.message];
}

function ok<T = Record<string, unknown>>(r: Reply): T {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code}: ${r.error.message}`);
  return r.result as T;
}

describe('decoding', () => {
  const h = handler();
  const raw = (s: string | Uint8Array) => h.handlePayload(typeof s === 'string' ? Buffer.from(s) : s, 1000).reply;
  it('checks size, UTF-8 and JSON', () => {
    expect(err(raw('x'.repeat(1001)))[0]).toBe('message_too_large');
    expect(err(raw(Uint8Array.from([0x7b, 0xff, 0x7d])))).toEqual(['bad_json', 'payload is not valid UTF-8']);
    expect(err(raw('\ufeff{"v":1,"op":"hello"}'))[0]).toBe('bad_json');
    expect(err(raw('{"v":1,'))[0]).toBe('bad_json');
    expect(err(raw(''))[0]).toBe('bad_json');
    expect(ok(raw('{"v":1,"op":"hello","id":"é"}'))['protocol']).toBe(1);
  });
  it('requires an object, the version, a known op', () => {
    expect(err(raw('[1]'))).toEqual(['invalid_request', '/: must be object']);
    expect(err(raw('null'))).toEqual(['invalid_request', '/: must be object']);
    expect(err(raw('{"op":"hello"}'))[0]).toBe('unsupported_version');
    expect(err(raw('{"v":"1","op":"hello"}'))[0]).toBe('unsupported_version');
    expect(err(raw('{"v":2,"op":"hello"}'))[0]).toBe('unsupported_version');
    expect(err(raw('{"v":1}'))).toEqual(['invalid_request', "/: must have required property 'op'"]);
    expect(err(raw('{"v":1,"op":7}'))).toEqual(['invalid_request', '/op: must be string']);
    expect(err(raw('{"v":1,"op":"frobnicate"}'))[0]).toBe('unknown_op');
  });
});

describe('error texts quote at most a bounded piece of what the client sent', () => {
  // A 1 MB op name or field name came back whole in the error message: every reply about twice its request, on the
  // server's thread, for any client (found by the twenty-first session's audit).
  const h = new ProtocolHandler(new SessionManager({ presets: listPresets() }), { version: '9.9.9', presets: listPresets(), maxMessageBytes: 4 << 20 }, { validateReplies: true });
  const big = 'q'.repeat(1 << 20);
  it('an unknown op', () => {
    const [code, message] = err(send(h, { v: 1, op: big }));
    expect(code).toBe('unknown_op');
    expect(message.length).toBeLessThan(1000);
    expect(message).toContain('qqqq');
    expect(message).toContain(`${big.length} characters`);
    const [vcode, vmessage] = err(send(h, { v: big, op: 'hello' }));
    expect(vcode).toBe('unsupported_version');
    expect(vmessage.length).toBeLessThan(1000);
    expect(err(send(h, { v: 2, op: 'hello' }))[1]).toContain('unsupported protocol version 2;');
    expect(err(send(h, { v: 1, op: 'frobnicate' }))[1]).toMatch(/^unknown op "frobnicate" \(expected one of /);
  });
  it('an unknown field and a path through client keys', () => {
    const [code, message] = err(send(h, { v: 1, op: 'hello', [big]: 1 }));
    expect(code).toBe('invalid_request');
    expect(message.length).toBeLessThan(1000);
    expect(message).toMatch(/^\/: unknown field 'q+/);
    expect(message).toContain(`${big.length} characters`);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { [big]: 1 } }))[1].length).toBeLessThan(1000);
  });
});

describe('routing', () => {
  it('echoes ids and reports invalid ones with a null id', () => {
    const h = handler();
    expect(send(h, { v: 1, id: 'abc', op: 'hello' }).id).toBe('abc');
    expect(send(h, { v: 1, id: 42, op: 'hello' }).id).toBe(42);
    expect(send(h, { v: 1, op: 'hello' }).id).toBeNull();
    expect(send(h, { v: 2, id: 5, op: 'hello' }).id).toBe(5);
    const long = send(h, { v: 1, id: 'x'.repeat(257), op: 'hello' });
    expect(long.id).toBeNull();
    expect(err(long)).toEqual(['invalid_request', '/id: must NOT have more than 256 characters']);
    expect(err(send(h, { v: 1, id: 1.5, op: 'hello' }))[1]).toBe('/id: must be string,integer');
    expect(err(send(h, { v: 1, id: 2 ** 60, op: 'hello' }))[0]).toBe('invalid_request');
  });

  it('names the JSON path of schema violations', () => {
    const h = handler();
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { max_steps: 0 } }))).toEqual(['invalid_request', '/options/max_steps: must be >= 1']);
    expect(err(send(h, { v: 1, op: 'reset' }))).toEqual(['invalid_request', "/: must have required property 'seed'"]);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, extra: true }))).toEqual(['invalid_request', "/: unknown field 'extra'"]);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1.5 }))).toEqual(['invalid_request', '/seed: must be integer']);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { start_date: '01/01/2025' } }))[1]).toMatch(/^\/options\/start_date: must match pattern/);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { horizon_years: 101 } }))[1]).toBe('/options/horizon_years: must be <= 100');
    expect(err(send(h, { v: 1, op: 'step', session: 's1', action: true }))).toEqual(['invalid_request', '/action: must be string']);
    expect(err(send(h, { v: 1, op: 'step', session: 's1', action: 1.5 }))).toEqual(['invalid_request', '/action: must be string']);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { actions: 'tokens' } }))[1]).toBe('/options/actions: must be one of "text", "discrete"');
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { stall_steps: -1 } }))[1]).toBe('/options/stall_steps: must be >= 0');
    expect(err(send(h, { v: 1, op: 'step_batch', steps: [] }))).toEqual(['invalid_request', '/steps: must NOT have fewer than 1 items']);
    const many = Array.from({ length: 4097 }, () => ({ session: 's1', action: 'x' }));
    expect(err(send(h, { v: 1, op: 'step_batch', steps: many }))[1]).toBe('/steps: must NOT have more than 4096 items');
    expect(err(send(h, { v: 1, op: 'step_batch', steps: [{ session: 's1' }] }))).toEqual(['invalid_request', "/steps/0: must have required property 'action'"]);
    expect(err(send(h, { v: 1, op: 'hello', session: 's1' }))).toEqual(['invalid_request', "/: unknown field 'session'"]);
  });

  it('refuses server-side recording when the server has no record directory', () => {
    const h = handler();
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { record: { path: 'x.arrow' } } }))).toEqual([
      'invalid_request',
      '/options/record: recording is disabled on this server (start it with `ycgym serve --record-dir DIR`)',
    ]);
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, options: { record: {} } }))).toEqual(['invalid_request', "/options/record: must have required property 'path'"]);
  });

  it('answers hello with the server facts', () => {
    const r = ok(send(handler(3), { v: 1, op: 'hello' }));
    expect(r).toEqual({
      protocol: 1,
      server: 'ycgym/9.9.9',
      presets: listPresets(),
      limits: { max_message_bytes: 1000, max_sessions: 3, max_sessions_per_client: 3, idle_timeout_ms: 600000, max_batch: 4096, max_unread_reply_bytes: null, max_unread_total_bytes: null, unread_total_headroom_bytes: null, max_connections: null, record: null },
      spaces: {
        action: { type: 'text', min_length: 0, max_length: 65536 },
        observation: { type: 'json', schema: '#/$defs/Observation' },
        presets: Object.fromEntries(listPresets().map((p) => [p, describePreset(p)])),
      },
      splits: { test: { first: 1, last: 100 }, validation: { first: 101, last: 1000 }, train: { first: 1001, last: 2 ** 31 - 1 } },
    });
    expect((r as { spaces: { presets: Record<string, { clients: string[] }> } }).spaces.presets['default']?.clients).toEqual([
      'Cortex Intelligence', 'Equinox Labs', 'Helix Systems', 'Prism Analytics', 'Stratos Cloud', 'Vanguard ML',
    ]);
    expect(MAX_ACTION_CHARS).toBe(DEFAULT_LIMITS.maxCommandChars);
  });

  it('runs a session through every op', () => {
    const h = handler();
    const r = ok<{ session: string }>(send(h, { v: 1, op: 'reset', seed: 1, preset: 'default', options: { max_steps: 2, company_name: 'X', horizon_years: 1, start_date: '2025-01-01' } }));
    expect(r.session).toBe('s1');
    ok(send(h, { v: 1, op: 'step', session: 's1', action: 'company status' }));
    const snap = ok<{ snapshot: unknown }>(send(h, { v: 1, op: 'snapshot', session: 's1' })).snapshot;
    const st = ok<{ truncated: boolean }>(send(h, { v: 1, op: 'step', session: 's1', action: 'company status' }));
    expect(st.truncated).toBe(true);
    expect(err(send(h, { v: 1, op: 'step', session: 's1', action: 'company status' }))[0]).toBe('episode_over');
    // An action of the other mode's type is a malformed request, over or not (the reliability fuzzer's oracle; it was
    // episode_over once the episode had ended).
    expect(err(send(h, { v: 1, op: 'step', session: 's1', action: 7 }))).toEqual(['invalid_request', '/action: in text mode the action is a command string (integer actions need the reset option actions: "discrete")']);
    expect(ok<{ session: string }>(send(h, { v: 1, op: 'restore', snapshot: snap, session: 's1' })).session).toBe('s1');
    ok(send(h, { v: 1, op: 'step', session: 's1', action: 'company status' }));
    expect(ok<{ session: string }>(send(h, { v: 1, op: 'restore', snapshot: snap })).session).toBe('s2');
    expect(ok(send(h, { v: 1, op: 'close', session: 's2' }))).toEqual({ closed: true });
    expect(err(send(h, { v: 1, op: 'close', session: 's2' }))[0]).toBe('unknown_session');
  });

  it('rejects snapshots that are not snapshots', () => {
    const h = handler();
    expect(err(send(h, { v: 1, op: 'restore', snapshot: {} }))).toEqual(['bad_snapshot', "not a ycgym snapshot: /snapshot: must have required property 'format'"]);
    const bad = { format: 'ycgym-env', version: 1, sim: { format: 'ycgym-sim', version: 2, config: {}, state: {} }, steps: 0, max_steps: null, done: false };
    expect(err(send(h, { v: 1, op: 'restore', snapshot: bad }))).toEqual(['bad_snapshot', 'not a ycgym snapshot: /snapshot/sim/version: must be 1']);
    const hollow = { ...bad, sim: { ...bad.sim, version: 1 } };
    expect(err(send(h, { v: 1, op: 'restore', snapshot: hollow }))[0]).toBe('bad_snapshot');
  });

  it('runs step_batch entries in order, each independently', () => {
    const h = handler();
    ok(send(h, { v: 1, op: 'reset', seed: 1, options: { max_steps: 1 } }));
    ok(send(h, { v: 1, op: 'reset', seed: 2 }));
    const r = ok<{ results: { ok: boolean; error?: { code: string }; result?: { info: { step: number } } }[] }>(
      send(h, {
        v: 1,
        op: 'step_batch',
        steps: [
          { session: 's1', action: 'company status' },
          { session: 's1', action: 'company status' },
          { session: 's9', action: 'company status' },
          { session: 's2', action: 'garbage' },
          { session: 's2', action: 'company status' },
        ],
      }),
    );
    expect(r.results.map((x) => (x.ok ? `ok ${x.result?.info.step}` : x.error?.code))).toEqual(['ok 1', 'episode_over', 'unknown_session', 'ok 1', 'ok 2']);
  });

  it('enforces the session limit', () => {
    const h = handler(1);
    ok(send(h, { v: 1, op: 'reset', seed: 1 }));
    expect(err(send(h, { v: 1, op: 'reset', seed: 1 }))[0]).toBe('session_limit');
    expect(err(send(h, { v: 1, op: 'reset', seed: 1, session: 's7' }))[0]).toBe('unknown_session');
  });

  it('validates replies against the schema', () => {
    expect(checkReply('close', { v: 1, id: null, ok: true, result: { closed: true } })).toBeNull();
    expect(checkReply('close', { v: 1, id: null, ok: true, result: { closed: false } })).toBe('/result/closed: must be true');
    expect(checkReply(null, { v: 1, id: 3, ok: false, error: { code: 'internal', message: 'x' } })).toBeNull();
  });
});

describe('frames', () => {
  const b = (s: string) => Buffer.from(s);
  it('splits DEALER, REQ and brokered envelopes', () => {
    expect(splitFrames([b('id'), b('{}')])).toEqual({ envelope: [b('id')], payload: [b('{}')] });
    expect(splitFrames([b('id'), b(''), b('{}')])).toEqual({ envelope: [b('id'), b('')], payload: [b('{}')] });
    expect(splitFrames([b('id'), b('peer'), b(''), b('{}')])).toEqual({ envelope: [b('id'), b('peer'), b('')], payload: [b('{}')] });
    expect(splitFrames([b('id'), b('a'), b('b')]).payload).toHaveLength(2);
    expect(splitFrames([b('id'), b('')]).payload).toHaveLength(0);
  });
});

describe('Discrete actions over the protocol', () => {
  it('integer actions, the frame in every reply; masked-out actions refused, bad indices invalid_request', () => {
    const h = handler();
    const r = ok<{ session: string; observation: { discrete: { obs: number[]; mask: boolean[] } }; info: { discrete_spec: { n_actions: number; obs_size: number } } }>(
      send(h, { v: 1, op: 'reset', seed: 1, options: { actions: 'discrete', market_slots: 5, task_slots: 2 } }),
    );
    const spec = r.info.discrete_spec;
    expect(spec.n_actions).toBe(1 + 5 + 2 * 11);
    expect(r.observation.discrete.obs).toHaveLength(spec.obs_size);
    const session = r.session;
    const snap = ok<{ snapshot: unknown }>(send(h, { v: 1, op: 'snapshot', session })).snapshot;
    const refused = ok<{ observation: { ok: boolean; text: string }; info: { step: number } }>(send(h, { v: 1, op: 'step', session, action: 0 }));
    expect(refused.observation.ok).toBe(false);
    expect(refused.observation.text).toBe('{"error": "action 0 (resume) is masked out (not valid now)"}');
    expect(refused.info.step).toBe(1);
    expect(ok<{ snapshot: { sim: unknown } }>(send(h, { v: 1, op: 'snapshot', session })).snapshot.sim).toEqual((snap as { sim: unknown }).sim);
    expect(err(send(h, { v: 1, op: 'step', session, action: 999 }))).toEqual(['invalid_request', '/action: action must be an integer in [0, 27]']);
    expect(err(send(h, { v: 1, op: 'step', session, action: 'sim resume' }))).toEqual(['invalid_request', '/action: in discrete mode the action is an integer index']);
    // An integer that no union branch takes is worded by the integer branch (it said "must be string").
    expect(err(send(h, { v: 1, op: 'step', session, action: -1 }))).toEqual(['invalid_request', '/action: must be >= 0']);
    expect(err(send(h, { v: 1, op: 'step', session, action: 2 ** 62 }))).toEqual(['invalid_request', '/action: must be <= 1048575']);
    expect(err(send(h, { v: 1, op: 'step_batch', steps: [{ session, action: -1 }] }))).toEqual(['invalid_request', '/steps/0/action: must be >= 0']);
    expect(err(send(h, { v: 1, op: 'step', session, action: 1.5 }))).toEqual(['invalid_request', '/action: must be string']);
    const s = ok<{ info: { action_text: string; step: number }; observation: { ok: boolean; discrete: { mask: boolean[] } } }>(send(h, { v: 1, op: 'step', session, action: 1 }));
    expect(s.info.action_text).toMatch(/^task accept --task-id Task-\d+$/);
    expect(s.info.step).toBe(2);
    expect(s.observation.ok).toBe(true);
    const assignAll = 1 + 5;
    expect(s.observation.discrete.mask[assignAll]).toBe(true);
    const b = ok<{ results: { ok: boolean; result?: { info: { action_text: string } }; error?: { code: string } }[] }>(
      send(h, { v: 1, op: 'step_batch', steps: [{ session, action: assignAll }, { session, action: assignAll }, { session, action: assignAll + 1 }] }),
    );
    expect(b.results.map((x) => x.ok)).toEqual([true, true, true]);
    expect(b.results[1]!.result!.info.action_text).toBeUndefined(); // masked out once every employee is assigned: refused
    expect(b.results[2]!.result!.info.action_text).toMatch(/^task dispatch --task-id /);
    // Once the episode is over: a text action is still a malformed request, an index the end of the episode.
    const one = ok<{ session: string }>(send(h, { v: 1, op: 'reset', seed: 1, options: { actions: 'discrete', max_steps: 1 } })).session;
    expect(ok<{ truncated: boolean }>(send(h, { v: 1, op: 'step', session: one, action: 0 })).truncated).toBe(true);
    expect(err(send(h, { v: 1, op: 'step', session: one, action: 'sim resume' }))).toEqual(['invalid_request', '/action: in discrete mode the action is an integer index']);
    expect(err(send(h, { v: 1, op: 'step', session: one, action: 0 }))[0]).toBe('episode_over');
  });

  it('admissible_commands on a text session', () => {
    const h = handler();
    const r = ok<{ info: { admissible_commands: string[] } }>(send(h, { v: 1, op: 'reset', seed: 2, options: { admissible_commands: true, market_slots: 3 } }));
    expect(r.info.admissible_commands).toHaveLength(3);
  });
});

describe('integer actions in a text session', () => {
  it('are invalid_request and no step', () => {
    const h = handler();
    const { session } = ok<{ session: string }>(send(h, { v: 1, op: 'reset', seed: 1 }));
    expect(err(send(h, { v: 1, op: 'step', session, action: 3 }))).toEqual(['invalid_request', '/action: in text mode the action is a command string (integer actions need the reset option actions: "discrete")']);
    expect(ok<{ info: { step: number } }>(send(h, { v: 1, op: 'step', session, action: 'company status' })).info.step).toBe(1);
  });
});
