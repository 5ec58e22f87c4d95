/**
 * A columnar row builder for the trajectory tables whose buffers are assembled into Arrow record batches without
 * copying (./arrow.ts), and packed into one shared arena to cross threads (`packTable`/`unpackTable`: a bulk-run
 * worker's slot). No Arrow import: the bulk-run worker threads load only this and the simulation.
 */
import type { TextSink } from '../sim/index.js';
import { EPISODE_COLUMNS, STEP_COLUMNS, type ColumnDef, type EpisodeRow, type StepRow, type TextSource } from './columns.js';

/** Raw buffers of one column. */
export interface ColumnBuffers {
  /** Values: little-endian fixed-width values, a validity-style bitmap for bool, UTF-8 bytes for utf8 (empty for list_struct). */
  values: Uint8Array;
  /** utf8: `length + 1` offsets into `values`; list_struct: `length + 1` offsets into the `items` rows. */
  offsets: Int32Array | null;
  /** Validity bitmap (LSB first), null when the column has no nulls. */
  validity: Uint8Array | null;
  nullCount: number;
  /** list_struct only: the structs of every list, one column per struct field. */
  items?: TableBuffers;
}

/** Raw buffers of a table chunk: one entry per column of the column list, in order. */
export interface TableBuffers {
  length: number;
  columns: ColumnBuffers[];
}

/** Where one column's buffers lie in an arena: `[byteOffset, byteLength]`, null for an absent buffer. */
export interface PackedColumn {
  values: [number, number];
  offsets: [number, number] | null;
  validity: [number, number] | null;
  nullCount: number;
  items?: PackedTable;
}

/** A table chunk's layout in an arena (`packTable`): plain numbers, cheap to post between threads. */
export interface PackedTable {
  length: number;
  columns: PackedColumn[];
}

const align8 = (n: number): number => ((n + 7) >> 3) << 3;

/** Bytes `packTable` needs for `t` (every buffer at an 8-byte aligned offset). */
export function packedSize(t: TableBuffers): number {
  let n = 0;
  for (const c of t.columns) {
    n += align8(c.values.byteLength) + (c.offsets ? align8(c.offsets.byteLength) : 0) + (c.validity ? align8(c.validity.byteLength) : 0);
    if (c.items) n += packedSize(c.items);
  }
  return n;
}

/**
 * Copy every buffer of `t` into `into` (at least `packedSize(t)` bytes, from offset 0) and return where each lies. A
 * bulk-run worker thread packs an episode's rows into a SharedArrayBuffer slot the main thread already holds, so no
 * ArrayBuffer is created per episode on either side (each one counted as external memory drove the main thread into a
 * full garbage collection every few episodes).
 */
export function packTable(t: TableBuffers, into: Uint8Array): PackedTable {
  let at = 0;
  const put = (b: Uint8Array | Int32Array): [number, number] => {
    const off = at;
    into.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength), off);
    at = off + align8(b.byteLength);
    // Zero the padding: the bytes of a packed table are those of the buffers it came from.
    into.fill(0, off + b.byteLength, at);
    return [off, b.byteLength];
  };
  const pack = (t: TableBuffers): PackedTable => ({
    length: t.length,
    columns: t.columns.map((c) => {
      const out: PackedColumn = { values: put(c.values), offsets: c.offsets ? put(c.offsets) : null, validity: c.validity ? put(c.validity) : null, nullCount: c.nullCount };
      if (c.items) out.items = pack(c.items);
      return out;
    }),
  });
  if (into.byteLength < packedSize(t)) throw new RangeError(`packTable: ${into.byteLength} bytes, ${packedSize(t)} needed`);
  return pack(t);
}

/**
 * Writes buffers one after another into an arena at 8-byte aligned offsets, as `packTable` does: `put(src, length)`
 * stands for a buffer of `length` bytes (at least `src`'s) that starts with `src` and is zero after it, the way a
 * column's `finish` pads what it copies.
 */
class ArenaWriter {
  private at = 0;
  constructor(private readonly into: Uint8Array) {}
  put(src: Uint8Array, length: number = src.byteLength): [number, number] {
    const off = this.at;
    this.into.set(src, off);
    this.at = off + align8(length);
    this.into.fill(0, off + src.byteLength, this.at);
    return [off, length];
  }
}

