/**
 * Python `json.dumps` compatible text output (ensure_ascii, `indent=2` or compact), and a parser that
 * keeps the int/float distinction of JSON number tokens, so outputs can be compared with the reference exactly.
 */
import { pyRepr } from './pyfloat.js';

/** A Python float that must print with a decimal point (`899.0`) in JSON output. */
export class PyFloat {
  constructor(readonly value: number) {}
}
declare const FLOAT: unique symbol;
/**
 * A number the reference prints as a Python float (`899.0`): a plain number at run time, marked for the compiler
 * only, so a result type's float field accepts only values that went through `F`.
 */
export type Float = number & { readonly [FLOAT]: true };
/**
 * Marks a value the reference prints as a Python float. Outputs stay plain numbers; `pyJsonDumps` restores
 * the float formatting from the key (see FLOAT_KEYS in pyjson.ts), so this is documentation, not a wrapper.
 */
export function F(x: number): Float {
  return x as Float;
}
/** JSON-like output value; floats are tagged so text output matches Python's `json.dumps`. */
export type Out = null | boolean | number | string | PyFloat | Out[] | { [k: string]: Out };

/** Whether `s` needs no escaping: printable ASCII without `"` and `\`. */
function plainAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

function encodeString(s: string): string {
  if (plainAscii(s)) return '"' + s + '"';
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
}

/**
 * Memo of Python float reprs (outputs repeat the same few thousand floats; `String(x)` is the cost): direct-mapped by
 * a hash of the double's bits, a slot holding the last float that hashed to it. Looking a double up in a Map hashed
 * it on a slow path that cost as much as the repr it saved for new floats; this costs two typed-array reads.
 */
const REPR_SLOTS_LOG2 = 14;
/** The float each slot holds (NaN: none; NaN equals nothing, so it is never found). */
const reprKeys = new Float64Array(1 << REPR_SLOTS_LOG2).fill(NaN);
const reprTexts: string[] = new Array<string>(1 << REPR_SLOTS_LOG2).fill('');
const reprBits = new Float64Array(1);
const reprWords = new Int32Array(reprBits.buffer);

function floatText(x: number): string {
  reprBits[0] = x;
  const slot = Math.imul((reprWords[0] as number) ^ Math.imul(reprWords[1] as number, 0x27d4eb2d), 0x9e3779b1) >>> (32 - REPR_SLOTS_LOG2);
  // -0.0 and 0.0 are equal doubles: zeros are never kept (x !== 0 below), so a zero is never found.
  if (reprKeys[slot] === x) return reprTexts[slot] as string;
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  const t = pyRepr(x);
  if (x !== 0) {
    reprKeys[slot] = x;
    reprTexts[slot] = t;
  }
  return t;
}

function intText(x: number): string {
  if (Number.isSafeInteger(x)) return String(x);
  if (!Number.isFinite(x)) return floatText(x);
  if (Number.isInteger(x)) return Math.abs(x) < 1e21 ? x.toFixed(0) : BigInt(x).toString();
  return floatText(x);
}

/**
 * Keys whose numeric values are Python floats in the reference's output (`899.0`, not `899`). Outputs are
 * plain JS values; the float/int distinction is restored from the key when printing (schema-driven typing).
 */
export const FLOAT_KEYS: ReadonlySet<string> = new Set([
  'reward_prestige_delta', 'skill_boost_pct', 'required_qty', 'completed_qty', 'remaining_qty', 'progress_pct',
  'trust_level', 'trust_delta', 'months_runway', 'failure_rate_pct', 'cancel_penalty_per_domain', 'old', 'new', 'delta',
  'work_hours_per_day', 'reward_multiplier', 'loyalty',
]);
/** Keys whose value is an object mapping names to floats (`prestige`, `skill_rates`, `rates`). */
export const FLOAT_MAP_KEYS: ReadonlySet<string> = new Set(['prestige', 'skill_rates', 'rates']);

const enum Mode {
  Plain = 0,
  Float = 1,
  FloatMap = 2,
}

function childMode(k: string): Mode {
  return FLOAT_KEYS.has(k) ? Mode.Float : FLOAT_MAP_KEYS.has(k) ? Mode.FloatMap : Mode.Plain;
}

/** A key's JSON text (quoted, escaped, followed by `": "`), that text escaped again (`escaped` output), and the mode of its value. */
interface KeyInfo {
  readonly text: string;
  readonly esc: string;
  readonly mode: Mode;
  /**
   * With `indent` 2, the bytes that lead the key's entry in an object at each level, by `leadSlot`: `{` (the first
   * entry) or `,` (any other), the newline and indent, the key text; made on first use. One copy per entry instead of
   * three pieces.
   */
  readonly first: (Lead | undefined)[];
  readonly next: (Lead | undefined)[];
  /** The key itself. */
  readonly key: string;
}
/** Memo of key texts and modes (keys repeat in every output; bounded: names used as keys come from the world). */
const keyCache = new Map<string, KeyInfo>();
const KEY_CACHE_MAX = 4096;

