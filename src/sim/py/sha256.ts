/**
 * SHA-256 (FIPS 180-4) in plain TypeScript, for the short stream keys of ./rng.ts (`"{runSeed}:{key}"`, one
 * 64-byte block): node:crypto's createHash costs a native Hash object, an update and a digest Buffer per call,
 * several times the compression itself for such inputs. Any length works (test/unit/sha256.test.ts checks it
 * against node:crypto). Deterministic and pure.
 */

/** SHA-256's round constants (also written into ./mt-simd.ts's WebAssembly memory). */
export const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
  0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
  0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
  0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
  0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** Scratch: the message schedule and the padded message words (reused; every call overwrites what it reads). */
const W = new Int32Array(64);
let msg = new Int32Array(16);
/** The eight state words of the last digest (H0..H7, int32 bit patterns). */
const H = new Int32Array(8);

/** Compress the 16-word block at `msg[off..off+16)` into H. */
function compress(m: Int32Array, off: number): void {
  const w = W;
  for (let t = 0; t < 16; t++) w[t] = m[off + t] as number;
  for (let t = 16; t < 64; t++) {
    const a = w[t - 15] as number;
    const b = w[t - 2] as number;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) | 0;
  }
  let a = H[0] as number;
  let b = H[1] as number;
  let c = H[2] as number;
  let d = H[3] as number;
  let e = H[4] as number;
  let f = H[5] as number;
  let g = H[6] as number;
  let h = H[7] as number;
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const ch = (e & f) ^ (~e & g);
    const t1 = (h + S1 + ch + (K[t] as number) + (w[t] as number)) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (S0 + maj) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = ((H[0] as number) + a) | 0;
  H[1] = ((H[1] as number) + b) | 0;
  H[2] = ((H[2] as number) + c) | 0;
  H[3] = ((H[3] as number) + d) | 0;
  H[4] = ((H[4] as number) + e) | 0;
  H[5] = ((H[5] as number) + f) | 0;
  H[6] = ((H[6] as number) + g) | 0;
  H[7] = ((H[7] as number) + h) | 0;
}

/** Put byte `v` at byte position `p` of the big-endian word buffer `m`. */
function putByte(m: Int32Array, p: number, v: number): void {
  const i = p >> 2;
  m[i] = (m[i] as number) | (v << (24 - ((p & 3) << 3)));
}

/**
 * SHA-256 of the UTF-8 encoding of `s`; the digest's eight big-endian 32-bit words are left in the returned array
 * (int32 bit patterns; shared scratch: read them before the next call).
 */
export function sha256Utf8Words(s: string): Int32Array {
  // UTF-8 length first (lone surrogates encode as U+FFFD, like Buffer.from / TextEncoder).
  let len = 0;
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) {
      ascii = false;
      break;
    }
    len++;
  }
  const bytes = ascii ? null : Buffer.from(s, 'utf8');
  if (bytes) len = bytes.length;
  const blocks = ((len + 8) >> 6) + 1;
  if (msg.length < blocks * 16) msg = new Int32Array(blocks * 16);
  const m = msg;
  m.fill(0, 0, blocks * 16);
  if (bytes) for (let p = 0; p < len; p++) putByte(m, p, bytes[p] as number);
  else for (let p = 0; p < len; p++) putByte(m, p, s.charCodeAt(p));
  putByte(m, len, 0x80);
  // bit length, big-endian in the last 64 bits (lengths here are far below 2^32 bits... but keep the high word right)
  const bits = len * 8;
  m[blocks * 16 - 1] = bits | 0;
  m[blocks * 16 - 2] = Math.floor(bits / 4294967296) | 0;
  H[0] = 0x6a09e667;
  H[1] = 0xbb67ae85 | 0;
  H[2] = 0x3c6ef372;
  H[3] = 0xa54ff53a | 0;
  H[4] = 0x510e527f;
  H[5] = 0x9b05688c | 0;
  H[6] = 0x1f83d9ab;
  H[7] = 0x5be0cd19;
  for (let b = 0; b < blocks; b++) compress(m, b * 16);
  return H;
}

/** SHA-256 digest of the UTF-8 encoding of `s` (32 bytes). */
export function sha256Utf8(s: string): Uint8Array {
  const h = sha256Utf8Words(s);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const v = h[i] as number;
    out[i * 4] = v >>> 24;
    out[i * 4 + 1] = (v >>> 16) & 0xff;
    out[i * 4 + 2] = (v >>> 8) & 0xff;
    out[i * 4 + 3] = v & 0xff;
  }
  return out;
}