/**
 * The first `((n + 63) >> 6) << 3` bytes of bitmap `bits` (whose bits from n on are zero), padded with zeros where
 * `bits` is shorter: a view when it is long enough.
 */
function wholeBitmap(bits: Uint8Array, n: number): Uint8Array {
  const bytes = ((n + 63) >> 6) << 3;
  if (bits.length >= bytes) return bits.subarray(0, bytes);
  const out = new Uint8Array(bytes);
  out.set(bits);
  return out;
}

/** The bytes of a typed array's first `n` elements. */
function bytesOf(a: Int32Array | Uint8Array, n: number): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, n * a.BYTES_PER_ELEMENT);
}

/** The table chunk `packTable` laid out in `arena`: views of it, no copies. */
export function unpackTable(p: PackedTable, arena: ArrayBufferLike): TableBuffers {
  const bytes = ([off, len]: [number, number]): Uint8Array => new Uint8Array(arena, off, len);
  return {
    length: p.length,
    columns: p.columns.map((c) => {
      const out: ColumnBuffers = {
        values: bytes(c.values),
        offsets: c.offsets ? new Int32Array(arena, c.offsets[0], c.offsets[1] >> 2) : null,
        validity: c.validity ? bytes(c.validity) : null,
        nullCount: c.nullCount,
      };
      if (c.items) out.items = unpackTable(c.items, arena);
      return out;
    }),
  };
}

function grow(buf: Uint8Array<ArrayBuffer>, need: number): Uint8Array<ArrayBuffer> {
  if (need <= buf.length) return buf;
  let cap = Math.max(64, buf.length * 2);
  while (cap < need) cap *= 2;
  const next = new Uint8Array(cap);
  next.set(buf);
  return next;
}

const TWO32 = 4294967296;

abstract class Col {
  validity: Uint8Array<ArrayBuffer> | null = null;
  nullCount = 0;
  constructor(readonly def: ColumnDef) {}
  protected markNull(i: number): void {
    if (this.validity === null) {
      this.validity = new Uint8Array(Math.max(8, (i >> 3) + 1));
      // Every earlier row was valid.
      for (let k = 0; k < i; k++) (this.validity[k >> 3] as number) |= 1 << (k & 7);
    }
    this.validity = grow(this.validity, (i >> 3) + 1);
    this.nullCount++;
  }
  protected markValid(i: number): void {
    if (this.validity !== null) {
      this.validity = grow(this.validity, (i >> 3) + 1);
      (this.validity[i >> 3] as number) |= 1 << (i & 7);
    }
  }
  abstract push(i: number, v: unknown): void;
  /**
   * Append rows [from, from + count) again as rows [at, at + count) (`at` is the next row; none of them null): a
   * `list_struct` column repeats the structs of a row whose value it saw before (`ListStructCol`).
   */
  abstract repeat(from: number, count: number, at: number): void;
  /** The column's buffers for rows [0, n) (copies: the column keeps its own buffers). */
  abstract finish(n: number): ColumnBuffers;
  /** Bytes `packInto(n, w)` takes: `packedSize` of `finish(n)`'s buffers. */
  abstract packedSize(n: number): number;
  /** `finish(n)`'s buffers written by `w` where `packTable` would put them, copied once from the column's own. */
  abstract packInto(n: number, w: ArenaWriter): PackedColumn;
  /**
   * `finish(n)`'s buffers as views of the column's own where they can be (valid until the next push or clear): the
   * same bytes, but a utf8 or fixed-width column's values without the zero padding `finish` adds (what ./ipc-body.ts
   * reads of them, which pads by itself). Bitmaps are whole (padded to 8 bytes), copied when the column's own is shorter.
   */
  abstract view(n: number): ColumnBuffers;
  /** Forget every row, keeping the buffers' capacity (a bulk run appends episodes of similar sizes). */
  clear(): void {
    this.validity = null;
    this.nullCount = 0;
  }
  protected finishValidity(n: number): Uint8Array | null {
    if (this.validity === null) return null;
    const bytes = ((n + 63) >> 6) << 3;
    const out = new Uint8Array(bytes);
    out.set(this.validity.subarray(0, Math.min(this.validity.length, bytes)));
    return out;
  }
  /** Bytes of `finishValidity(n)` in an arena (0 without one). */
  protected validitySize(n: number): number {
    return this.validity === null ? 0 : ((n + 63) >> 6) << 3;
  }
  /** `finishValidity(n)`, a view when the column's bitmap is long enough. */
  protected viewValidity(n: number): Uint8Array | null {
    return this.validity === null ? null : wholeBitmap(this.validity, n);
  }
  /** `finishValidity(n)` put by `w`. */
  protected packValidity(n: number, w: ArenaWriter): [number, number] | null {
    if (this.validity === null) return null;
    const bytes = ((n + 63) >> 6) << 3;
    return w.put(this.validity.subarray(0, Math.min(this.validity.length, bytes)), bytes);
  }
}

