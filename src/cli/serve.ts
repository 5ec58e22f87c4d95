/**
 * `ycgym serve` (the protocol server) and `ycgym keygen` (a CURVE key pair). Once bound, `serve` prints exactly
 * one line to stdout, `{"event":"listening","endpoint":...,"pid":...}`, so a parent process can wait for it;
 * logs go to stderr as JSON lines. SIGINT/SIGTERM (and, with `--exit-on-stdin-eof`, the end of stdin: the parent
 * died or let go) close the socket and exit 0. With `--pipe-fds IN,OUT` it serves its parent over two inherited pipes
 * (src/server/pipe.ts) and exits when IN is closed.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MAX_RECORDINGS_PER_CLIENT,
  DEFAULT_MAX_UNREAD_REPLY_BYTES,
  DEFAULT_MAX_UNREAD_TOTAL_BYTES,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_MAX_SESSIONS_PER_CLIENT,
  DEFAULT_RECORD_CLIENT_BYTES,
  DEFAULT_RECORD_MAX_BYTES,
} from '../protocol/limits.js';
import { intOption, secondsIn } from './args.js';
import { MAX_PIPE_SPIN_US } from '../server/pipe.js';
import { ARROW_COMPRESSIONS, type ArrowCompression } from '../export/compression.js';
import type { Logger, Server } from '../server/server.js';


interface ServeFlags {
  recordDir?: string;
  recordCompression: ArrowCompression;
  recordMaxMib: number;
  recordClientMib: number;
  recordMaxPerClient: number;
  endpoint: string;
  maxSessions: number;
  maxSessionsPerClient: number;
  maxMessageBytes: number;
  idleTimeout: number;
  maxMemory?: number;
  maxUnreadMib: number;
  maxUnreadTotalMib: number;
  maxConnections: number;
  curveSecretKey?: string;
  curvePublicKey?: string;
  curveAllow?: string;
  quiet?: boolean;
  exitOnStdinEof?: boolean;
  pipeFds?: { input: number; output: number };
  pipeSpinUs?: number;
}

/** `--pipe-fds IN,OUT`: two open file descriptors (the request pipe's read end, the reply pipe's write end). */
function pipeFds(value: string): { input: number; output: number } {
  const m = /^(\d{1,9}),(\d{1,9})$/.exec(value);
  if (m === null) throw new InvalidArgumentError('expected two file descriptors, IN,OUT (e.g. 3,4)');
  const [input, output] = [Number(m[1]), Number(m[2])];
  if (input === output) throw new InvalidArgumentError('the input and output descriptors must differ');
  return { input, output };
}

const stderrLogger =
  (quiet: boolean): Logger =>
  (level, message, fields) => {
    if (quiet && level === 'info') return;
    process.stderr.write(JSON.stringify({ level, msg: message, ...fields }) + '\n');
  };

function die(code: number, msg: string): never {
  process.stderr.write(`ycgym: ${msg}\n`);
  process.exit(code);
}

