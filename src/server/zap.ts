/**
 * The CURVE client allow-list: a ZAP handler (ZeroMQ RFC 27) that admits a CURVE client only when its public key is
 * listed. libzmq asks the handler bound at `inproc://zeromq.zap.01` of the socket's context about every CURVE
 * handshake; a refused client completes no handshake, so it can send nothing. Each allow-listing server gets a
 * context of its own, so servers with different lists can live in one process.
 */
import { readFileSync } from 'node:fs';
import type { Context, Reply } from 'zeromq';
import { SecurityError, z85Decode, z85Encode } from './security.js';

const ZAP_ENDPOINT = 'inproc://zeromq.zap.01';

/**
 * Parse an allow-list file: one Z85 public key (40 characters) per line, optionally followed by whitespace and a
 * note; blank lines and lines starting with `#` that do not start with a key are ignored.
 * Throws `SecurityError` naming the line of a malformed key, or when the list is empty.
 */
export function parseAllowList(text: string, source = 'allow-list'): string[] {
  const keys: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    // Z85 has '#' among its characters, though never first (a 32-bit chunk's first digit is at most '%'): the first
    // word is a key when it is 40 valid Z85 characters; otherwise a line starting with '#' is a comment.
    const trimmed = raw.trim();
    if (trimmed === '') return;
    const word = trimmed.split(/\s+/)[0] as string;
    let problem: string | null = null;
    if (word.length !== 40) problem = `a CURVE public key is 40 Z85 characters (got ${word.length})`;
    else {
      try {
        z85Decode(word);
      } catch (e) {
        problem = (e as Error).message;
      }
    }
    if (problem === null) keys.push(word);
    else if (!trimmed.startsWith('#')) throw new SecurityError(`${source}:${i + 1}: ${problem}`);
  });
  if (keys.length === 0) throw new SecurityError(`${source}: no client keys (an empty allow-list would admit nobody)`);
  return keys;
}

/** Read and parse an allow-list file (see `parseAllowList`). */
export function readAllowList(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SecurityError(`cannot read the CURVE allow-list ${path}: ${(e as Error).message}`);
  }
  return parseAllowList(text, path);
}

/** Counters of the handler. */
export interface ZapStats {
  allowed: number;
  denied: number;
}

/** A running ZAP handler; `context` is the one the server's socket must use. */
export class ZapHandler {
  readonly stats: ZapStats = { allowed: 0, denied: 0 };
  private readonly allowed: ReadonlySet<string>;
  private readonly done: Promise<void>;

  private constructor(
    readonly context: Context,
    private readonly socket: Reply,
    keys: readonly string[],
  ) {
    this.allowed = new Set(keys);
    this.done = this.serve();
  }

  /** Bind a handler admitting the CURVE clients whose Z85 public keys are in `keys`. */
  static async start(keys: readonly string[]): Promise<ZapHandler> {
    // Imported here: the allow-list parser and a pipe server need no ZeroMQ.
    const zmq = await import('zeromq');
    const context = new zmq.Context();
    const socket = new zmq.Reply({ context, linger: 0 });
    await socket.bind(ZAP_ENDPOINT);
    return new ZapHandler(context, socket, keys);
  }

  /** Decide one request: [version, request id, domain, address, identity, mechanism, credentials...]. */
  private decide(frames: Buffer[]): Buffer[] {
    const [version, requestId, , , , mechanism, key] = frames;
    const v = version ?? Buffer.from('1.0');
    const rid = requestId ?? Buffer.alloc(0);
    if (v.toString() !== '1.0') return [v, rid, Buffer.from('500'), Buffer.from('unsupported ZAP version'), Buffer.alloc(0), Buffer.alloc(0)];
    const client = mechanism?.toString() === 'CURVE' && key !== undefined && key.length === 32 ? z85Encode(key) : null;
    if (client !== null && this.allowed.has(client)) {
      this.stats.allowed++;
      return [v, rid, Buffer.from('200'), Buffer.from('OK'), Buffer.from(client), Buffer.alloc(0)];
    }
    this.stats.denied++;
    return [v, rid, Buffer.from('400'), Buffer.from('client key not allowed'), Buffer.alloc(0), Buffer.alloc(0)];
  }

  private async serve(): Promise<void> {
    try {
      for await (const frames of this.socket) await this.socket.send(this.decide(frames));
    } catch {
      // closed
    }
  }

  /** Stop answering (after the server's socket is closed). */
  async close(): Promise<void> {
    this.socket.close();
    await this.done;
  }
}
