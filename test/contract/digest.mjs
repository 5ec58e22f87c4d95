// How a contract fixture pins a result (see README.md): the observation text by its SHA-256, everything
// else verbatim. Shared by gen-fixtures.mjs and env-contract.ts.
import { createHash } from 'node:crypto';

/** @param {string} text */
export function sha256(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** @param {{text: string, ok: boolean, exit_code: number, command: string | null, status: unknown}} o */
export function observationDigest(o) {
  return { text_sha256: sha256(o.text), ok: o.ok, exit_code: o.exit_code, command: o.command, status: o.status };
}

/** Digest of a reset or restore result. */
export function resetDigest(r) {
  return { observation: observationDigest(r.observation), info: r.info };
}

/** Digest of a step result. */
export function stepDigest(r) {
  return { observation: observationDigest(r.observation), reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info };
}