async function serve(o: ServeFlags): Promise<void> {
  if (o.curvePublicKey !== undefined && o.curveSecretKey === undefined) die(2, 'serve: --curve-public-key needs --curve-secret-key');
  if (o.curveAllow !== undefined && o.curveSecretKey === undefined) die(2, 'serve: --curve-allow needs --curve-secret-key');
  if (o.pipeSpinUs !== undefined && o.pipeFds === undefined) die(2, 'serve: --pipe-spin-us applies to --pipe-fds');
  // Loaded here, not with the CLI: the other commands start without ZeroMQ and the protocol's schema.
  const [{ startServer }, { SecurityError }, { readAllowList }] = await Promise.all([import('../server/server.js'), import('../server/security.js'), import('../server/zap.js')]);
  let server: Server;
  try {
    server = await startServer({
      ...(o.pipeFds !== undefined ? { pipe: { ...o.pipeFds, spinUs: o.pipeSpinUs ?? 0 } } : { endpoint: o.endpoint }),
      maxSessions: o.maxSessions,
      maxSessionsPerClient: o.maxSessionsPerClient,
      ...(o.curveAllow !== undefined ? { curveAllow: readAllowList(o.curveAllow) } : {}),
      maxMessageBytes: o.maxMessageBytes,
      idleTimeoutMs: Math.round(o.idleTimeout * 1000),
      ...(o.maxMemory !== undefined ? { maxMemoryBytes: o.maxMemory * 2 ** 20 } : {}),
      maxUnreadReplyBytes: o.maxUnreadMib * 2 ** 20,
      maxUnreadTotalBytes: o.maxUnreadTotalMib * 2 ** 20,
      maxConnections: o.maxConnections,
      ...(o.recordDir !== undefined
        ? {
            recordDir: o.recordDir,
            recordCompression: o.recordCompression,
            recordMaxBytes: o.recordMaxMib * 2 ** 20,
            recordClientBytes: o.recordClientMib * 2 ** 20,
            recordMaxPerClient: o.recordMaxPerClient,
          }
        : {}),
      ...(o.curveSecretKey !== undefined ? { curve: { secretKey: o.curveSecretKey, ...(o.curvePublicKey !== undefined ? { publicKey: o.curvePublicKey } : {}) } } : {}),
      logger: stderrLogger(o.quiet === true),
    });
  } catch (e) {
    die(e instanceof SecurityError || e instanceof RangeError ? 2 : 1, `serve: ${(e as Error).message}`);
  }
  // A parent that stopped reading our stdout must not crash the server.
  process.stdout.on('error', () => undefined);
  process.stdout.write(JSON.stringify({ event: 'listening', endpoint: server.endpoint, pid: process.pid }) + '\n');
  let stopping = false;
  const stop = (): void => {
    if (stopping) process.exit(0); // a second signal: do not wait
    stopping = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // The pipe transport stops serving when the parent closes its end (or breaks the framing): exit then.
  void server.stopped.then(stop, stop);
  if (o.exitOnStdinEof === true) {
    // The parent holds the write end of our stdin: when it exits (even SIGKILLed) the pipe reaches EOF.
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }
}

/** Add `serve` and `keygen` to the `ycgym` command. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve environments over ZeroMQ (protocol v1, docs/protocol.md); prints one "listening" JSON line when bound')
    .option('--endpoint <url>', 'bind endpoint (tcp://127.0.0.1:0 picks a free port; ipc://PATH also works)', 'tcp://127.0.0.1:5555')
    .option('--max-sessions <n>', 'maximum live sessions (1-1000000)', intOption(1, 1_000_000, '--max-sessions'), DEFAULT_MAX_SESSIONS)
    .option('--max-sessions-per-client <n>', 'maximum live sessions of one client connection (1-1000000; at most --max-sessions)', intOption(1, 1_000_000, '--max-sessions-per-client'), DEFAULT_MAX_SESSIONS_PER_CLIENT)
    .option('--max-message-bytes <n>', 'maximum request payload in bytes (1 to 1 GiB)', intOption(1, 2 ** 30, '--max-message-bytes'), DEFAULT_MAX_MESSAGE_BYTES)
    .option('--idle-timeout <seconds>', 'close sessions idle this long (0: never; at most 10 years)', secondsIn(315_360_000), DEFAULT_IDLE_TIMEOUT_MS / 1000)
    .option('--max-memory <MiB>', 'memory budget: above this resident size, new sessions and step_batch are refused with "capacity" (1-16777216 MiB; default: none, only the heap guard)', intOption(1, 2 ** 24, '--max-memory'))
    .option(
      '--max-unread-mib <MiB>',
      "budget of one client connection's unread replies (1-16777216 MiB): while the large replies ZeroMQ may still hold for it (its last 17) reach it, its requests are refused with \"capacity\", unhandled, so a client that sends without reading holds at most this and a few more replies in the server (one admitted just below it, one in its outbox, one ZeroMQ may hold beyond its count). Not used with --pipe-fds (its output buffer is bounded itself)",
      intOption(1, 2 ** 24, '--max-unread-mib'),
      DEFAULT_MAX_UNREAD_REPLY_BYTES / 2 ** 20,
    )
    .option(
      '--max-unread-total-mib <MiB>',
      'budget of the unread replies of every client connection together (1-16777216 MiB; a process may open many connections, each with its --max-unread-mib): from 3/4 of it the requests of the connections holding the most (at least the average) are refused with "capacity", unhandled, at it those of every connection holding some, and beyond it and its headroom (a quarter of it: for connections holding none, such as a lockstep client with small replies) every connection\'s. Not used with --pipe-fds',
      intOption(1, 2 ** 24, '--max-unread-total-mib'),
      DEFAULT_MAX_UNREAD_TOTAL_BYTES / 2 ** 20,
    )
    .option(
      '--max-connections <n>',
      'client connections served at once (1-1048576): ZeroMQ may hold the last 17 replies of each (those under 64 KiB, ~1.1 MiB, counted in no unread budget), so while more are open the requests of a connection not served before are refused with "capacity", unhandled, and those served before go on. Not used with --pipe-fds',
      intOption(1, 2 ** 20, '--max-connections'),
      DEFAULT_MAX_CONNECTIONS,
    )
    .addOption(new Option('--curve-secret-key <z85>', 'CURVE secret key: required to bind a non-loopback address').env('YCGYM_CURVE_SECRET_KEY'))
    .addOption(new Option('--curve-public-key <z85>', 'CURVE public key (checked against the secret key; derived when omitted)').env('YCGYM_CURVE_PUBLIC_KEY'))
    .addOption(new Option('--curve-allow <file>', 'CURVE client allow-list: a file of client public keys (Z85, one per line; lines starting with # are comments); other clients complete no handshake').env('YCGYM_CURVE_ALLOW'))
    .option('--record-dir <dir>', 'allow per-session Arrow recording (reset option record: {path: "name.arrow"}) into this directory')
    .option(
      '--record-max-mib <MiB>',
      'with --record-dir: byte budget of every recording this server starts there, together (1-1073741824 MiB). A recording whose next rows it cannot hold is completed with the rows written so far and its sessions go on unrecorded (recording_stopped in their next result); a reset asking to record once it cannot hold another recording is refused (record_limit)',
      intOption(1, 2 ** 30, '--record-max-mib'),
      DEFAULT_RECORD_MAX_BYTES / 2 ** 20,
    )
    .option(
      '--record-client-mib <MiB>',
      "with --record-dir: the share of that budget one client connection's recordings may take together (1-1073741824 MiB; at most --record-max-mib), so that one client cannot take the others' room",
      intOption(1, 2 ** 30, '--record-client-mib'),
      DEFAULT_RECORD_CLIENT_BYTES / 2 ** 20,
    )
    .option(
      '--record-max-per-client <n>',
      'with --record-dir: recordings of one client connection in progress at once (1-1000000); beyond it a new one is refused (record_limit)',
      intOption(1, 1_000_000, '--record-max-per-client'),
      DEFAULT_MAX_RECORDINGS_PER_CLIENT,
    )
    .addOption(new Option('--record-compression <codec>', 'body compression of those recordings: zstd (compact; compressed on the server thread as rows are written) or none (plain Arrow IPC)').choices([...ARROW_COMPRESSIONS]).default('zstd'))
    .option('--pipe-fds <in,out>', 'serve over two inherited pipes instead of --endpoint: requests are read from IN, replies written to OUT (framing: docs/protocol.md, "Pipe transport"); for a parent process that is the only client. The server exits when IN is closed', pipeFds)
    .option('--pipe-spin-us <n>', `with --pipe-fds: after a reply, poll the request pipe this many microseconds for the next request before waiting in the event loop (0-${MAX_PIPE_SPIN_US}; default 0: never). Saves both processes the kernel's wake-up when the client answers at once; polls that run out are skipped for a while`, intOption(0, MAX_PIPE_SPIN_US, '--pipe-spin-us'))
    .option('--quiet', 'log only warnings and errors to stderr')
    .option('--exit-on-stdin-eof', 'stop when stdin reaches end of file (a parent process keeps it open while it lives)')
    .action((o: ServeFlags) => serve(o));

  program
    .command('keygen')
    .description('print a new CURVE key pair as JSON ({"public_key","secret_key"}, Z85)')
    .action(async () => {
      const { generateCurveKeyPair } = await import('../protocol/curve.js');
      const k = generateCurveKeyPair();
      process.stdout.write(JSON.stringify({ public_key: k.publicKey, secret_key: k.secretKey }) + '\n');
    });
}
