/** Types of ./digest.mjs (plain JavaScript: also run by gen-fixtures.mjs without a build). */
export function sha256(text: string): string;
export function observationDigest(o: unknown): unknown;
export function resetDigest(r: unknown): unknown;
export function stepDigest(r: unknown): unknown;
