/**
 * The encoder of binary `step_batch` replies (layout: src/protocol/binary.ts, docs/protocol.md "Binary step_batch").
 * Rows are written into preallocated typed arrays as entries complete; the arrays' bytes become the reply's frames
 * as they are (no copy), after the JSON header. The header's `text` list is written as JSON bytes as entries complete
 * (a step's `OutputText` rendered escaped straight into them, never built as a string).
 */
import { BINARY_COLUMN_ROW_BYTES, BINARY_COLUMNS, TERMINAL_REASONS, type BinaryArrayDesc, type BinaryBatchError, type BinaryBatchResult, type BinaryColumn } from '../protocol/binary.js';
import type { ErrorBody, RecordingStopped } from '../protocol/ops.js';
import { WireValue, type JsonSink, type WireStepResultWithoutStatus } from '../env/env.js';
import { JsonWriter } from './json-writer.js';

/** The frame shape of a Discrete session (`obs_size`, `n_actions`), or null for a text-mode session. */
export type FrameShape = { obs: number; actions: number } | null;

/** Whether typed arrays are little-endian here (the wire's byte order); the server refuses binary otherwise. */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

const REASON_CODE: ReadonlyMap<string, number> = new Map(TERMINAL_REASONS.map((r, i) => [r, i + 1]));

/**
 * Bytes of a binary reply of `n` entries with frame `shape` before any entry ran: its arrays (what `BinaryBatch`
 * allocates) and a bound of its header's fixed part (the array list, the codes, an empty string per entry).
 */
export function binaryArrayBytes(n: number, shape: FrameShape): number {
  return n * (BINARY_COLUMN_ROW_BYTES + (shape === null ? 0 : 4 * shape.obs + shape.actions)) + 1024 + 16 * n;
}

/** UTF-8 bytes of `JSON.stringify(s)` for a string `s`, as the reply's header will hold it. */
function jsonBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s), 'utf8');
}

/**
 * A bound of {@link jsonBytes} without encoding: every UTF-16 unit becomes at most 6 bytes of JSON for each byte
 * `Buffer.byteLength` counts for it (a control character: 1 byte, `\u0001`; a lone surrogate: 3 bytes, `\ud800`;
 * a quote or backslash: 1 byte, 2), plus the two quotes.
 */
function jsonBytesBound(s: string): number {
  return 6 * Buffer.byteLength(s, 'utf8') + 2;
}

/**
 * JSON text already written (a list of strings): `writeJson` copies its bytes, `toJSON` gives the value they encode.
 */
export class JsonBytes extends WireValue {
  constructor(readonly bytes: Buffer) {
    super();
  }

  toJSON(): unknown {
    return JSON.parse(this.bytes.toString('utf8')) as unknown;
  }

  writeJson(out: JsonSink): void {
    out.raw(this.bytes);
  }
}

/** Bytes of the `text` list's writer to start with, per entry of a text-mode batch ("company status": ~1.4 KB) and at most. */
const TEXT_BYTES_PER_ENTRY = 2048;
const TEXT_START_BYTES_MAX = 1 << 20;

/**
 * A binary `step_batch` reply being filled, row by row. Its output texts are written as JSON as they come, so they count
 * against the reply cap at their exact size. Its other strings count by a bound ({@link jsonBytesBound}: no encoding on
 * the hot path) until that bound could reach the cap; `countExactly()` then counts every string at its exact JSON size,
 * as do later entries (a string encoded twice, only in batches that near their cap).
 */
export class BinaryBatch {
  /** The per-entry columns, by name (their order and dtypes: `BINARY_COLUMNS`). */
  private readonly cols: Record<BinaryColumn, Float64Array | Uint8Array>;
  private readonly obs: Float32Array | null;
  private readonly mask: Uint8Array | null;
  private readonly errors: BinaryBatchError[] = [];
  /**
   * The header's `text` list as JSON, written in entry order: `[` and the texts of entries `[0, textNext)`, each after
   * its separator (an entry with none, failed or skipped, has `""`).
   */
  private readonly texts: JsonWriter;
  private textNext = 0;
  /** Exact JSON bytes of the non-empty texts written. */
  private textBytes = 0;
  private readonly command: (string | null)[];
  private readonly actionText: (string | null)[];
  private admissible: (string[] | null)[] | null = null;
  private stops: { index: number; recording: RecordingStopped }[] | null = null;
  /** The arrays and a bound of the header's fixed part (`binaryArrayBytes`) plus the errors' exact JSON bytes. */
  private fixedBytes: number;
  /** Strings are counted at their exact JSON size (else by their bound). */
  exact = false;
  /**
   * An upper bound of the reply's bytes so far: `fixedBytes` and every string added (exactly once `exact`, else its
   * bound; `binaryArrayBytes` counts each entry's placeholders).
   */
  bytes: number;

