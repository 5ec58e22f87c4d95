/**
 * Transport security of the server: which endpoints may be bound without encryption, and CURVE keys
 * (Z85 text, 40 characters for 32 bytes) for everything else.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { type CurveKeyPair, z85Decode as decodeZ85, z85Encode as encodeZ85 } from '../protocol/curve.js';

export type { CurveKeyPair } from '../protocol/curve.js';

/** A refused endpoint or bad key material (a configuration error, not a runtime failure). */
export class SecurityError extends Error {
  override readonly name = 'SecurityError';
}

/** Z85-encode bytes (length a multiple of 4), as ZeroMQ's `zmq_z85_encode`; throws `SecurityError` on bad input. */
export function z85Encode(data: Uint8Array): string {
  return asSecurityError(() => encodeZ85(data));
}

/** Decode Z85 text (length a multiple of 5); throws `SecurityError` on bad input. */
export function z85Decode(text: string): Uint8Array {
  return asSecurityError(() => decodeZ85(text));
}

function asSecurityError<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw e instanceof RangeError ? new SecurityError(e.message) : e;
  }
}

function decodeKey(label: string, z85: string): Uint8Array {
  if (typeof z85 !== 'string' || z85.length !== 40) throw new SecurityError(`${label} must be 40 Z85 characters (got ${typeof z85 === 'string' ? z85.length : typeof z85})`);
  try {
    return z85Decode(z85);
  } catch (e) {
    throw new SecurityError(`${label}: ${(e as Error).message}`);
  }
}

// DER prefixes of an X25519 private key (PKCS#8) and public key (SPKI): CURVE keys are raw X25519 keys.
const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** The CURVE public key belonging to a secret key (X25519 base-point multiplication), in Z85. */
export function curvePublicKeyFromSecret(secretKeyZ85: string): string {
  const secret = decodeKey('CURVE secret key', secretKeyZ85);
  const priv = createPrivateKey({ key: Buffer.concat([PKCS8_X25519, secret]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(priv).export({ format: 'der', type: 'spki' });
  return z85Encode(new Uint8Array(spki.subarray(spki.length - 32)));
}

/** Validate server keys: the secret key is required, the public key is derived when absent and must match when given. */
export function resolveCurveKeys(keys: { secretKey: string; publicKey?: string | undefined }): CurveKeyPair {
  const derived = curvePublicKeyFromSecret(keys.secretKey);
  if (keys.publicKey !== undefined) {
    decodeKey('CURVE public key', keys.publicKey);
    if (keys.publicKey !== derived) throw new SecurityError('the CURVE public key does not belong to the CURVE secret key');
  }
  return { publicKey: derived, secretKey: keys.secretKey };
}

/** What an endpoint string means for security. */
export interface EndpointInfo {
  transport: 'tcp' | 'ipc' | 'inproc';
  /** True for ipc/inproc and for tcp on 127.0.0.0/8, localhost or [::1]. */
  local: boolean;
  /** True when the host is a bracketed IPv6 address (the socket needs `ipv6`). */
  ipv6: boolean;
}

const IPV4_LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '[::1]') return true;
  const m = IPV4_LOOPBACK.exec(host);
  return m !== null && m.slice(1).every((o) => Number(o) <= 255);
}

/** Classify a bind endpoint; throws `SecurityError` for malformed endpoints and unsupported transports. */
export function classifyEndpoint(endpoint: string): EndpointInfo {
  const m = /^([a-z]+):\/\/(.+)$/.exec(endpoint);
  if (!m) throw new SecurityError(`not a ZeroMQ endpoint: ${JSON.stringify(endpoint)} (expected tcp://HOST:PORT or ipc://PATH)`);
  const transport = m[1] as string;
  const rest = m[2] as string;
  if (transport === 'ipc' || transport === 'inproc') return { transport, local: true, ipv6: false };
  if (transport !== 'tcp') throw new SecurityError(`unsupported transport ${transport}:// (use tcp:// or ipc://)`);
  const hp = /^(\[[^\]]*\]|[^:[\]]+):(\d{1,5}|\*)$/.exec(rest);
  if (!hp) throw new SecurityError(`bad tcp endpoint ${JSON.stringify(endpoint)} (expected tcp://HOST:PORT)`);
  const host = hp[1] as string;
  const port = hp[2] as string;
  if (port !== '*' && Number(port) > 65535) throw new SecurityError(`bad port in ${JSON.stringify(endpoint)}`);
  return { transport: 'tcp', local: isLoopbackHost(host), ipv6: host.startsWith('[') };
}

/** Refuse to bind a non-loopback TCP address without CURVE (anyone on the network could drive the server). */
export function assertBindAllowed(endpoint: string, curveConfigured: boolean): EndpointInfo {
  const info = classifyEndpoint(endpoint);
  if (!info.local && !curveConfigured) {
    throw new SecurityError(
      `refusing to bind ${endpoint} without CURVE encryption: only loopback (127.0.0.0/8, localhost, [::1]) and ipc:// ` +
        'endpoints may be bound without keys; pass --curve-secret-key (see `ycgym keygen`)',
    );
  }
  return info;
}