const ENCODER = new TextEncoder();

/**
 * Write `s` as UTF-8 at `off` (capacity checked by the caller). Short strings are copied code unit by code unit
 * while ASCII; longer ones go through `TextEncoder.encodeInto` (SIMD UTF-8 transcoding, measured ~10x faster than
 * the former "test for non-ASCII with a RegExp, then write latin1" on observation texts).
 */
function writeString(buf: Buffer, s: string, off: number): number {
  const n = s.length;
  if (n <= 40) {
    for (let k = 0; k < n; k++) {
      const c = s.charCodeAt(k);
      if (c >= 0x80) return buf.write(s, off, 'utf8');
      buf[off + k] = c;
    }
    return n;
  }
  return ENCODER.encodeInto(s, buf.subarray(off)).written;
}

class Utf8Col extends Col implements TextSink {
  /** The values' bytes so far, `bytes[0, used)` (public as a `TextSink`, which a `TextSource` value appends to). */
  bytes: Buffer = Buffer.allocUnsafe(1024);
  used = 0;
  /** `TextSink.epoch`: the column only appends to bytes[0, used) until `clear`, which starts a new epoch. */
  epoch = 0;
  private offsets = new Int32Array(256);
  push(i: number, v: unknown): void {
    if (i + 2 > this.offsets.length) {
      const next = new Int32Array(this.offsets.length * 2);
      next.set(this.offsets);
      this.offsets = next;
    }
    if (v === null || v === undefined) {
      this.markNull(i);
    } else {
      this.markValid(i);
      if (typeof v === 'string') this.string(v);
      else if (v instanceof Uint8Array) this.pushBytes(v);
      else {
        (v as TextSource).appendText(this);
        if (this.used > 0x7fffffff) throw new RangeError(`utf8 column ${this.def.name}: more than 2 GiB in one chunk`);
      }
    }
    this.offsets[i + 1] = this.used;
  }
  repeat(from: number, count: number, at: number): void {
    if (at + count + 1 > this.offsets.length) {
      let cap = this.offsets.length * 2;
      while (cap < at + count + 1) cap *= 2;
      const next = new Int32Array(cap);
      next.set(this.offsets);
      this.offsets = next;
    }
    const o = this.offsets;
    const start = o[from] as number;
    const end = o[from + count] as number;
    this.ensure(this.used + (end - start));
    this.bytes.copyWithin(this.used, start, end);
    const shift = this.used - start;
    for (let k = 1; k <= count; k++) o[at + k] = (o[from + k] as number) + shift;
    this.used += end - start;
    if (this.validity !== null) for (let k = 0; k < count; k++) this.markValid(at + k);
  }
  /** Append `s` as UTF-8. */
  string(s: string): void {
    if (this.used + s.length * 3 > this.bytes.length) this.ensure(this.used + Buffer.byteLength(s, 'utf8'));
    this.used += writeString(this.bytes, s, this.used);
    if (this.used > 0x7fffffff) throw new RangeError(`utf8 column ${this.def.name}: more than 2 GiB in one chunk`);
  }
  /** Append UTF-8 bytes as they are (the caller's encoding; a view it may reuse after the call). */
  private pushBytes(b: Uint8Array): void {
    this.ensure(this.used + b.length);
    this.bytes.set(b, this.used);
    this.used += b.length;
  }
  /** Room for `need` bytes in all (at most 2 GiB: Arrow utf8 offsets are int32). */
  private ensure(need: number): void {
    if (need > 0x7fffffff) throw new RangeError(`utf8 column ${this.def.name}: more than 2 GiB in one chunk`);
    if (need <= this.bytes.length) return;
    let cap = this.bytes.length * 2;
    while (cap < need) cap *= 2;
    const next = Buffer.allocUnsafe(cap);
    this.bytes.copy(next, 0, 0, this.used);
    this.bytes = next;
  }
  finish(n: number): ColumnBuffers {
    const values = new Uint8Array(((this.used + 7) >> 3) << 3);
    values.set(this.bytes.subarray(0, this.used));
    const offsets = new Int32Array(n + 1);
    offsets.set(this.offsets.subarray(0, n + 1));
    return { values, offsets, validity: this.finishValidity(n), nullCount: this.nullCount };
  }
  packedSize(n: number): number {
    return align8(this.used) + align8(4 * (n + 1)) + this.validitySize(n);
  }
  packInto(n: number, w: ArenaWriter): PackedColumn {
    const values = w.put(this.bytes.subarray(0, this.used), align8(this.used));
    const offsets = w.put(bytesOf(this.offsets, n + 1));
    return { values, offsets, validity: this.packValidity(n, w), nullCount: this.nullCount };
  }
  view(n: number): ColumnBuffers {
    return { values: this.bytes.subarray(0, this.used), offsets: this.offsets.subarray(0, n + 1), validity: this.viewValidity(n), nullCount: this.nullCount };
  }
  override clear(): void {
    super.clear();
    this.used = 0;
    this.epoch++;
  }
}