function keyInfo(k: string): KeyInfo {
  let info = keyCache.get(k);
  if (info === undefined) {
    const text = encodeString(k) + ': ';
    info = { text, esc: escapeAscii(text), mode: childMode(k), first: [], next: [], key: k };
    if (keyCache.size < KEY_CACHE_MAX) keyCache.set(k, info);
  }
  return info;
}

/**
 * An ASCII text as the contents of a JSON string: what `JSON.stringify` makes of it, without the quotes (for pieces of
 * Python JSON, all ASCII: `"` and `\` get a backslash, the newline of an indent becomes `\n`).
 */
function escapeAscii(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/**
 * Whether the output is being written escaped (`pyJsonAppend`'s `escape`): as the contents of a JSON string holding
 * the text, i.e. every piece as `escapeAscii` makes it. The pieces are escaped once (keys, indents) or as they are
 * written (a string's quotes), so the escaped text costs what the text costs.
 */
let escaped = false;

const PADS: string[] = [];
const ESC_PADS: string[] = [];
function pad(indent: number, level: number): string {
  const n = indent * level;
  const pads = escaped ? ESC_PADS : PADS;
  let p = pads[n];
  if (p === undefined) {
    p = (escaped ? '\\n' : '\n') + ' '.repeat(n);
    pads[n] = p;
  }
  return p;
}

/** The slot of an object entry's lead bytes (`KeyInfo.first`, `KeyInfo.next`, `CLOSE`) at `level`, by the escaping. */
function leadSlot(level: number): number {
  return 2 * level + (escaped ? 1 : 0);
}

/**
 * A fixed ASCII text the writer copies into nearly every output (an entry's lead, an object's close), as the
 * little-endian 32-bit words of its bytes (the last one padded with zeros): `putRun` stores them a word at a time, a
 * third of the time a byte loop took for these ~26 bytes.
 */
interface AsciiRun {
  readonly n: number;
  readonly words: Int32Array;
}

function asciiRun(s: string): AsciiRun {
  const n = s.length;
  const words = new Int32Array((n + 3) >> 2);
  for (let k = 0; k < n; k++) words[k >> 2] = (words[k >> 2] as number) | (s.charCodeAt(k) << (8 * (k & 3)));
  return { n, words };
}

/**
 * An entry's lead (`KeyInfo.first`, `KeyInfo.next`: one key, one `leadSlot`, one opener), with its key, the mode of its
 * value, and the lead of the entry that followed it in the last object written at that slot (a hint). Objects of one
 * kind list the same keys in the same order, so the writer goes from lead to lead (checking the key) instead of from
 * key info to its leads' arrays to a lead: in an episode each of those hops could miss the cache (~40% of the time
 * `writeObject` spent under --cpu-prof was on them).
 */
interface Lead extends AsciiRun {
  readonly key: string;
  readonly mode: Mode;
  after: Lead | null;
}

/** `opener` (`{` or `,`), the newline and indent 2 of an entry at `level`, and the key text (escaped as the output is). */
function leadRun(info: KeyInfo, opener: string, level: number): Lead {
  const r = asciiRun(opener + pad(2, level + 1) + (escaped ? info.esc : info.text));
  return { n: r.n, words: r.words, key: info.key, mode: info.mode, after: null };
}

/** With `indent` 2, by `leadSlot`: the newline and indent closing an object at that level, and its `}`. */
const CLOSE: (AsciiRun | undefined)[] = [];

/**
 * Frozen output values whose rendered text is memoised (see `memoRendered`): the bytes of the last (level, indent,
 * mode, escaping) it was printed at, `slab[start, end)`. A frozen value cannot change, so its text never goes stale.
 */
interface Rendered {
  level: number;
  indent: number | null;
  mode: Mode;
  escaped: boolean;
  /** Null until rendered. */
  slab: Uint8Array | null;
  start: number;
  end: number;
}
/**
 * A memoised value's `Rendered` is kept on the value itself, under this symbol (a non-enumerable property: no key,
 * copy or comparison of the value sees it), not in a module-level WeakMap: V8's young-generation collector treats the
 * values of a WeakMap that lives in the old generation as reachable, so an episode's memoised values kept all they
 * reach alive one collection longer than the episode, and were promoted. A value frozen before it was memoised cannot
 * take the property: its memo is in `renderedFrozen` (none of the simulation's values: see `memoRenderedShallow`).
 */
const RENDERED: unique symbol = Symbol('rendered');
const renderedFrozen = new WeakMap<object, Rendered>();
/** Whether `renderedFrozen` was ever used (until then no lookup reads it). */
let anyFrozenMemo = false;

/** `v`'s memo (null: `v` is not memoised). */
function memoOf(v: object): Rendered | null {
  const m = (v as { [RENDERED]?: Rendered })[RENDERED];
  if (m !== undefined) return m;
  return anyFrozenMemo ? (renderedFrozen.get(v) ?? null) : null;
}

function newMemo(): Rendered {
  return { level: -1, indent: null, mode: Mode.Plain, escaped: false, slab: null, start: 0, end: 0 };
}

/** Memoise `v`'s text (`v` an object, not memoised yet): on `v` unless it is frozen already. */
function addMemo(v: object): void {
  if (Object.isExtensible(v)) Object.defineProperty(v, RENDERED, { value: newMemo() });
  else {
    renderedFrozen.set(v, newMemo());
    anyFrozenMemo = true;
  }
}

/**
 * Memoised texts are kept in shared slabs, one after another, instead of a buffer each: a typed array of a few hundred
 * bytes has its own off-heap backing store, whose allocation (and the garbage collector's tracking of it as external
 * memory) cost a `market browse` entry more than rendering it. A slab lives as long as any text in it.
 */
const SLAB_BYTES = 1 << 16;
let slab = new Uint8Array(SLAB_BYTES);
let slabUsed = 0;

/** Keep `out[start, end)` as `memo`'s text. */
function keepText(memo: Rendered, start: number, end: number): void {
  const n = end - start;
  if (slabUsed + n > slab.length) {
    slab = new Uint8Array(Math.max(SLAB_BYTES, n));
    slabUsed = 0;
  }
  slab.set(out.subarray(start, end), slabUsed);
  memo.slab = slab;
  memo.start = slabUsed;
  memo.end = slabUsed + n;
  slabUsed += n;
}

/**
 * Deep-freeze an output value and let `pyJsonDumps` memoise its text: a value shared by many outputs (a market
 * listing entry that did not change between two `market browse`) is rendered once. Returns the value.
 */
export function memoRendered<T extends Out>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (memoOf(v) === null) addMemo(v);
  deepFreeze(v);
  return v;
}