  constructor(
    readonly n: number,
    readonly shape: FrameShape,
  ) {
    this.cols = Object.fromEntries(BINARY_COLUMNS.map((c) => [c.name, c.dtype === '<f8' ? new Float64Array(n) : new Uint8Array(n)])) as Record<BinaryColumn, Float64Array | Uint8Array>;
    this.obs = shape === null ? null : new Float32Array(n * shape.obs);
    this.mask = shape === null ? null : new Uint8Array(n * shape.actions);
    this.texts = new JsonWriter(shape === null ? Math.min(n * TEXT_BYTES_PER_ENTRY, TEXT_START_BYTES_MAX) + 64 : 8 * n + 64);
    this.texts.byte(0x5b); // [
    this.command = new Array<string | null>(n).fill(null);
    this.actionText = new Array<string | null>(n).fill(null);
    this.fixedBytes = binaryArrayBytes(n, shape);
    this.bytes = this.fixedBytes;
  }

  /** A string's count: exact or its bound. */
  private count(s: string): number {
    return this.exact ? jsonBytes(s) : jsonBytesBound(s);
  }

  /**
   * Write entry `i`'s result (its output text, an `OutputText`, is written now: before its session steps again);
   * returns the bytes it added to the reply (for the reply cap). Throws when the result does not fit the batch's frame
   * shape (a bug: the shape was checked before the step) or its text's writer throws; its rows then stay zero.
   */
  put(i: number, r: WireStepResultWithoutStatus): number {
    const o = r.observation;
    const info = r.info;
    const c = this.cols;
    const d = o.discrete;
    if (this.shape !== null) {
      if (d === undefined || d.obs.length !== this.shape.obs || d.mask.length !== this.shape.actions) {
        throw new Error(`the Discrete frame does not have the batch's shape (${this.shape.obs} features, ${this.shape.actions} actions)`);
      }
    } else if (d !== undefined) {
      throw new Error('a Discrete frame in a text-mode batch');
    }
    // The text first: when its writer throws, nothing of the entry is written.
    let added = this.putText(i, o.text);
    c.reward[i] = r.reward;
    c.terminated[i] = r.terminated ? 1 : 0;
    c.truncated[i] = r.truncated ? 1 : 0;
    c.ok[i] = o.ok ? 1 : 0;
    c.exit_code[i] = o.exit_code;
    c.reward_cents[i] = info.reward_cents;
    c.step[i] = info.step;
    c.funds_cents[i] = info.funds_cents;
    c.terminal_reason[i] = info.terminal_reason === null ? 0 : (REASON_CODE.get(info.terminal_reason) ?? 255);
    if (this.shape !== null && d !== undefined) {
      (this.obs as Float32Array).set(d.obs, i * this.shape.obs);
      const m = this.mask as Uint8Array;
      const base = i * this.shape.actions;
      for (let k = 0; k < d.mask.length; k++) m[base + k] = d.mask[k] ? 1 : 0;
    }
    this.command[i] = o.command;
    if (o.command !== null) added += this.count(o.command);
    if (info.action_text !== undefined) {
      this.actionText[i] = info.action_text;
      added += this.count(info.action_text);
    }
    if (info.admissible_commands !== undefined) {
      this.admissible ??= new Array<string[] | null>(this.n).fill(null);
      this.admissible[i] = info.admissible_commands;
      added += this.countList(info.admissible_commands);
    }
    this.bytes += added;
    return added;
  }

