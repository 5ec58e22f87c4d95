/**
 * The pipe transport: the server's messages over a pair of inherited pipe file descriptors instead of a ZeroMQ
 * socket, for a server that is the child process of its only client (the Python `LocalServer`'s default on POSIX).
 * A lockstep round trip over two pipes costs a few system calls and no I/O threads; over ZeroMQ on loopback each
 * side adds an I/O thread and the TCP stack (see `bindings/python/bench/bench_step.py`: `pipe_echo_rtt_per_s`
 * against `echo_rtt_per_s`).
 *
 * Framing (both directions): a message is a little-endian u32 frame count `k` (1..`MAX_PIPE_FRAMES`), then `k`
 * frames, each a little-endian u32 length followed by that many bytes. The frames are those of a ZeroMQ ROUTER:
 * a request is `[routing id, payload]` (the client chooses the routing id; sessions belong to it, as over ZeroMQ),
 * a reply is `[routing id, body, ...arrays]`. Several clients of one process share the pipe, each with its own id.
 *
 * Limits: a frame at most the server's message limit, a message at most that plus `PIPE_ENVELOPE_BYTES`, and
 * `MAX_PIPE_QUEUED` messages or `MAX_PIPE_QUEUED_BYTES` parsed ahead of the server loop (then the pipe is not read
 * until the loop has taken half of them). A request whose payload (its last frame, after the routing id) is above the
 * limit is not read into memory: its bytes are skipped as they come, and the message is received in its place with a
 * one-byte stand-in for the payload (`skippedPayloadBytes` gives its length), which the server answers with
 * `message_too_large` in its turn; the stream goes on with the next message.
 * Other framing outside the limits (a frame count of 0 or above `MAX_PIPE_FRAMES`, a routing id or another frame
 * above the limit) cannot be trusted, and a byte stream cannot resynchronise: it ends the transport (the client that
 * sent it is the only one there is); the server logs it and stops serving.
 */
import { readSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { MAX_PIPE_FRAMES, MAX_PIPE_SPIN_US } from '../protocol/limits.js';

export { MAX_PIPE_FRAMES, MAX_PIPE_SPIN_US };

/** Bytes a message may hold beyond its largest frame's limit: the routing envelope's frames. */
export const PIPE_ENVELOPE_BYTES = 64 * 1024;

/** Messages parsed but not yet received by the server loop before the input is paused (backpressure to the client). */
const MAX_PIPE_QUEUED = 64;

/** Bytes of those messages before the input is paused (the server's per-client quota is 16 MiB). */
const MAX_PIPE_QUEUED_BYTES = 16 * 2 ** 20;

/** Bytes one read of the input pipe can take (a Linux pipe's default capacity: one read empties a full pipe). */
const READ_BYTES = 64 * 1024;

/** Replies waiting in the output pipe's buffer beyond which `send` fails with EAGAIN (the client is not reading). */
const MAX_PIPE_BUFFERED_BYTES = 64 * 2 ** 20;


/** Most receives that skip polling after polls that ran out. */
const MAX_SPIN_BACKOFF = 1024;

/** Raised by `send` when the output buffer is full (the server keeps the reply and offers it again, as with ZeroMQ). */
class WouldBlock extends Error {
  readonly code = 'EAGAIN';
}

type Frame = Buffer | string;

/** How the transport ended: `clean` when the client closed its end or the server closed it, not on a failure. */
export interface PipeEnd {
  reason: string;
  clean: boolean;
}

function messageBytes(m: readonly Buffer[]): number {
  let n = 0;
  for (const f of m) n += f.length;
  return n;
}

const skipped = new WeakMap<Buffer, number>();

/**
 * The length of the payload a frame stands for when it is the stand-in of one the transport skipped for being above
 * the limit (see `PipeRouter`); undefined for any other frame.
 */
export function skippedPayloadBytes(frame: Buffer): number | undefined {
  return skipped.get(frame);
}

/** A request whose payload frame is above the frame limit: its frames before the payload (copies: the routing id, and
 * any envelope) and the payload's length. */
export interface Oversize {
  head: Buffer[];
  bytes: number;
}

/**
 * Parse as many whole messages as `buf` holds. Returns them, the offset of the first unparsed byte, and how many bytes
 * from there the next message needs at least (its size once its frame headers are there), so that a caller can wait
 * for them instead of parsing again on every chunk.
 *
 * A message whose last frame (not its first: the routing id) is above `maxFrameBytes` stops the parse at that frame's
 * header: `oversize` names it, `used` is the offset after the header, and the caller skips the frame's bytes from
 * there (whole or not yet read) before it parses again. Any other frame above the limit throws.
 */
export function parseMessages(buf: Buffer, maxFrameBytes: number): { messages: Buffer[][]; used: number; need: number; oversize: Oversize | null } {
  // A message's frames together: one frame's limit plus room for a routing envelope (a request is [id, payload]).
  const maxTotal = maxFrameBytes + PIPE_ENVELOPE_BYTES;
  const messages: Buffer[][] = [];
  let at = 0;
  for (;;) {
    if (buf.length - at < 4) return { messages, used: at, need: 4, oversize: null };
    const k = buf.readUInt32LE(at);
    if (k < 1 || k > MAX_PIPE_FRAMES) throw new RangeError(`pipe message with ${k} frames (1-${MAX_PIPE_FRAMES} allowed)`);
    let p = at + 4;
    let total = 0;
    const frames: Buffer[] = [];
    for (let i = 0; i < k; i++) {
      if (buf.length - p < 4) return { messages, used: at, need: p + 4 - at, oversize: null };
      const n = buf.readUInt32LE(p);
      if (n > maxFrameBytes) {
        if (i === 0 || i < k - 1) throw new RangeError(`pipe frame of ${n} bytes (at most ${maxFrameBytes})`);
        return { messages, used: p + 4, need: 4, oversize: { head: frames.map((f) => Buffer.from(f)), bytes: n } };
      }
      total += n;
      if (total > maxTotal) throw new RangeError(`pipe message of more than ${maxTotal} bytes`);
      p += 4;
      if (buf.length - p < n) return { messages, used: at, need: p + n - at, oversize: null };
      frames.push(buf.subarray(p, p + n));
      p += n;
    }
    messages.push(frames);
    at = p;
  }
}

/** Where a message that fits is encoded (`encodeScratch`). */
const SCRATCH_BYTES = 64 * 1024;
const scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);