/**
 * `memoRendered` for an object whose values are already deep-frozen (or are numbers of `F`, which a deep freeze would
 * not walk into) and which is not frozen itself: freezes it (its values are not walked again) and memoises its text.
 */
export function memoRenderedShallow<T extends object & Out>(v: T): T {
  if (memoOf(v) === null) addMemo(v);
  Object.freeze(v);
  return v;
}

function deepFreeze(v: Out): void {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return;
  if (Array.isArray(v)) for (const e of v) deepFreeze(e);
  else if (!(v instanceof PyFloat)) for (const k in v) deepFreeze(v[k] as Out);
  Object.freeze(v);
}

/**
 * A chain of lists of memoised values (`memoList`): successive versions of one listing (a company's `market browse`
 * entries), most of whose elements the next version repeats in the same order. The chain keeps the text of the last
 * version it rendered, so the next one copies each run of elements it shares with it as one block: for a version
 * rendered by `pyJsonDumps`, the place in the string it returned (the string holds the text: no copy aside per listing);
 * for a version appended to an append-only sink (`TextSink.epoch`: a trajectory's text column), the place in the sink it
 * was written to, read back from there while the sink keeps it; for any other, a copy of its own.
 */
export interface ListChain {
  /** @internal The last rendered version's text (null before the first). */
  text: ListText | null;
  /** @internal The text before it: its arrays and buffer are filled again by the next version. */
  spare: ListText | null;
}

