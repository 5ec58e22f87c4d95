/**
 * A ycgym server in a child process for the reliability suite (fork() it, preferably with --expose-gc).
 * argv[2] is a JSON `ServerOptions` subset. IPC messages: the child sends `{type: "listening", endpoint,
 * publicKey, pid}` once bound; it answers `{type: "stats"}` with `{type: "stats", ...}` (memory after a full
 * GC, live sessions, server counters) and `{type: "close"}` by closing the server and exiting 0.
 */
import { startServer, type ServerOptions, type ServerStats } from '../../src/server/server.js';
import { memoryFigures } from './lib/util.js';

/** Options accepted on the command line (JSON). */
export interface ServerChildOptions {
  endpoint?: string;
  maxSessions?: number;
  maxMessageBytes?: number;
  idleTimeoutMs?: number;
  curve?: { secretKey: string };
  validateReplies?: boolean;
  batchSliceMs?: number;
  maxBatchReplyBytes?: number;
  maxBatchBytesInFlight?: number;
  maxMemoryBytes?: number;
  stallTimeoutMs?: number;
  recordDir?: string;
}

/** Messages the child sends. */
export type ServerChildMessage =
  | { type: 'listening'; endpoint: string; publicKey: string | null; pid: number }
  | ({ type: 'stats'; sessions: number; counters: ServerStats } & ReturnType<typeof memoryFigures>)
  | { type: 'error'; message: string };

function send(m: ServerChildMessage): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  const opts = JSON.parse(process.argv[2] ?? '{}') as ServerChildOptions;
  const so: ServerOptions = { endpoint: opts.endpoint ?? 'tcp://127.0.0.1:0' };
  if (opts.maxSessions !== undefined) so.maxSessions = opts.maxSessions;
  if (opts.maxMessageBytes !== undefined) so.maxMessageBytes = opts.maxMessageBytes;
  if (opts.idleTimeoutMs !== undefined) so.idleTimeoutMs = opts.idleTimeoutMs;
  if (opts.curve !== undefined) so.curve = opts.curve;
  if (opts.validateReplies !== undefined) so.validateReplies = opts.validateReplies;
  if (opts.batchSliceMs !== undefined) so.batchSliceMs = opts.batchSliceMs;
  if (opts.maxBatchReplyBytes !== undefined) so.maxBatchReplyBytes = opts.maxBatchReplyBytes;
  if (opts.maxBatchBytesInFlight !== undefined) so.maxBatchBytesInFlight = opts.maxBatchBytesInFlight;
  if (opts.maxMemoryBytes !== undefined) so.maxMemoryBytes = opts.maxMemoryBytes;
  if (opts.stallTimeoutMs !== undefined) so.stallTimeoutMs = opts.stallTimeoutMs;
  if (opts.recordDir !== undefined) so.recordDir = opts.recordDir;
  so.logger = (level, message, fields) => {
    if (level !== 'info') process.stderr.write(JSON.stringify({ level, msg: message, ...fields }) + '\n');
  };
  let server;
  try {
    server = await startServer(so);
  } catch (e) {
    send({ type: 'error', message: (e as Error).message });
    process.exit(2);
  }
  const srv = server;
  process.on('message', (m: { type?: string }) => {
    if (m.type === 'stats') {
      send({ type: 'stats', sessions: srv.sessionCount, counters: srv.stats(), ...memoryFigures() });
    } else if (m.type === 'close') {
      void srv.close().then(() => process.exit(0));
    }
  });
  // The parent going away must not leave a server behind.
  process.on('disconnect', () => {
    void srv.close().then(() => process.exit(0));
  });
  send({ type: 'listening', endpoint: srv.endpoint, publicKey: srv.publicKey, pid: process.pid });
}

void main();
