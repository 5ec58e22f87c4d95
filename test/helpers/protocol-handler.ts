/** An in-process protocol handler (no sockets) for tests that send requests as values and read the replies. */
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';

/** A reply as these tests read it (a loose view of the protocol's `Reply`). */
export type LooseReply = { ok: true; result: Record<string, unknown> } | { ok: false; error: { code: string; message: string } };

/**
 * A handler over a fresh session manager of the built-in presets, with every reply validated against the protocol schema
 * (`validateReplies`: a reply outside it comes back as an `internal` error naming the problem). `maxMessageBytes`
 * (default 1 MiB) bounds a request; `maxSessions` the live sessions (default: the manager's).
 */
export function protocolHandler(opts: { maxMessageBytes?: number; maxSessions?: number } = {}): ProtocolHandler {
  const presets = listPresets();
  const sessions = opts.maxSessions === undefined ? new SessionManager({ presets }) : new SessionManager({ presets, maxSessions: opts.maxSessions });
  return new ProtocolHandler(sessions, { version: '9.9.9', presets, maxMessageBytes: opts.maxMessageBytes ?? 1 << 20 }, { validateReplies: true });
}

/** Send `req` as a protocol version 1 request (`v: 1` added) and return its reply. */
export function sendV1(h: ProtocolHandler, req: Record<string, unknown>): LooseReply {
  return h.handleValue({ v: 1, ...req }).reply as LooseReply;
}