/** The text of a rendered list of a chain, element by element (the first `n` entries of each array). */
interface ListText {
  level: number;
  indent: number | null;
  escaped: boolean;
  n: number;
  /** The elements as rendered: a memoised (deep-frozen) value, or NOT_MEMO for any other element. */
  readonly items: unknown[];
  /**
   * Element i's text is bytes[starts[i], ends[i]) (with `sink`: the sink's bytes[base + starts[i], base + ends[i]);
   * with `str`: its characters [base + starts[i], base + ends[i]), one per byte); the separator between two elements lies
   * between them. Plain arrays (small integers), filled in order and kept for the chain's next text but one: an
   * Int32Array of a listing's ~70 offsets has an off-heap backing store, whose allocation (when a listing grew by an
   * element, and for each chain's first two texts) took ~0.7% of a greedy text episode under --cpu-prof.
   */
  readonly starts: number[];
  readonly ends: number[];
  bytes: Uint8Array;
  /**
   * The append-only sink (`TextSink.epoch`) the text was written into, at `base`, in its `epoch`, instead of a copy in
   * `bytes`: it is there, unchanged, while the sink's epoch is the same and no `pyJsonAppend` has failed since (`failed`:
   * the count of failed ones then; a failed one never took its text into its sink). Null: the text is in `bytes`.
   */
  sink: TextSink | null;
  epoch: number;
  base: number;
  failed: number;
  /**
   * For a text rendered by `pyJsonDumps`: the string it returned, which holds the text at `base` (null: the text is in
   * the sink or in `bytes`). Null while the call runs (`dumped`), and for good when it fails: nothing to read back then.
   */
  str: string | null;
  /** Rendered by `pyJsonDumps` (the text is in `str`, or nowhere while `str` is null). */
  dumped: boolean;
  /** Element -> index in `items`, built when the neighbourhood of the expected index does not hold an element. */
  index: Map<unknown, number> | null;
}
/** Stands for an element whose text may change (not memoised): never identical to an element of a list. */
const NOT_MEMO: object = Object.freeze({});
/**
 * The lists most recently given a chain (`memoList`), with their chains, newest replacing the oldest: a list's chain is
 * looked up here by identity, not kept on the list. A property on the list (`Object.defineProperty`, non-enumerable, as
 * `RENDERED` is kept) cost a runtime call per `market browse` whether or not its text was ever rendered (~1-3% of a
 * value-only greedy episode); every writer renders a step's text before the simulation lists again (the episode loop's
 * hooks, the trajectory exporter, the servers' replies), and a few sessions interleaved in one process stay within
 * `RECENT_CHAINS`. A list rendered after `RECENT_CHAINS` later lists were given chains is written as any list is: the
 * same text, only not copied from its chain's last one (and not taken as its chain's next version).
 */
const RECENT_CHAINS = 8;
const chainLists: (readonly Out[] | null)[] = [null, null, null, null, null, null, null, null];
const chainsOf: (ListChain | null)[] = [null, null, null, null, null, null, null, null];
let chainNext = 0;

function chainOf(list: readonly Out[]): ListChain | undefined {
  for (let i = 0; i < RECENT_CHAINS; i++) if (chainLists[i] === list) return chainsOf[i] as ListChain;
  return undefined;
}

/** A new chain for {@link memoList}. */
export function listChain(): ListChain {
  return { text: null, spare: null };
}

/**
 * Render `list` as the next version of `chain`: each run of elements that are, in the same order, memoised elements
 * of the version the chain rendered last (at the same depth and indent) is copied from that text, whose bytes for
 * those very frozen values and the separators between them are what rendering them again would write. Elements that
 * are not memoised (`memoRendered`) are rendered every time. Holds while `list` is among the last `RECENT_CHAINS` lists
 * given a chain (see `chainLists`). Returns `list`.
 */
export function memoList<T extends Out[]>(list: T, chain: ListChain): T {
  // A list given a chain again (frozen or not) renders through the new one.
  for (let i = 0; i < RECENT_CHAINS; i++) {
    if (chainLists[i] === list) {
      chainsOf[i] = chain;
      return list;
    }
  }
  chainLists[chainNext] = list;
  chainsOf[chainNext] = chain;
  chainNext = (chainNext + 1) % RECENT_CHAINS;
  return list;
}

/** Where `v` is among `prev`'s elements, looked for at `j` (the element after the last run) and the next three. */
function findPrev(prev: ListText, v: unknown, j: number, useIndex: boolean): number {
  const items = prev.items;
  const end = Math.min(prev.n, j + 4);
  for (let a = j; a < end; a++) if (items[a] === v) return a;
  if (!useIndex) return -1;
  let index = prev.index;
  if (index === null) {
    index = new Map();
    for (let a = 0; a < prev.n; a++) if (items[a] !== NOT_MEMO) index.set(items[a], a);
    prev.index = index;
  }
  return index.get(v) ?? -1;
}

/** A chain's spare text made ready for a list of `n` elements. */
function blankText(chain: ListChain, level: number, indent: number | null, n: number): ListText {
  let t = chain.spare;
  chain.spare = null;
  if (t === null) t = { level, indent, escaped, n, items: [], starts: [], ends: [], bytes: new Uint8Array(0), sink: null, epoch: 0, base: 0, failed: 0, str: null, dumped: false, index: null };
  else {
    t.str = null;
    t.dumped = false;
    t.level = level;
    t.indent = indent;
    t.escaped = escaped;
    t.n = n;
    t.index = null;
  }
  return t;
}

