/** Last-place (ulp) helpers for comparing doubles that are allowed to differ by rounding (sin/cos). */

const DV = new DataView(new ArrayBuffer(8));

/** Monotonic integer image of a double: adjacent doubles map to adjacent integers (+0 and -0 both to 0). */
function ordinal(x: number): bigint {
  DV.setFloat64(0, x);
  const b = DV.getBigInt64(0);
  return b < 0n ? -(b & 0x7fffffffffffffffn) : b;
}

/** Number of representable doubles from a to b (0 when equal, +0/-0 count as equal; Infinity if one is NaN). */
export function ulpDistance(a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b) ? 0 : Infinity;
  const d = ordinal(a) - ordinal(b);
  return Number(d < 0n ? -d : d);
}

/** The double k representable steps above x (k < 0: below); x finite. */
export function ulpStep(x: number, k: number): number {
  if (k === 0) return x;
  const o = ordinal(x) + BigInt(k);
  DV.setBigInt64(0, o < 0n ? -o | -0x8000000000000000n : o);
  return DV.getFloat64(0);
}

/** Decode base64 little-endian IEEE doubles (the fixtures' compact "values64" blocks). */
export function decodeFloat64(b64: string): Float64Array {
  const buf = Buffer.from(b64, 'base64');
  const out = new Float64Array(buf.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = buf.readDoubleLE(8 * i);
  return out;
}

/** Exact 2^e for -1022 <= e <= 1023. */
export function pow2(e: number): number {
  DV.setBigInt64(0, BigInt(e + 1023) << 52n);
  return DV.getFloat64(0);
}