class FixedCol extends Col {
  private buf: ArrayBuffer = new ArrayBuffer(2048);
  private f64 = new Float64Array(this.buf);
  private i32 = new Int32Array(this.buf);
  private readonly width: number;
  /** 0: int32, 1: float64, 2: int64 / timestamp (a number to switch on per value, not the kind's string). */
  private readonly type: number;
  constructor(def: ColumnDef) {
    super(def);
    this.width = def.kind === 'int32' ? 4 : 8;
    this.type = def.kind === 'int32' ? 0 : def.kind === 'float64' ? 1 : 2;
  }
  private ensure(i: number): void {
    if ((i + 1) * this.width <= this.buf.byteLength) return;
    let cap = this.buf.byteLength * 2;
    while (cap < (i + 1) * this.width) cap *= 2;
    const next = new ArrayBuffer(cap);
    new Uint8Array(next).set(new Uint8Array(this.buf));
    this.buf = next;
    this.f64 = new Float64Array(next);
    this.i32 = new Int32Array(next);
  }
  push(i: number, v: unknown): void {
    this.ensure(i);
    let x: number;
    if (v === null || v === undefined) {
      this.markNull(i);
      x = 0;
    } else {
      this.markValid(i);
      x = v as number;
    }
    switch (this.type) {
      case 0:
        this.i32[i] = x;
        break;
      case 1:
        this.f64[i] = x;
        break;
      default: {
        // int64 / timestamp: two's complement from a safe integer, little-endian words.
        const hi = Math.floor(x / TWO32);
        this.i32[2 * i] = x - hi * TWO32;
        this.i32[2 * i + 1] = hi;
      }
    }
  }
  repeat(from: number, count: number, at: number): void {
    if (count === 0) return;
    this.ensure(at + count - 1);
    const w = this.width;
    new Uint8Array(this.buf).copyWithin(at * w, from * w, (from + count) * w);
    if (this.validity !== null) for (let k = 0; k < count; k++) this.markValid(at + k);
  }
  finish(n: number): ColumnBuffers {
    const bytes = ((n * this.width + 7) >> 3) << 3;
    const values = new Uint8Array(bytes);
    values.set(new Uint8Array(this.buf, 0, Math.min(this.buf.byteLength, n * this.width)));
    return { values, offsets: null, validity: this.finishValidity(n), nullCount: this.nullCount };
  }
  packedSize(n: number): number {
    return align8(n * this.width) + this.validitySize(n);
  }
  packInto(n: number, w: ArenaWriter): PackedColumn {
    const values = w.put(new Uint8Array(this.buf, 0, Math.min(this.buf.byteLength, n * this.width)), align8(n * this.width));
    return { values, offsets: null, validity: this.packValidity(n, w), nullCount: this.nullCount };
  }
  view(n: number): ColumnBuffers {
    return { values: new Uint8Array(this.buf, 0, n * this.width), offsets: null, validity: this.viewValidity(n), nullCount: this.nullCount };
  }
}