/** Write `x` (non-empty, of `chain`) as `write` writes an array, copying the runs it shares with the chain's last text. */
function writeList(x: readonly Out[], chain: ListChain, level: number, indent: number | null): void {
  const n = x.length;
  const t = chain.text;
  // A text left in a sink is read from this output only: the same sink, in the same epoch, being appended to (the
  // output holds its bytes[0, used) at the same offsets, `reserve` keeping them when it grows).
  // A text left in a string (`pyJsonDumps`) is read from it once the call that rendered it returned the string.
  const prev = t !== null && t.level === level && t.indent === indent && t.escaped === escaped && (t.sink === null ? !t.dumped || t.str !== null : t.sink === sinkNow && t.sink.epoch === t.epoch && t.failed === sinkFailures) ? t : null;
  const next = blankText(chain, level, indent, n);
  const { items, starts, ends } = next;
  const sep = indent === null ? ', ' : ',' + pad(indent, level + 1);
  put('[');
  if (indent !== null) put(pad(indent, level + 1));
  const base = pos;
  let j = 0;
  let misses = 0;
  for (let i = 0; i < n; ) {
    if (i > 0) put(sep);
    const v = x[i] as Out;
    const at = prev !== null && v !== null && typeof v === 'object' ? findPrev(prev, v, j, misses >= 2) : -1;
    if (at >= 0) {
      const p = prev as ListText;
      const pi = p.items;
      let k = 1;
      while (i + k < n && at + k < p.n && x[i + k] === pi[at + k]) k++;
      const from = p.starts[at] as number;
      const to = p.ends[at + k - 1] as number;
      const shift = pos - base - from;
      reserve(to - from);
      if (p.str !== null) out.write(p.str.substring(p.base + from, p.base + to), pos, to - from, 'latin1');
      else if (p.sink === null) out.set(p.bytes.subarray(from, to), pos);
      else out.copyWithin(pos, p.base + from, p.base + to);
      pos += to - from;
      for (let m = 0; m < k; m++) {
        items[i + m] = pi[at + m];
        starts[i + m] = (p.starts[at + m] as number) + shift;
        ends[i + m] = (p.ends[at + m] as number) + shift;
      }
      i += k;
      j = at + k;
      misses = 0;
      continue;
    }
    misses++;
    starts[i] = pos - base;
    // Only a memoised value's text is fixed: anything else may render differently next time.
    items[i] = v !== null && typeof v === 'object' && memoOf(v) !== null ? v : NOT_MEMO;
    write(v, level + 1, Mode.Plain, indent);
    ends[i] = pos - base;
    i++;
  }
  if (items.length > n) items.length = n;
  if (sinkNow !== null) {
    // Left where it was written (read back while the sink's epoch holds), not copied.
    next.sink = sinkNow;
    next.epoch = sinkNow.epoch as number;
    next.base = base;
    next.failed = sinkFailures;
  } else if (dumping) {
    // Left in the string `pyJsonDumps` returns (given to the text when it returns), not copied.
    next.sink = null;
    next.dumped = true;
    next.base = base;
    dumped.push(next);
  } else {
    const len = ends[n - 1] as number;
    if (next.bytes.length < len) next.bytes = new Uint8Array(Math.max(len, next.bytes.length * 2));
    next.bytes.set(out.subarray(base, base + len));
    next.sink = null;
  }
  chain.spare = t;
  chain.text = next;
  if (indent !== null) put(pad(indent, level));
  put(']');
}

/**
 * The output being written, as bytes: every piece is ASCII (ensure_ascii escapes the rest), so one byte per
 * character. Writing bytes instead of concatenating strings builds no rope (the text of a `market browse` was a tree
 * of thousands of small strings that every reader then had to flatten) and lets memoised values be copied as bytes.
 * One pass; `pyJsonDumps` is not re-entered from inside a write.
 */
let out: Buffer = Buffer.allocUnsafe(1 << 16);
let pos = 0;
/** Largest output buffer kept between calls (a larger one, for a rare huge output, is dropped after it). */
const KEEP_BYTES = 1 << 22;

function reserve(n: number): void {
  if (pos + n <= out.length) return;
  // At least 64 bytes: a sink may hand over an empty buffer (doubling 0 would never make room).
  let cap = Math.max(out.length * 2, 64);
  while (cap < pos + n) cap *= 2;
  const next = Buffer.allocUnsafe(cap);
  out.copy(next, 0, 0, pos);
  out = next;
}

