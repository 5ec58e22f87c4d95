/**
 * CURVE key pairs of the transport (ZeroMQ CURVE: 32-byte X25519 keys as 40 characters of Z85), needed by both
 * ends: a server's key pair and a client's own key pair. Validation and derivation of keys given by a person
 * live with the server (src/server/security.ts).
 */
import { curveKeyPair } from 'zeromq';

/** A CURVE key pair in Z85 (40 characters each). */
export interface CurveKeyPair {
  publicKey: string;
  secretKey: string;
}

/** A fresh random CURVE key pair (ZeroMQ's `zmq_curve_keypair`). */
export function generateCurveKeyPair(): CurveKeyPair {
  const { publicKey, secretKey } = curveKeyPair();
  return { publicKey, secretKey };
}