class BoolCol extends Col {
  private bits = new Uint8Array(64);
  push(i: number, v: unknown): void {
    if (i >> 3 >= this.bits.length) this.bits = grow(this.bits, (i >> 3) + 1);
    if (v === null || v === undefined) this.markNull(i);
    else {
      this.markValid(i);
      if (v === true) (this.bits[i >> 3] as number) |= 1 << (i & 7);
    }
  }
  finish(n: number): ColumnBuffers {
    const bytes = ((n + 63) >> 6) << 3;
    const values = new Uint8Array(bytes);
    values.set(this.bits.subarray(0, Math.min(this.bits.length, bytes)));
    return { values, offsets: null, validity: this.finishValidity(n), nullCount: this.nullCount };
  }
  packedSize(n: number): number {
    return (((n + 63) >> 6) << 3) + this.validitySize(n);
  }
  packInto(n: number, w: ArenaWriter): PackedColumn {
    const bytes = ((n + 63) >> 6) << 3;
    const values = w.put(this.bits.subarray(0, Math.min(this.bits.length, bytes)), bytes);
    return { values, offsets: null, validity: this.packValidity(n, w), nullCount: this.nullCount };
  }
  view(n: number): ColumnBuffers {
    return { values: wholeBitmap(this.bits, n), offsets: null, validity: this.viewValidity(n), nullCount: this.nullCount };
  }
  repeat(from: number, count: number, at: number): void {
    for (let k = 0; k < count; k++) {
      const i = at + k;
      if (i >> 3 >= this.bits.length) this.bits = grow(this.bits, (i >> 3) + 1);
      if (this.validity !== null) this.markValid(i);
      const j = from + k;
      if (((this.bits[j >> 3] as number) >> (j & 7)) & 1) (this.bits[i >> 3] as number) |= 1 << (i & 7);
    }
  }
  /** Change row `i`'s value (already appended, not null). */
  set(i: number, v: boolean): void {
    if (v) (this.bits[i >> 3] as number) |= 1 << (i & 7);
    else (this.bits[i >> 3] as number) &= ~(1 << (i & 7));
  }
  override clear(): void {
    super.clear();
    this.bits.fill(0);
  }
}

/**
 * A `list_struct` column: list offsets, and one child column per struct field holding the structs of every row.
 * A value is an array of objects (a property per field), or, for a two-field struct, a record whose keys are the
 * first field and whose values the second, written in sorted key order (UTF-16 code units, as `statusOf` sorts). A
 * frozen record appended again (the very object) repeats the structs it gave the first time.
 */