/** Append an ASCII string. */
function put(s: string): void {
  const n = s.length;
  reserve(n);
  if (n <= 24) {
    const o = out;
    for (let k = 0; k < n; k++) o[pos + k] = s.charCodeAt(k);
  } else out.write(s, pos, n, 'latin1');
  pos += n;
}

/**
 * Copy `src` into `dst` at `at` (which has room): runs of up to 48 bytes (keys, indents) by a loop, longer ones by
 * `TypedArray.set`, whose fixed cost is larger than a short run's copy: the server's JSON writer's copy of short pieces
 * (src/server/json-writer.ts; this module's own fixed pieces are `AsciiRun`s).
 */
export function copyBytes(dst: Uint8Array, at: number, src: Uint8Array): void {
  const n = src.length;
  if (n <= 48) {
    for (let k = 0; k < n; k++) dst[at + k] = src[k] as number;
  } else dst.set(src, at);
}

/** A view of `out` for `putRun`'s word stores (made again when `out` is another buffer). */
let outView = new DataView(out.buffer, out.byteOffset, out.length);
let outViewOf: Uint8Array = out;

/**
 * Append `r`'s text. Its last word may store up to three bytes past the text's end: room is reserved for them, and they
 * lie past `pos`, where whatever is written next overwrites them (no output ends with a run's padding in it).
 */
function putRun(r: AsciiRun): void {
  const w = r.words;
  const nw = w.length;
  reserve(nw << 2);
  if (outViewOf !== out) {
    outView = new DataView(out.buffer, out.byteOffset, out.length);
    outViewOf = out;
  }
  const v = outView;
  for (let k = 0, p = pos; k < nw; k++, p += 4) v.setInt32(p, w[k] as number, true);
  pos += r.n;
}

/**
 * Append a safe integer's digits as `String(x)` writes them (`-0` as `0`), straight into the output: no string is
 * made for the integers that fill every output (cents, counts, prestige).
 */
function putSafeInt(x: number): void {
  let v = x < 0 ? -x : x;
  let len = 1;
  for (let t = v; t >= 10; t = Math.floor(t / 10)) len++;
  if (x < 0) len++;
  reserve(len);
  const o = out;
  let p = pos + len;
  pos = p;
  do {
    const q = Math.floor(v / 10);
    o[--p] = 0x30 + (v - q * 10);
    v = q;
  } while (v > 0);
  if (x < 0) o[--p] = 0x2d;
}

/** Append `"s"`, escaped as Python's ensure_ascii does (and escaped again when the output is). */
function putString(s: string): void {
  const n = s.length;
  reserve(n + 4);
  const o = out;
  let p = pos;
  if (escaped) o[p++] = 0x5c;
  o[p++] = 0x22;
  for (let k = 0; k < n; k++) {
    const c = s.charCodeAt(k);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
      // Rare: escape the whole string through the string path (pos is still before the opening quote).
      put(escaped ? escapeAscii(encodeString(s)) : encodeString(s));
      return;
    }
    o[p++] = c;
  }
  if (escaped) o[p++] = 0x5c;
  o[p++] = 0x22;
  pos = p;
}

function write(x: Out, level: number, mode: Mode, indent: number | null): void {
  if (x === null) {
    put('null');
    return;
  }
  switch (typeof x) {
    case 'boolean':
      put(x ? 'true' : 'false');
      return;
    case 'number':
      if (mode === Mode.Float) put(floatText(x));
      else if (Number.isSafeInteger(x)) putSafeInt(x);
      else put(intText(x));
      return;
    case 'string':
      putString(x);
      return;
  }
  if (x instanceof PyFloat) {
    put(floatText(x.value));
    return;
  }
  if (Array.isArray(x)) {
    const n = x.length;
    if (n === 0) {
      put('[]');
      return;
    }
    const chain = chainOf(x);
    if (chain !== undefined) {
      writeList(x, chain, level, indent);
      return;
    }
    if (indent === null) {
      put('[');
      write(x[0] as Out, level + 1, Mode.Plain, null);
      for (let i = 1; i < n; i++) {
        put(', ');
        write(x[i] as Out, level + 1, Mode.Plain, null);
      }
      put(']');
      return;
    }
    const p = pad(indent, level + 1);
    put('[');
    put(p);
    write(x[0] as Out, level + 1, Mode.Plain, indent);
    for (let i = 1; i < n; i++) {
      put(',');
      put(p);
      write(x[i] as Out, level + 1, Mode.Plain, indent);
    }
    put(pad(indent, level));
    put(']');
    return;
  }
  const memo = memoOf(x);
  if (memo !== null) {
    const b = memo.slab;
    if (b !== null && memo.level === level && memo.indent === indent && memo.mode === mode && memo.escaped === escaped) {
      const n = memo.end - memo.start;
      reserve(n);
      out.set(b.subarray(memo.start, memo.end), pos);
      pos += n;
      return;
    }
    const start = pos;
    writeObject(x, level, mode, indent);
    memo.level = level;
    memo.indent = indent;
    memo.mode = mode;
    memo.escaped = escaped;
    keepText(memo, start, pos);
    return;
  }
  writeObject(x, level, mode, indent);
}

