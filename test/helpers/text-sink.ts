/**
 * A plain `TextSink` for tests: a small buffer (so appending grows it) that may start with some bytes already kept.
 */
import type { TextSink } from '../../src/sim/py/pyjson.js';

export class BufferSink implements TextSink {
  bytes: Buffer = Buffer.alloc(8);
  used = 0;
  constructor(prefix = '') {
    this.string(prefix);
  }
  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    if (this.used + b.length > this.bytes.length) {
      const next = Buffer.alloc(2 * (this.used + b.length));
      this.bytes.copy(next, 0, 0, this.used);
      this.bytes = next;
    }
    b.copy(this.bytes, this.used);
    this.used += b.length;
  }
  /** The bytes kept so far (a copy). */
  get kept(): Buffer {
    return Buffer.from(this.bytes.subarray(0, this.used));
  }
}

/**
 * An append-only `BufferSink` (`TextSink.epoch`): `restart` forgets its bytes (overwritten with `z`, so a reader of
 * stale bytes shows) and starts a new epoch.
 */
export class EpochSink extends BufferSink {
  epoch = 0;
  restart(): void {
    this.bytes.fill(0x7a);
    this.used = 0;
    this.epoch++;
  }
}
