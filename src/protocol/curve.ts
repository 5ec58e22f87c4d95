/**
 * CURVE key pairs of the transport (ZeroMQ CURVE: 32-byte X25519 keys as 40 characters of Z85), needed by both
 * ends: a server's key pair and a client's own key pair, and the Z85 codec they are written in. Validation and
 * derivation of keys given by a person live with the server (src/server/security.ts). Node's own X25519 makes the
 * keys (the keys `zmq_curve_keypair` makes: a random secret and its base-point multiple), so that nothing here loads
 * ZeroMQ: a server on the pipe transport never does.
 */
import { generateKeyPairSync } from 'node:crypto';

/** A CURVE key pair in Z85 (40 characters each). */
export interface CurveKeyPair {
  publicKey: string;
  secretKey: string;
}

const Z85_CHARS = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const Z85_INDEX = new Map<string, number>([...Z85_CHARS].map((c, i) => [c, i]));

/** Z85-encode bytes (length a multiple of 4), as ZeroMQ's `zmq_z85_encode`; throws `RangeError` on bad input. */
export function z85Encode(data: Uint8Array): string {
  if (data.length % 4 !== 0) throw new RangeError('z85: input length must be a multiple of 4');
  let out = '';
  for (let i = 0; i < data.length; i += 4) {
    let v = ((data[i] as number) * 0x1000000 + ((data[i + 1] as number) << 16) + ((data[i + 2] as number) << 8) + (data[i + 3] as number)) >>> 0;
    const chunk: string[] = [];
    for (let k = 0; k < 5; k++) {
      chunk.push(Z85_CHARS[v % 85] as string);
      v = Math.floor(v / 85);
    }
    out += chunk.reverse().join('');
  }
  return out;
}

/** Decode Z85 text (length a multiple of 5); throws `RangeError` on bad input. */
export function z85Decode(text: string): Uint8Array {
  if (text.length % 5 !== 0) throw new RangeError('z85: text length must be a multiple of 5');
  const out = new Uint8Array((text.length / 5) * 4);
  for (let i = 0, o = 0; i < text.length; i += 5, o += 4) {
    let v = 0;
    for (let k = 0; k < 5; k++) {
      const d = Z85_INDEX.get(text[i + k] as string);
      if (d === undefined) throw new RangeError(`z85: invalid character ${JSON.stringify(text[i + k])}`);
      v = v * 85 + d;
    }
    if (v > 0xffffffff) throw new RangeError('z85: value out of range');
    out[o] = v >>> 24;
    out[o + 1] = (v >>> 16) & 0xff;
    out[o + 2] = (v >>> 8) & 0xff;
    out[o + 3] = v & 0xff;
  }
  return out;
}

/** A fresh random CURVE key pair. */
export function generateCurveKeyPair(): CurveKeyPair {
  // DER ends with the raw 32-byte key (PKCS#8 and SPKI of X25519; src/server/security.ts reads a public key so too).
  const { publicKey, privateKey } = generateKeyPairSync('x25519', { publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'der' } });
  const raw = (der: Buffer): Uint8Array => new Uint8Array(der.subarray(der.length - 32));
  return { publicKey: z85Encode(raw(publicKey)), secretKey: z85Encode(raw(privateKey)) };
}
