/**
 * JSON encoded straight into bytes: `JsonWriter` appends values to one growing buffer exactly as `JSON.stringify`
 * encodes them, in UTF-8 (the bytes of `Buffer.from(JSON.stringify(v), 'utf8')`), so a reply is assembled entry by
 * entry in one pass, without a string per entry to encode to bytes again. A `WireValue` (src/env/env.ts) writes
 * itself: a step's `OutputText` escaped straight from the command's value, never built as a string, let alone escaped a
 * second time. Plain objects, arrays and primitives are written here; anything else (class instances, `toJSON`, boxed
 * primitives, BigInt) goes through `JSON.stringify` itself, so every value encodes as it would there.
 */
import { type JsonSink, WireValue } from '../env/env.js';
import { copyBytes } from '../sim/index.js';

/**
 * An object key's texts, `"key":` and `,"key":` (UTF-8), and the key that followed it in the last object written: objects
 * of one kind list the same keys in the same order, so the next key's texts are usually found without a lookup.
 */
interface KeyText {
  readonly key: string;
  readonly first: Buffer;
  readonly next: Buffer;
  after: KeyText | null;
}
/** The key texts by key: keys repeat in every entry (bounded: some come from the world). */
const keyTexts = new Map<string, KeyText>();
const KEY_TEXTS_MAX = 4096;
/** The texts of numbers that are not 32-bit integers (the status block repeats the same prestige and trust values). */
const numberTexts = new Map<number, string>();
const NUMBER_TEXTS_MAX = 4096;

/** Strings at least this long are escaped by `JSON.stringify` (native, faster on long text) rather than byte by byte here. */
const LONG_STRING = 64;

function keyText(k: string): KeyText {
  let t = keyTexts.get(k);
  if (t === undefined) {
    const text = `${JSON.stringify(k)}:`;
    t = { key: k, first: Buffer.from(text, 'utf8'), next: Buffer.from(`,${text}`, 'utf8'), after: null };
    if (keyTexts.size < KEY_TEXTS_MAX) keyTexts.set(k, t);
  }
  return t;
}

/** Whether `x` is written here as a plain object: `Object.prototype` or no prototype, and no `toJSON`. */
function isPlainObject(x: object): boolean {
  const p = Object.getPrototypeOf(x) as unknown;
  return (p === Object.prototype || p === null) && typeof (x as { toJSON?: unknown }).toJSON !== 'function';
}

/** Whether `x` is written here as a plain array (no subclass, no `toJSON`). */
function isPlainArray(x: unknown[]): boolean {
  return Object.getPrototypeOf(x) === Array.prototype && typeof (x as { toJSON?: unknown }).toJSON !== 'function';
}

/** A growing buffer of JSON text in UTF-8. */
export class JsonWriter implements JsonSink {
  /** The bytes written are `bytes[0, used)` (`TextSink`'s fields: pyjson renders straight into them). */
  bytes: Buffer;
  used = 0;

  constructor(capacity = 1 << 14) {
    this.bytes = Buffer.allocUnsafe(Math.max(64, capacity));
  }

  /** The bytes written (a view of the buffer). */
  written(): Buffer {
    return this.bytes.subarray(0, this.used);
  }

  /** Make room for `n` more bytes. */
  reserve(n: number): void {
    if (this.used + n <= this.bytes.length) return;
    let cap = this.bytes.length * 2;
    while (cap < this.used + n) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.bytes.copy(next, 0, 0, this.used);
    this.bytes = next;
  }

  /** Append one byte (an ASCII character code). */
  byte(c: number): void {
    this.reserve(1);
    this.bytes[this.used++] = c;
  }

  /** Append an ASCII text (no character above 0x7f: one byte each). */
  ascii(s: string): void {
    const n = s.length;
    this.reserve(n);
    const b = this.bytes;
    let p = this.used;
    for (let i = 0; i < n; i++) b[p++] = s.charCodeAt(i);
    this.used = p;
  }

