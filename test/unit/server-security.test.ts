import { describe, expect, it } from 'vitest';
import { curveKeyPair } from 'zeromq';
import { generateCurveKeyPair } from '../../src/protocol/curve.js';
import {
  assertBindAllowed,
  classifyEndpoint,
  curvePublicKeyFromSecret,
  resolveCurveKeys,
  SecurityError,
  z85Decode,
  z85Encode,
} from '../../src/server/security.js';

describe('z85', () => {
  it('matches the ZeroMQ RFC 32 test vector', () => {
    const bytes = Uint8Array.from([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b]);
    expect(z85Encode(bytes)).toBe('HelloWorld');
    expect([...z85Decode('HelloWorld')]).toEqual([...bytes]);
  });
  it('round-trips and rejects bad text', () => {
    const b = Uint8Array.from({ length: 32 }, (_, i) => (i * 37) & 0xff);
    expect([...z85Decode(z85Encode(b))]).toEqual([...b]);
    expect(() => z85Decode('abcd')).toThrow(SecurityError);
    expect(() => z85Decode('abcd~')).toThrow(/invalid character/);
    expect(() => z85Decode('#####')).toThrow(/out of range/);
  });
});

describe('CURVE keys', () => {
  it('derives the public key zeromq generated for the secret key', () => {
    for (let i = 0; i < 20; i++) {
      const k = curveKeyPair();
      expect(k.publicKey).toHaveLength(40);
      expect(curvePublicKeyFromSecret(k.secretKey)).toBe(k.publicKey);
    }
  });
  it('generates key pairs as zeromq does (a random secret and its public key), without loading it', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const k = generateCurveKeyPair();
      expect(k.publicKey).toHaveLength(40);
      expect(k.secretKey).toHaveLength(40);
      expect(curvePublicKeyFromSecret(k.secretKey)).toBe(k.publicKey);
      seen.add(k.secretKey);
    }
    expect(seen.size).toBe(20);
  });
  it('resolves, derives and checks key pairs', () => {
    const a = generateCurveKeyPair();
    const b = generateCurveKeyPair();
    expect(resolveCurveKeys({ secretKey: a.secretKey })).toEqual(a);
    expect(resolveCurveKeys(a)).toEqual(a);
    expect(() => resolveCurveKeys({ secretKey: a.secretKey, publicKey: b.publicKey })).toThrow(/does not belong/);
    expect(() => resolveCurveKeys({ secretKey: 'short' })).toThrow(/40 Z85 characters/);
  });
});

describe('bind policy', () => {
  const local = ['tcp://127.0.0.1:5555', 'tcp://127.0.0.1:0', 'tcp://127.1.2.3:*', 'tcp://localhost:9000', 'tcp://[::1]:5555', 'ipc:///tmp/x.sock', 'inproc://x'];
  const remote = ['tcp://0.0.0.0:5555', 'tcp://*:5555', 'tcp://10.0.0.1:5555', 'tcp://eth0:5555', 'tcp://[::]:5555', 'tcp://example.com:1', 'tcp://128.0.0.1:1', 'tcp://127.0.0.256:1'];
  it.each(local)('allows %s without keys', (ep) => {
    expect(assertBindAllowed(ep, false).local).toBe(true);
  });
  it.each(remote)('refuses %s without keys, allows it with keys', (ep) => {
    expect(() => assertBindAllowed(ep, false)).toThrow(/refusing to bind/);
    expect(assertBindAllowed(ep, true).local).toBe(false);
  });
  it('rejects malformed endpoints and other transports', () => {
    for (const ep of ['127.0.0.1:5555', 'tcp://127.0.0.1', 'tcp://127.0.0.1:99999', 'udp://127.0.0.1:1', 'ws://127.0.0.1:1', '']) {
      expect(() => classifyEndpoint(ep), ep).toThrow(SecurityError);
    }
  });
  it('flags IPv6 hosts', () => {
    expect(classifyEndpoint('tcp://[::1]:1').ipv6).toBe(true);
    expect(classifyEndpoint('tcp://127.0.0.1:1').ipv6).toBe(false);
  });
});