function writeObject(obj: { [k: string]: Out }, level: number, mode: Mode, indent: number | null): void {
  let first = true;
  if (indent === 2) {
    // The reference's indent: each entry's separator, indent and key copied as one run of bytes.
    const slot = leadSlot(level);
    let prev: Lead | null = null;
    for (const k in obj) {
      // The lead that followed the previous entry's last time is usually this one's (no lookup by key).
      let lead: Lead | null = prev !== null ? prev.after : null;
      if (lead === null || lead.key !== k) {
        const info = keyInfo(k);
        lead = prev === null ? (info.first[slot] ??= leadRun(info, '{', level)) : (info.next[slot] ??= leadRun(info, ',', level));
        if (prev !== null) prev.after = lead;
      }
      prev = lead;
      putRun(lead);
      first = false;
      const v = obj[k] as Out;
      const m = mode === Mode.FloatMap ? Mode.Float : lead.mode;
      // The scalars that fill most entries written here, as `write` writes them: one call less per entry (~4% of the
      // JSON text's time in an episode).
      if (typeof v === 'string') putString(v);
      else if (typeof v === 'number') {
        if (m === Mode.Float) put(floatText(v));
        else if (Number.isSafeInteger(v)) putSafeInt(v);
        else put(intText(v));
      } else if (typeof v === 'boolean') put(v ? 'true' : 'false');
      else if (v === null) put('null');
      else write(v, level + 1, m, 2);
    }
    if (first) put('{}');
    else putRun((CLOSE[slot] ??= asciiRun(pad(2, level) + '}')));
    return;
  }
  const p = indent === null ? null : pad(indent, level + 1);
  for (const k in obj) {
    const info = keyInfo(k);
    if (first) {
      put('{');
      if (p !== null) put(p);
      first = false;
    } else if (p === null) put(', ');
    else {
      put(',');
      put(p);
    }
    put(escaped ? info.esc : info.text);
    write(obj[k] as Out, level + 1, mode === Mode.FloatMap ? Mode.Float : info.mode, indent);
  }
  if (first) put('{}');
  else if (indent === null) put('}');
  else {
    put(pad(indent, level));
    put('}');
  }
}

/** Whether `pyJsonDumps` is writing (the output becomes a string): a list of a chain is then kept in that string. */
let dumping = false;
/** The list texts `pyJsonDumps` wrote so far in this call: they are in the string it returns. */
const dumped: ListText[] = [];

/** Python `json.dumps(v, indent=indent)` (ensure_ascii=True); `indent` null gives the compact `", "`/`": "` form. */
export function pyJsonDumps(v: Out, indent: number | null = 2): string {
  pos = 0;
  escaped = false;
  dumping = true;
  try {
    write(v, 0, Mode.Plain, indent);
    // One flat one-byte string (latin1 of ASCII bytes is the same text).
    const text = out.toString('latin1', 0, pos);
    for (let i = 0; i < dumped.length; i++) (dumped[i] as ListText).str = text;
    return text;
  } finally {
    // After a failure the lists written have no string (`str` stays null): they are not read back. Most calls wrote no
    // list: the length is stored only when there is one (a store to an array's length is a call, not a field store).
    if (dumped.length !== 0) dumped.length = 0;
    dumping = false;
    release();
  }
}

/**
 * Where `pyJsonAppend` writes: a growable byte buffer owned by its caller (a trajectory column's text bytes), of which
 * `bytes[0, used)` is kept; a text is appended after it, in place when it fits, else `bytes` is replaced by a larger
 * copy. `string` appends any other text as UTF-8.
 */
export interface TextSink {
  bytes: Buffer;
  used: number;
  string(s: string): void;
  /**
   * Present on a sink that only appends: its bytes[0, used) stay as they are (a larger `bytes` is a copy of them) until
   * it changes `epoch` (when it forgets them, e.g. starts over at 0). A listing of a chain (`memoList`) rendered into
   * such a sink is then read back from it by the chain's next listing in the same sink and epoch, instead of being
   * copied aside.
   */
  readonly epoch?: number;
}