class ListStructCol extends Col {
  private offsets = new Int32Array(256);
  private readonly children: Col[];
  private readonly names: string[];
  private items = 0;
  /**
   * The last frozen record of primitive values appended (it cannot change: the same one again has the same structs), and
   * where its structs lie, items [frozenFrom, frozenFrom + frozenCount); null when none since the last clear. A
   * recorder that keeps one object while its values stay the same (`StatusObjects.trust`) has its structs copied as a
   * block instead of written again key by key.
   */
  private frozen: object | null = null;
  private frozenFrom = 0;
  private frozenCount = 0;
  constructor(def: ColumnDef) {
    super(def);
    const fields = def.fields ?? [];
    if (fields.length === 0) throw new Error(`list_struct column ${def.name} has no fields`);
    this.names = fields.map((f) => f.name);
    this.children = fields.map((f) => makeCol({ name: f.name, kind: f.kind, nullable: false, doc: '' }));
  }
  private field(k: number, v: unknown): void {
    if (v === null || v === undefined) throw new TypeError(`column ${this.def.name}: struct field ${this.names[k] as string} is not nullable`);
    (this.children[k] as Col).push(this.items, v);
  }
  push(i: number, v: unknown): void {
    if (i + 2 > this.offsets.length) {
      const next = new Int32Array(this.offsets.length * 2);
      next.set(this.offsets);
      this.offsets = next;
    }
    if (v === null || v === undefined) this.markNull(i);
    else if (v === this.frozen) {
      this.markValid(i);
      const from = this.frozenFrom;
      const count = this.frozenCount;
      for (const c of this.children) c.repeat(from, count, this.items);
      this.items += count;
    } else {
      this.markValid(i);
      if (Array.isArray(v)) {
        const names = this.names;
        for (const e of v as Record<string, unknown>[]) {
          for (let k = 0; k < names.length; k++) this.field(k, e[names[k] as string]);
          this.items++;
        }
      } else {
        if (this.children.length !== 2) throw new TypeError(`column ${this.def.name}: a record value needs a two-field struct`);
        const rec = v as Record<string, unknown>;
        let keys = Object.keys(rec);
        for (let k = 1; k < keys.length; k++) {
          if ((keys[k] as string) < (keys[k - 1] as string)) {
            keys = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
            break;
          }
        }
        const keyCol = this.children[0] as Col;
        const from = this.items;
        // Only a frozen record of primitive values cannot change (a utf8 field may be given mutable bytes).
        let primitive = true;
        for (const key of keys) {
          keyCol.push(this.items, key);
          const x = rec[key];
          if (typeof x === 'object') primitive = false;
          this.field(1, x);
          this.items++;
        }
        if (primitive && Object.isFrozen(rec)) {
          this.frozen = rec;
          this.frozenFrom = from;
          this.frozenCount = this.items - from;
        }
      }
    }
    if (this.items > 0x7fffffff) throw new RangeError(`list column ${this.def.name}: more than 2^31 items in one chunk`);
    this.offsets[i + 1] = this.items;
  }
  finish(n: number): ColumnBuffers {
    const offsets = new Int32Array(n + 1);
    offsets.set(this.offsets.subarray(0, n + 1));
    const items: TableBuffers = { length: this.items, columns: this.children.map((c) => c.finish(this.items)) };
    return { values: new Uint8Array(0), offsets, validity: this.finishValidity(n), nullCount: this.nullCount, items };
  }
  packedSize(n: number): number {
    let size = align8(4 * (n + 1)) + this.validitySize(n);
    for (const c of this.children) size += c.packedSize(this.items);
    return size;
  }
  packInto(n: number, w: ArenaWriter): PackedColumn {
    const values = w.put(new Uint8Array(0));
    const offsets = w.put(bytesOf(this.offsets, n + 1));
    const validity = this.packValidity(n, w);
    const items: PackedTable = { length: this.items, columns: this.children.map((c) => c.packInto(this.items, w)) };
    return { values, offsets, validity, nullCount: this.nullCount, items };
  }
  view(n: number): ColumnBuffers {
    const items: TableBuffers = { length: this.items, columns: this.children.map((c) => c.view(this.items)) };
    return { values: new Uint8Array(0), offsets: this.offsets.subarray(0, n + 1), validity: this.viewValidity(n), nullCount: this.nullCount, items };
  }
  override clear(): void {
    super.clear();
    for (const c of this.children) c.clear();
    this.items = 0;
    this.frozen = null;
  }
  repeat(): void {
    throw new Error(`list column ${this.def.name} inside a struct`);
  }
}

function makeCol(c: ColumnDef): Col {
  switch (c.kind) {
    case 'utf8':
      return new Utf8Col(c);
    case 'bool':
      return new BoolCol(c);
    case 'list_struct':
      return new ListStructCol(c);
    default:
      return new FixedCol(c);
  }
}

/**
 * Appends rows column by column; `finish` hands out the buffers and resets the builder. A utf8 column takes a string,
 * its UTF-8 bytes (a `Uint8Array`, copied during `append`), or a `TextSource`, which appends its text to the column's
 * bytes during `append`.
 */