  /** Append bytes. */
  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    copyBytes(this.bytes, this.used, bytes);
    this.used += bytes.length;
  }

  /**
   * Append a text as UTF-8 as it is (`TextSink`; a lone surrogate would become U+FFFD: `JSON.stringify`'s output has
   * none, it escapes them).
   */
  string(s: string): void {
    this.reserve(3 * s.length);
    this.used += this.bytes.write(s, this.used, 'utf8');
  }

  /**
   * Append `v` as `JSON.stringify(v)` encodes it. `v` must encode to JSON text (not undefined, a function or a
   * symbol). Throws what `JSON.stringify` throws (a cycle, a BigInt) after writing part of it: the caller rewinds `pos`.
   */
  value(v: unknown): void {
    if (!this.item(v, '')) throw new TypeError('the value has no JSON encoding');
  }

  /**
   * Write `x`, the value under key `k` of its holder (an array's index: a number, made a string only when needed);
   * false when `JSON.stringify` leaves it out (nothing written).
   */
  private item(x: unknown, k: string | number): boolean {
    switch (typeof x) {
      case 'string':
        this.jsonString(x);
        return true;
      case 'number':
        this.number(x);
        return true;
      case 'boolean':
        this.ascii(x ? 'true' : 'false');
        return true;
      case 'undefined':
      case 'function':
      case 'symbol':
        return false;
      case 'object':
        if (x === null) {
          this.ascii('null');
          return true;
        }
        if (x instanceof WireValue) {
          x.writeJson(this);
          return true;
        }
        if (Array.isArray(x)) {
          if (!isPlainArray(x)) return this.fallback(x, k);
          this.array(x);
          return true;
        }
        if (!isPlainObject(x)) return this.fallback(x, k);
        this.object(x as Record<string, unknown>);
        return true;
      default:
        return this.fallback(x, k);
    }
  }

  private object(o: Record<string, unknown>): void {
    this.byte(0x7b); // {
    let first = true;
    let last: KeyText | null = null;
    // for-in: the own enumerable string keys in JSON.stringify's order (a plain object's prototype has none).
    for (const k in o) {
      let t: KeyText | null = last === null ? null : last.after;
      if (t === null || t.key !== k) {
        t = keyText(k);
        if (last !== null) last.after = t;
      }
      last = t;
      const at = this.used;
      this.raw(first ? t.first : t.next);
      if (this.item(o[k], k)) first = false;
      else this.used = at;
    }
    this.byte(0x7d); // }
  }

  private array(a: readonly unknown[]): void {
    this.byte(0x5b); // [
    for (let i = 0; i < a.length; i++) {
      if (i > 0) this.byte(0x2c);
      if (!this.item(a[i], i)) this.ascii('null');
    }
    this.byte(0x5d); // ]
  }

  /** A value written by `JSON.stringify` itself, as the value of key `k` (its `toJSON(k)` sees the key). */
  private fallback(x: unknown, k: string | number): boolean {
    const key = String(k);
    const t = JSON.stringify({ [key]: x });
    if (t === '{}') return false;
    this.string(t.slice(JSON.stringify(key).length + 2, -1));
    return true;
  }

  /** `JSON.stringify(x)` of a finite or non-finite number: its shortest round-trip text, `null` for NaN and infinities. */
  number(x: number): void {
    if (x >= 0 && x < 10 && (x | 0) === x) {
      this.byte(0x30 + x);
      return;
    }
    if ((x | 0) === x && x !== -2147483648) {
      // An integer of 32 bits (-0 is 0, as JSON.stringify writes it): its digits, from the last.
      let n = x < 0 ? -x : x;
      let digits = 1;
      for (let m = n; m >= 10; m = (m / 10) | 0) digits++;
      const len = x < 0 ? digits + 1 : digits;
      this.reserve(len);
      const b = this.bytes;
      let p = this.used + len;
      this.used = p;
      do {
        const q = (n / 10) | 0;
        b[--p] = 0x30 + n - 10 * q;
        n = q;
      } while (n !== 0);
      if (x < 0) b[--p] = 0x2d; // -
      return;
    }
    if (!Number.isFinite(x)) {
      this.ascii('null');
      return;
    }
    let t = numberTexts.get(x);
    if (t === undefined) {
      // -0 and 0 share a key, and a text ("0").
      t = String(x);
      if (numberTexts.size >= NUMBER_TEXTS_MAX) numberTexts.clear();
      numberTexts.set(x, t);
    }
    this.ascii(t);
  }

  /** `JSON.stringify(s)` of a string: printable ASCII byte by byte, anything else (and long text) escaped natively. */
  jsonString(s: string): void {
    const n = s.length;
    if (n >= LONG_STRING) {
      this.string(JSON.stringify(s));
      return;
    }
    this.reserve(n + 2);
    const b = this.bytes;
    const start = this.used;
    let p = start;
    b[p++] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
        this.used = start;
        this.string(JSON.stringify(s));
        return;
      }
      b[p++] = c;
    }
    b[p++] = 0x22;
    this.used = p;
  }
}