/** The sink `pyJsonAppend` is writing into when it has an `epoch` (an append-only sink), else null. */
let sinkNow: TextSink | null = null;
/** How many `pyJsonAppend` into such a sink failed (threw): texts of lists written before then are not read back. */
let sinkFailures = 0;

/**
 * `pyJsonDumps` appended to `sink` as bytes (its text is ASCII, so they are its UTF-8 too), rendered straight into the
 * sink's buffer: no string, and no copy out of a buffer of this module's (the trajectory exporter). With `escape`, the
 * text as the contents of a JSON string (`JSON.stringify(pyJsonDumps(v, indent)).slice(1, -1)`, rendered in the one
 * pass: for replies that carry the text in JSON). Do not render JSON from inside it.
 */
export function pyJsonAppend(v: Out, indent: number | null, sink: TextSink, escape = false): void {
  const own = out;
  out = sink.bytes;
  pos = sink.used;
  escaped = escape;
  dumping = false;
  sinkNow = typeof sink.epoch === 'number' ? sink : null;
  let done = false;
  try {
    write(v, 0, Mode.Plain, indent);
    sink.bytes = out;
    sink.used = pos;
    done = true;
  } finally {
    // A list written by a call that failed is past the sink's `used`: what the sink appends next overwrites it.
    if (!done && sinkNow !== null) sinkFailures++;
    out = own;
    pos = 0;
    escaped = false;
    sinkNow = null;
  }
}

function release(): void {
  pos = 0;
  escaped = false;
  if (out.length > KEEP_BYTES) out = Buffer.allocUnsafe(1 << 16);
}

/** Tag the floats of a plain output (by key, as `pyJsonDumps` prints them) so it compares exactly with parsed reference output. */
export function typedFromPlain(v: Out, mode: Mode = Mode.Plain): Out {
  if (typeof v === 'number') return mode === Mode.Float ? new PyFloat(v) : v;
  if (Array.isArray(v)) return v.map((e) => typedFromPlain(e, Mode.Plain));
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) {
    const o: { [k: string]: Out } = {};
    for (const k of Object.keys(v)) o[k] = typedFromPlain(v[k] as Out, mode === Mode.FloatMap ? Mode.Float : childMode(k));
    return o;
  }
  return v;
}

/** Convert tagged output to plain JSON values (floats become numbers). */
export function toPlain(v: Out): unknown {
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map(toPlain);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) o[k] = toPlain(v[k] as Out);
    return o;
  }
  return v;
}

/** Parse JSON text keeping float tokens (with `.`, `e` or `E`) as PyFloat so int/float types compare exactly. */
export function parseTyped(text: string): Out {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const value = (): Out => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o: { [k: string]: Out } = {};
      ws();
      if (text[i] === '}') {
        i++;
        return o;
      }
      for (;;) {
        ws();
        const k = value();
        if (typeof k !== 'string') throw new SyntaxError(`bad key at ${i}`);
        ws();
        if (text[i] !== ':') throw new SyntaxError(`expected : at ${i}`);
        i++;
        o[k] = value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return o;
        }
        throw new SyntaxError(`expected , or } at ${i}`);
      }
    }
    if (c === '[') {
      i++;
      const a: Out[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return a;
      }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return a;
        }
        throw new SyntaxError(`expected , or ] at ${i}`);
      }
    }
    if (c === '"') {
      const start = i;
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i)) as string;
    }
    const m = /^-?(?:\d+)(\.\d+)?([eE][+-]?\d+)?|^true|^false|^null|^NaN|^-?Infinity/.exec(text.slice(i, i + 400));
    if (!m) throw new SyntaxError(`unexpected token at ${i}`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    if (m[0] === 'NaN') return new PyFloat(NaN);
    if (m[0].endsWith('Infinity')) return new PyFloat(m[0].startsWith('-') ? -Infinity : Infinity);
    const n = Number(m[0]);
    return m[1] !== undefined || m[2] !== undefined ? new PyFloat(n) : n;
  };
  const v = value();
  ws();
  if (i !== text.length) throw new SyntaxError(`trailing data at ${i}`);
  return v;
}

/** Deep equality of tagged values: floats equal only floats of the same value, ints only ints. */
export function typedEqual(a: Out, b: Out): boolean {
  if (a instanceof PyFloat || b instanceof PyFloat) {
    return a instanceof PyFloat && b instanceof PyFloat && (a.value === b.value || (Number.isNaN(a.value) && Number.isNaN(b.value)));
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => typedEqual(x, b[i] as Out));
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return false;
    return ka.every((k) => typedEqual(a[k] as Out, b[k] as Out));
  }
  return a === b;
}