export class TableBuilder<R extends object> {
  private cols: Col[] = [];
  /** Column names and whether each is nullable, in column order (read per value by `append`). */
  private readonly names: string[];
  private readonly nullable: boolean[];
  /** The row being appended, value by column (scratch). */
  private readonly values: unknown[];
  private n = 0;
  constructor(readonly columns: readonly ColumnDef[]) {
    this.names = columns.map((c) => c.name);
    this.nullable = columns.map((c) => c.nullable);
    this.values = columns.map(() => undefined);
    this.reset();
  }
  /** Rows appended since the last `finish`. */
  get length(): number {
    return this.n;
  }
  private reset(): void {
    if (this.cols.length === 0) this.cols = this.columns.map(makeCol);
    else for (const c of this.cols) c.clear();
    this.n = 0;
  }
  /** Append one row (a value per column name; null only in nullable columns). */
  append(row: R): void {
    const r = row as Record<string, unknown>;
    const i = this.n;
    const cols = this.cols;
    const names = this.names;
    const values = this.values;
    // A row whose keys are the column names in column order (as the exporters build their rows) is read with for-in,
    // whose loads V8 makes by field index; any other row by name, one keyed load per column, which V8 makes through
    // its megamorphic cache (a quarter of the time appending a step row took).
    let c = 0;
    for (const k in r) {
      if (k !== names[c]) {
        c = -1;
        break;
      }
      values[c++] = r[k];
    }
    if (c !== names.length) for (c = 0; c < names.length; c++) values[c] = r[names[c] as string];
    for (c = 0; c < cols.length; c++) {
      const v = values[c];
      if ((v === null || v === undefined) && !this.nullable[c]) throw new TypeError(`column ${names[c] as string} is not nullable`);
      (cols[c] as Col).push(i, v);
    }
    this.n++;
  }
  /**
   * Change an appended row's value in a non-nullable bool column (the exporter marks the last row of an episode once
   * it knows it is the last).
   */
  setBool(row: number, column: string, v: boolean): void {
    const k = this.columns.findIndex((c) => c.name === column);
    const col = this.cols[k];
    if (!(col instanceof BoolCol) || col.def.nullable) throw new TypeError(`${column} is not a non-nullable bool column`);
    if (!Number.isInteger(row) || row < 0 || row >= this.n) throw new RangeError(`row ${row} is not appended (${this.n} rows)`);
    col.set(row, v);
  }
  /** The buffers of every row appended so far; the builder starts over. */
  finish(): TableBuffers {
    const out: TableBuffers = { length: this.n, columns: this.cols.map((c) => c.finish(this.n)) };
    this.reset();
    return out;
  }
  /**
   * Hand `use` the buffers of every row appended so far as views of the builder's own (no copy; `Col.view`: the bytes
   * of `finish`, but values without their zero padding), then start over. The views are valid during the call only:
   * for a writer that copies or compresses them at once (`recordBatchBody` of ./ipc-body.ts, whose uncompressed chunks
   * are views of them too: copy those before the call returns).
   */
  consume<T>(use: (t: TableBuffers) => T): T {
    try {
      return use({ length: this.n, columns: this.cols.map((c) => c.view(this.n)) });
    } finally {
      this.reset();
    }
  }
  /** Bytes `pack` needs: `packedSize(this.finish())`, without finishing. */
  packedSize(): number {
    let size = 0;
    for (const c of this.cols) size += c.packedSize(this.n);
    return size;
  }
  /**
   * `packTable(this.finish(), into)`: the same bytes at the same offsets and the same layout, each buffer copied once,
   * straight from the builder's own (finish copies them first, into new buffers a bulk-run worker dropped at once); the
   * builder starts over.
   */
  pack(into: Uint8Array): PackedTable {
    const need = this.packedSize();
    if (into.byteLength < need) throw new RangeError(`pack: ${into.byteLength} bytes, ${need} needed`);
    const w = new ArenaWriter(into);
    const out: PackedTable = { length: this.n, columns: this.cols.map((c) => c.packInto(this.n, w)) };
    this.reset();
    return out;
  }
}

/** A builder for step rows. */
export function stepBuilder(): TableBuilder<StepRow> {
  return new TableBuilder<StepRow>(STEP_COLUMNS);
}

/** A builder for episode rows. */
export function episodeBuilder(): TableBuilder<EpisodeRow> {
  return new TableBuilder<EpisodeRow>(EPISODE_COLUMNS);
}