/**
 * Encode a message into `scratch` when it surely fits there (at most 3 UTF-8 bytes per UTF-16 code unit): its length
 * in bytes, or -1. Each string's length is what writing it returned; `Buffer.byteLength` would scan every string once
 * more before writing it (a 1.3 KB step reply: ~7,000 instructions of the ~190,000 a lockstep step costs).
 */
function encodeScratch(frames: readonly Frame[]): number {
  let bound = 4 + 4 * frames.length;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i] as Frame;
    bound += typeof f === 'string' ? 3 * f.length : f.length;
  }
  if (bound > SCRATCH_BYTES) return -1;
  scratch.writeUInt32LE(frames.length, 0);
  let p = 4;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i] as Frame;
    const n = typeof f === 'string' ? scratch.write(f, p + 4, 'utf8') : f.copy(scratch, p + 4);
    scratch.writeUInt32LE(n, p);
    p += 4 + n;
  }
  return p;
}

/** One message's bytes: the frame count, then each frame's length and bytes (strings as UTF-8). */
export function encodeMessage(frames: readonly Frame[]): Buffer {
  const m = encodeScratch(frames);
  if (m >= 0) return Buffer.from(scratch.subarray(0, m));
  const lens = new Array<number>(frames.length);
  let total = 4 + 4 * frames.length;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i] as Frame;
    const n = typeof f === 'string' ? Buffer.byteLength(f, 'utf8') : f.length;
    lens[i] = n;
    total += n;
  }
  const out = Buffer.allocUnsafe(total);
  out.writeUInt32LE(frames.length, 0);
  let p = 4;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i] as Frame;
    const n = lens[i] as number;
    out.writeUInt32LE(n, p);
    p += 4;
    if (typeof f === 'string') out.write(f, p, n, 'utf8');
    else f.copy(out, p);
    p += n;
  }
  return out;
}

/**
 * The subset of a zeromq.js `Router` the server uses, over two pipes. `receive` resolves with the next message's
 * frames; `send` writes one message (never blocks; EAGAIN when the client stopped reading).
 */
export class PipeRouter {
  readonly lastEndpoint = 'pipe';
  private readonly input: Socket;
  private readonly output: Socket;
  private readonly queue: Buffer[][] = [];
  private waiting: { resolve: (m: Buffer[]) => void; reject: (e: Error) => void } | null = null;
  /** Bytes of a message not yet whole (copies), their total, and how many the message needs. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private need = 4;
  private queuedBytes = 0;
  /** Bytes of an oversized payload still to be skipped as they arrive. */
  private skipBytes = 0;
  private paused = false;
  /** Why receives and sends fail once the transport has ended (null: still open, or closed by `close`). */
  private failure: Error | null = null;
  private isClosed = false;
  /** Resolves when the transport ends: the client closed its end, broke the framing, or `close` was called. */
  readonly ended: Promise<PipeEnd>;
  private end!: (how: PipeEnd) => void;

