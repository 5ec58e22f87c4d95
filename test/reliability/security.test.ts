/**
 * Security beyond test/integration/server.test.ts: the default endpoint and the full bind policy, CURVE under
 * intruders (wrong key, no CURVE, raw TCP garbage) with an unaffected good client, the session cap under a race.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { bindPolicy, curveIntruders, sessionCapRace, REFUSED_WITHOUT_KEYS } from '../../scripts/reliability/lib/security.js';
import { ensureBuilt } from './build.js';

describe('security', () => {
  beforeAll(() => ensureBuilt());

  it('binds loopback by default; refuses every non-loopback form without keys', () => {
    const r = bindPolicy();
    expect(r.default_endpoint).toBe('tcp://127.0.0.1:5555');
    expect(r.default_is_loopback).toBe(true);
    expect(r.wrongly_allowed).toEqual([]);
    expect(r.refused_without_keys).toBe(REFUSED_WITHOUT_KEYS.length);
    expect(r.wrongly_allowed_with_keys).toEqual([]);
    expect(r.wrongly_refused).toEqual([]);
  });

  it('CURVE: intruders get nothing, reach nothing, and the good client is unaffected', async () => {
    const r = await curveIntruders({ intruders: 2, steps: 150 });
    expect(r.intruder_requests_sent).toBeGreaterThan(0);
    expect(r.intruder_replies).toBe(0);
    expect(r.raw_tcp_bytes_sent).toBeGreaterThan(0);
    expect(r.requests_reaching_server).toBe(r.good_client_requests);
    expect(r.good_client_identical).toBe(true);
    expect(r.server_alive).toBe(true);
  });

  it('session cap under concurrent resets: exactly the cap, a clear error for the rest', async () => {
    const r = await sessionCapRace({ maxSessions: 30, clients: 8, resetsPerClient: 6 });
    expect(r.other_errors).toEqual([]);
    expect(r.created).toBe(30);
    expect(r.refused_session_limit).toBe(48 - 30);
    expect(r.message).toBe('session_limit: session limit reached (30 live sessions); close one first');
    expect(r.created_after_closing).toBe(5);
  });
});
