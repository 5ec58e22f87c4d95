/**
 * Issue 12, F7: sessions belong to the client that created them. Before: ids were `s<counter>.<tag>`, any client
 * could step, snapshot, read or close another client's session, one client could open all 1,024 sessions, and CURVE
 * admitted every client that knew the server's key. Real sockets on loopback; every wait is bounded.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { Client, ProtocolError } from '../../src/client/client.js';
import { Env } from '../../src/env/env.js';
import { generateCurveKeyPair } from '../../src/protocol/curve.js';
import { startServer, type Server } from '../../src/server/server.js';
import { parseAllowList } from '../../src/server/zap.js';

const LOOPBACK = 'tcp://127.0.0.1:0';
const open: { close(): unknown }[] = [];

afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

function client(endpoint: string, extra: Partial<ConstructorParameters<typeof Client>[0] & object> = {}): Client {
  const c = new Client({ endpoint, timeoutMs: 10_000, ...extra });
  open.push(c);
  return c;
}

async function server(opts: Parameters<typeof startServer>[0] = {}): Promise<Server> {
  const s = await startServer({ endpoint: LOOPBACK, validateReplies: true, ...opts });
  open.push(s);
  return s;
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ProtocolError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('the request was not refused');
}

describe('session ownership (F7)', () => {
  it('issues unguessable ids: s + 128 random bits, no counter', async () => {
    const s = await server();
    const a = client(s.endpoint);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await a.reset({ seed: 1 })).session);
    for (const id of ids) expect(id).toMatch(/^s[A-Za-z0-9_-]{22}$/);
    expect(new Set(ids).size).toBe(4);
    // The schema's description of SessionId (what the Python wire types and the schema's readers see) shows this form;
    // it said `(s1, s2, ...)`, the ids of before.
    const schema = JSON.parse(readFileSync('schema/protocol.schema.json', 'utf8')) as { $defs: { SessionId: { description: string } } };
    const example = /e\.g\. (\S+?)\.?$/.exec(schema.$defs.SessionId.description)?.[1];
    expect(example).toMatch(/^s[A-Za-z0-9_-]{22}$/);
  });

  it("refuses every op of another client on a session exactly like an unknown session, and the owner's episode is untouched", async () => {
    const s = await server();
    const a = client(s.endpoint);
    const b = client(s.endpoint);
    const victim = (await a.reset({ seed: 7 })).session;
    const turns = (await a.turnReset({ seed: 7 })).session;
    const first = await a.step(victim, 'market browse --limit 3');

    const missing = await refusal(b.step('s' + 'A'.repeat(22), 'company status'));
    expect(missing.code).toBe('unknown_session');
    const snap = await a.snapshot(victim);
    const attempts: (() => Promise<unknown>)[] = [
      () => b.step(victim, 'sim resume'),
      () =>
        b.stepBatch([{ session: victim, action: 'sim resume' }]).then((r) => {
          const item = r[0];
          if (item === undefined || item.ok) throw new Error('batch entry was executed');
          throw new ProtocolError(item.error.code, item.error.message);
        }),
      () => b.snapshot(victim),
      () => b.restore(snap, victim),
      () => b.reset({ seed: 1, session: victim }),
      () => b.closeSession(victim),
      () => b.turnStep(turns, { commands: ['company status'] }),
      () => b.turnMessages(turns),
      () => b.turnSnapshot(turns),
      () => b.turnTimeSeries(turns),
      () => b.closeSession(turns),
    ];
    for (const [i, attempt] of attempts.entries()) {
      const r = await refusal(attempt());
      expect(r.code, `attempt ${i}`).toBe('unknown_session');
      // The same words as for a session that does not exist (only the id differs): nothing leaks.
      expect(r.message.replace(/"[^"]*"/, '"X"'), `attempt ${i}`).toBe(missing.message.replace(/"[^"]*"/, '"X"'));
    }
    // The owner's sessions are alive and unchanged: the next step is what it would have been with no attack.
    const ref = new Env();
    ref.reset({ seed: 7 });
    expect(ref.step('market browse --limit 3').observation.text).toBe(first.observation.text);
    expect((await a.step(victim, 'company status')).observation.text).toBe(ref.step('company status').observation.text);
    expect((await a.turnMessages(turns)).length).toBeGreaterThan(0);
    expect(s.sessionCount).toBe(2);
  });

  it('caps the sessions of one client and keeps room for others', async () => {
    const s = await server({ maxSessions: 10, maxSessionsPerClient: 3 });
    const a = client(s.endpoint);
    for (let i = 0; i < 3; i++) await a.reset({ seed: i + 1 });
    const r = await refusal(a.reset({ seed: 9 }));
    expect(r.code).toBe('session_limit');
    expect(r.message).toContain('3 live sessions per client');
    const b = client(s.endpoint);
    expect((await b.reset({ seed: 1 })).session).toMatch(/^s/);
    expect((await b.hello()).limits.max_sessions_per_client).toBe(3);
  });
});

describe('CURVE client allow-list (F7)', () => {
  it('serves listed client keys and completes no handshake for others', async () => {
    const serverKeys = generateCurveKeyPair();
    const listed = generateCurveKeyPair();
    const stranger = generateCurveKeyPair();
    const s = await server({ curve: { secretKey: serverKeys.secretKey }, curveAllow: [listed.publicKey] });
    const good = client(s.endpoint, { curveServerKey: serverKeys.publicKey, curvePublicKey: listed.publicKey, curveSecretKey: listed.secretKey });
    const sid = (await good.reset({ seed: 3 })).session;
    expect((await good.step(sid, 'company status')).observation.ok).toBe(true);

    const bad = client(s.endpoint, { curveServerKey: serverKeys.publicKey, curvePublicKey: stranger.publicKey, curveSecretKey: stranger.secretKey, timeoutMs: 1500 });
    expect((await refusal(bad.hello())).code).toBe('timeout');
    // A raw socket with a random key pair gets nothing either.
    const raw = new Dealer({ linger: 0, receiveTimeout: 1000 });
    open.push(raw);
    const k = generateCurveKeyPair();
    raw.curveServerKey = serverKeys.publicKey;
    raw.curvePublicKey = k.publicKey;
    raw.curveSecretKey = k.secretKey;
    raw.connect(s.endpoint);
    await raw.send(JSON.stringify({ v: 1, id: 1, op: 'hello' }));
    await expect(raw.receive()).rejects.toThrow();
    // The listed client is still served.
    expect((await good.step(sid, 'company status')).observation.ok).toBe(true);
  });

  it('refuses an allow-list without server keys, and malformed lists', async () => {
    await expect(startServer({ endpoint: LOOPBACK, curveAllow: [generateCurveKeyPair().publicKey] })).rejects.toThrow(/needs the server CURVE keys/);
    expect(() => parseAllowList('# nobody\n\n')).toThrow(/no client keys/);
    expect(() => parseAllowList('short', 'keys.txt')).toThrow(/keys.txt:1: a CURVE public key is 40 Z85 characters/);
    const k = generateCurveKeyPair().publicKey;
    const k2 = '0000#'.repeat(8); // '#' is a Z85 character (a key never starts with it: its first digit is at most '%')
    expect(parseAllowList(`# team\n${k}  alice's laptop\n\n  ${k2}\n`)).toEqual([k, k2]);
  });
});