  /** Writes bytes to the output pipe without waiting (its descriptor is non-blocking); how many it took. */
  private writeNow: (buf: Buffer, length: number) => number;

  /** How long `receive` polls the input before it waits for the event loop (`spinInput`), in ns; 0: never. */
  private readonly spinNs: number;
  /** Receives that skip polling after a poll that ran out (doubling, up to `MAX_SPIN_BACKOFF`; 0 after a hit). */
  private spinBackoff = 0;
  private spinSkip = 0;
  /** Polls that found a whole message, polls that ran out, and receives that skipped polling (diagnostics, tests). */
  readonly spinCounts = { hits: 0, misses: 0, skipped: 0 };
  private readonly inputFd: number;
  private spinBuf: Buffer | null = null;

  /**
   * `spinUs`: after a reply, how long a `receive` that finds no message polls the input pipe (non-blocking reads) before
   * it waits for the event loop, in µs (0: never; see `spinInput`).
   */
  constructor(inputFd: number, outputFd: number, private readonly maxFrameBytes: number, spinUs = 0) {
    if (!Number.isSafeInteger(spinUs) || spinUs < 0 || spinUs > MAX_PIPE_SPIN_US) throw new RangeError(`pipe spin must be a whole number of microseconds from 0 to ${MAX_PIPE_SPIN_US}, got ${spinUs}`);
    this.inputFd = inputFd;
    this.spinNs = spinUs * 1000;
    this.writeNow = (buf, length) => writeSync(outputFd, buf, 0, length);
    this.ended = new Promise((res) => (this.end = res));
    // Reads land in one buffer of ours (`onread`): no Buffer allocated per read (Node's 64 KiB, then shrunk) and none
    // of the Readable stream's machinery ('data' events); what was read is copied out at once (messages keep their
    // frames as views of it).
    const readBuf = Buffer.allocUnsafe(READ_BYTES);
    this.input = new Socket({
      fd: inputFd,
      readable: true,
      writable: false,
      onread: {
        buffer: readBuf,
        callback: (n: number, buf: Uint8Array): boolean => {
          const chunk = Buffer.allocUnsafe(n);
          chunk.set(buf.subarray(0, n));
          this.onData(chunk);
          return true; // (false would pause the input; onData pauses it itself when the loop falls behind)
        },
      },
    });
    this.output = new Socket({ fd: outputFd, readable: false, writable: true });
    this.input.on('end', () => this.fail('the client closed the pipe', true));
    this.input.on('error', (e) => this.fail(`pipe read failed: ${e.message}`));
    this.output.on('error', (e) => this.fail(`pipe write failed: ${e.message}`));
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** A message is there to be received at once. */
  get readable(): boolean {
    return this.queue.length > 0;
  }

  private onData(chunk: Buffer): void {
    if (this.isClosed) return;
    if (this.skipBytes > 0) {
      const n = Math.min(this.skipBytes, chunk.length);
      this.skipBytes -= n;
      if (n === chunk.length) return;
      chunk = chunk.subarray(n);
    }
    if (this.pending.length > 0) {
      // The rest of a message: wait until it is all there before parsing again (one copy of a large request).
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < this.need) return;
    }
    let buf = this.pending.length === 0 ? chunk : Buffer.concat(this.pending, this.pendingBytes);
    for (;;) {
      let parsed: ReturnType<typeof parseMessages>;
      try {
        parsed = parseMessages(buf, this.maxFrameBytes);
      } catch (e) {
        this.fail(`malformed pipe message: ${(e as Error).message}`);
        return;
      }
      for (const m of parsed.messages) this.deliver(m);
      if (parsed.oversize === null) {
        // A partial message is kept as a copy: the chunk's memory belongs to the stream.
        this.pending = parsed.used === buf.length ? [] : [Buffer.from(buf.subarray(parsed.used))];
        this.pendingBytes = buf.length - parsed.used;
        this.need = parsed.need;
        break;
      }
      // A payload above the limit: received as its frames before it and a one-byte stand-in, in its place among the
      // messages; its bytes are dropped, here and as they come.
      const stand = Buffer.alloc(1); // not empty: an empty frame is an envelope's delimiter
      skipped.set(stand, parsed.oversize.bytes);
      this.deliver([...parsed.oversize.head, stand]);
      const here = Math.min(parsed.oversize.bytes, buf.length - parsed.used);
      this.skipBytes = parsed.oversize.bytes - here;
      buf = buf.subarray(parsed.used + here);
      if (buf.length === 0) {
        this.pending = [];
        this.pendingBytes = 0;
        this.need = 4;
        break;
      }
    }
    if ((this.queue.length >= MAX_PIPE_QUEUED || this.queuedBytes >= MAX_PIPE_QUEUED_BYTES) && !this.paused) {
      this.paused = true;
      this.input.pause();
    }
  }