  /**
   * Write entry `i`'s text into the `text` list (the entries before it that have none get `""`); returns its exact JSON
   * bytes, 0 for an empty text (its `""` is counted in the fixed part). Entries come in order: one before the last
   * written is a bug. When the text's writer throws, nothing of it stays written.
   */
  private putText(i: number, text: string | WireValue): number {
    if (i < this.textNext) throw new Error(`entry ${i}'s text comes after entry ${this.textNext - 1}'s`);
    this.textsUpTo(i);
    const w = this.texts;
    const at = w.used;
    if (i !== 0) w.byte(0x2c); // ,
    const start = w.used;
    try {
      if (typeof text === 'string') w.jsonString(text);
      else text.writeJson(w);
    } catch (e) {
      w.used = at;
      throw e;
    }
    this.textNext = i + 1;
    const bytes = w.used - start;
    if (bytes === 2) return 0;
    this.textBytes += bytes;
    return bytes;
  }

  /** `""` for every entry before `i` whose text is not written. */
  private textsUpTo(i: number): void {
    const w = this.texts;
    for (; this.textNext < i; this.textNext++) w.ascii(this.textNext === 0 ? '""' : ',""');
  }

  /** A list of strings' count, its brackets and separators (and its own separator in the header's list) included. */
  private countList(xs: readonly string[]): number {
    let b = xs.length + 2;
    for (const x of xs) b += this.count(x);
    return b;
  }

  /** Mark entry `i` failed (its rows stay zero). */
  fail(i: number, error: ErrorBody): void {
    const e = { index: i, error };
    this.errors.push(e);
    const b = Buffer.byteLength(JSON.stringify(e), 'utf8') + 1;
    this.fixedBytes += b;
    this.bytes += b;
  }

  /** Entry `i`'s session's recording was stopped (`BinaryBatchResult.recording_stopped`). */
  recordingStopped(i: number, recording: RecordingStopped): void {
    const e = { index: i, recording };
    (this.stops ??= []).push(e);
    const b = Buffer.byteLength(JSON.stringify(e), 'utf8') + 1;
    this.fixedBytes += b;
    this.bytes += b;
  }

  /** Count every string added so far, and every later one, at its exact JSON size; returns the new `bytes`. */
  countExactly(): number {
    if (this.exact) return this.bytes;
    this.exact = true;
    let b = this.fixedBytes + this.textBytes;
    for (let i = 0; i < this.n; i++) {
      const cmd = this.command[i];
      if (cmd !== null && cmd !== undefined) b += jsonBytes(cmd);
      const a = this.actionText[i];
      if (a !== null && a !== undefined) b += jsonBytes(a);
      const adm = this.admissible?.[i];
      if (adm !== null && adm !== undefined) b += this.countList(adm);
    }
    this.bytes = b;
    return b;
  }

  /**
   * The header's result and the array frames (views of the typed arrays' bytes, no copy). Its `text` is the list's JSON
   * (`JsonBytes`: a `JsonWriter` copies it; `JSON.stringify` writes the list it encodes).
   */
  finish(): { result: Omit<BinaryBatchResult, 'text'> & { text: JsonBytes }; frames: Buffer[] } {
    const n = this.n;
    const arrays: BinaryArrayDesc[] = [];
    const frames: Buffer[] = [];
    const add = (name: string, dtype: BinaryArrayDesc['dtype'], a: Float64Array | Float32Array | Uint8Array, width: number | null): void => {
      arrays.push({ name, dtype, shape: width === null ? [n] : [n, width] });
      frames.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    };
    for (const c of BINARY_COLUMNS) add(c.name, c.dtype, this.cols[c.name], null);
    if (this.shape !== null) {
      add('obs', '<f4', this.obs as Float32Array, this.shape.obs);
      add('mask', '|u1', this.mask as Uint8Array, this.shape.actions);
    }
    this.textsUpTo(n);
    this.texts.byte(0x5d); // ]
    const result = {
      encoding: 'binary' as const,
      n,
      arrays,
      errors: this.errors,
      text: new JsonBytes(this.texts.written()),
      command: this.command,
      action_text: this.actionText,
      ...(this.admissible !== null ? { admissible_commands: this.admissible } : {}),
      terminal_reasons: [...TERMINAL_REASONS],
      ...(this.stops !== null ? { recording_stopped: this.stops } : {}),
    };
    return { result, frames };
  }
}