  /** Hand a parsed message to the waiting receive, else queue it. */
  private deliver(m: Buffer[]): void {
    if (this.waiting !== null) {
      const w = this.waiting;
      this.waiting = null;
      w.resolve(m);
    } else {
      this.queue.push(m);
      this.queuedBytes += messageBytes(m);
    }
  }

  /**
   * Read the input pipe without waiting (each read that finds nothing fails with EAGAIN) until a message is whole or
   * the budget has passed. A lockstep client sends its next request within tens of microseconds of a reply; a server
   * asleep in the event loop is woken by that write, which costs the writer and the server the kernel's wake-up (over
   * two pipes on a VM, about as much as the rest of the round trip). A poll that runs out (a client that thinks longer,
   * or that shares this CPU: Node cannot yield it) makes the next receives skip polling, twice as many after each miss.
   */
  private spinInput(): void {
    if (this.spinSkip > 0) {
      this.spinSkip--;
      this.spinCounts.skipped++;
      return;
    }
    const buf = (this.spinBuf ??= Buffer.allocUnsafe(READ_BYTES));
    const end = process.hrtime.bigint() + BigInt(this.spinNs);
    for (;;) {
      let n: number;
      try {
        n = readSync(this.inputFd, buf, 0, READ_BYTES, null);
      } catch (e) {
        // Any other failure (and the end of file, below) is the stream's to report: it reads the same descriptor.
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return;
        if (process.hrtime.bigint() >= end) break;
        continue;
      }
      if (n === 0) return;
      const chunk = Buffer.allocUnsafe(n);
      chunk.set(buf.subarray(0, n));
      this.onData(chunk);
      if (this.queue.length > 0 || this.isClosed) {
        this.spinCounts.hits++;
        this.spinBackoff = 0;
        return;
      }
    }
    this.spinCounts.misses++;
    this.spinBackoff = Math.min(this.spinBackoff * 2 || 1, MAX_SPIN_BACKOFF);
    this.spinSkip = this.spinBackoff;
  }

  private fail(why: string, clean = false): void {
    if (this.isClosed) return;
    this.failure = new Error(why);
    this.close(clean);
  }

  receive(): Promise<Buffer[]> {
    if (this.queue.length === 0 && this.spinNs > 0 && this.waiting === null && !this.isClosed) this.spinInput();
    const m = this.queue.shift();
    if (m !== undefined) {
      this.queuedBytes -= messageBytes(m);
      if (this.paused && this.queue.length < MAX_PIPE_QUEUED / 2 && this.queuedBytes < MAX_PIPE_QUEUED_BYTES / 2) {
        this.paused = false;
        this.input.resume();
      }
      return Promise.resolve(m);
    }
    if (this.isClosed) return Promise.reject(this.failure ?? new Error('pipe closed'));
    if (this.waiting !== null) return Promise.reject(new Error('a receive is already waiting'));
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  send(frames: readonly Frame[]): Promise<void> {
    try {
      this.sendNow(frames);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    return Promise.resolve();
  }

  /** `send` without a promise: returns once the message is written or buffered; throws what `send` rejects with. */
  sendNow(frames: readonly Frame[]): void {
    if (this.isClosed) throw this.failure ?? new Error('pipe closed');
    const queued = this.output.writableLength;
    if (queued > MAX_PIPE_BUFFERED_BYTES) throw new WouldBlock('the client is not reading its replies');
    if (queued === 0) {
      // Nothing waits in the stream: write the message from the scratch buffer at once, without the stream's
      // machinery or a Buffer of its own; what the pipe does not take now goes to the stream (a copy), as before.
      const n = encodeScratch(frames);
      if (n >= 0) {
        this.writeDirect(scratch, n);
        return;
      }
    }
    this.output.write(encodeMessage(frames));
  }

  /** Write `buf[0, length)` to the output pipe now; the rest (a full pipe) is queued on the stream. */
  private writeDirect(buf: Buffer, length: number): void {
    let done = 0;
    try {
      done = this.writeNow(buf, length);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN') {
        // As the stream reports a failed write: an error event, after this call (the message counts as handed over).
        const why = `pipe write failed: ${code !== undefined ? `write ${code}` : (e as Error).message}`;
        process.nextTick(() => this.fail(why));
        return;
      }
    }
    if (done < length) this.output.write(Buffer.from(buf.subarray(done, length)));
  }

  unbindSync(): void {
    // nothing bound
  }

  close(clean = true): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.input.destroy();
    this.output.end();
    const w = this.waiting;
    this.waiting = null;
    w?.reject(this.failure ?? new Error('pipe closed'));
    this.end({ reason: this.failure?.message ?? 'closed', clean });
  }
}
