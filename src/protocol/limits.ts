/**
 * Every numeric limit of protocol v1, in one place. The JSON Schema (schema/protocol.schema.json) repeats
 * the ones it checks as literals; test/unit/protocol-table.test.ts holds the two to the same numbers.
 */

/**
 * Most frames in one message of the pipe transport (`ycgym serve --pipe-fds`): a reply's envelope, body and the binary
 * `step_batch` arrays (ZeroMQ's envelope cap is 64).
 */
export const MAX_PIPE_FRAMES = 128;

/** Largest spin of the pipe transport, microseconds (`ycgym serve --pipe-spin-us`, Python `LocalServer(spin_us=...)`): a second. */
export const MAX_PIPE_SPIN_US = 1_000_000;

// The Discrete reset options' defaults and bound (the env layer's, which the protocol may use and the in-process
// entry src/core.ts reaches without loading the protocol).
export { DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, MAX_SLOTS } from '../env/discrete-slots.js';

/** Maximum entries of one `step_batch` (schema: `StepBatchRequest.steps.maxItems`; reported in `hello.limits.max_batch`). */
export const MAX_BATCH = 4096;

/** Longest command the environment executes (longer ones are usage errors); reported in `hello.spaces`. */
export const MAX_ACTION_CHARS = 65_536;

/** Longest session id (schema: `SessionId.maxLength`). */
export const MAX_SESSION_ID_CHARS = 64;

/** Longest preset name (schema: `PresetName.maxLength`). */
export const MAX_PRESET_NAME_CHARS = 128;

/** Longest string request id (schema: `RequestId.maxLength`); a numeric id must be a safe integer. */
export const MAX_REQUEST_ID_CHARS = 256;

/**
 * Default cap on the size of one `step_batch` reply (bytes of JSON): entries run while the reply built so far
 * is below it; later entries are not executed and fail alone with `message_too_large`. Without a cap, 4096
 * entries of a 1.4 MB observation (a full scratchpad read) would need ~6 GB and take the server down.
 */
export const DEFAULT_MAX_BATCH_REPLY_BYTES = 64 * 2 ** 20;

/**
 * Default size limit of one request frame on the server (`hello.limits.max_message_bytes`): 8 MiB, room for a
 * full snapshot (about 120 KB per simulated year, more with a large scratchpad).
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 8 << 20;

/** Default size above which the TS client refuses to send a request itself (1 MiB; `ClientOptions.maxMessageBytes`). */
export const CLIENT_DEFAULT_MAX_MESSAGE_BYTES = 1 << 20;

/** Default cap on live sessions (`hello.limits.max_sessions`). */
export const DEFAULT_MAX_SESSIONS = 1024;

/**
 * Default cap on the live sessions of one client (one connection: its ZeroMQ routing identity), so that one
 * client cannot take every session of a shared server (`hello.limits.max_sessions_per_client`).
 */
export const DEFAULT_MAX_SESSIONS_PER_CLIENT = 256;

/**
 * Requests of one client (connection) the server keeps waiting to be handled, and their bytes: beyond either, its
 * requests are each answered `capacity` in their turn, unhandled. The clients keep half of these unanswered at most.
 */
export const MAX_CLIENT_QUEUED_REQUESTS = 1024;
export const MAX_CLIENT_QUEUED_BYTES = 16 << 20;

/**
 * Default budget of one ZeroMQ connection's unread replies (`ycgym serve --max-unread-mib`): bytes of large replies the
 * server may have handed to ZeroMQ for it that ZeroMQ may still hold (src/server/server.ts, `UnreadReplies`). While
 * they reach it, that connection's requests are answered `capacity`, unhandled; a connection that never reads thus
 * makes the server hold at most this and one more reply (plus one waiting in its outbox, and one ZeroMQ's I/O thread may
 * hold beyond the count), whatever it sends.
 */
export const DEFAULT_MAX_UNREAD_REPLY_BYTES = 256 * 2 ** 20;

/**
 * Default budget of the unread replies of every ZeroMQ connection together (`ycgym serve --max-unread-total-mib`): a
 * process that opens many connections gets a per-connection budget for each, so without this one N connections that
 * never read could make the server hold N x `DEFAULT_MAX_UNREAD_REPLY_BYTES`. From 3/4 of it, the requests of the
 * connections holding the most (at least the average of those counted) are answered `capacity`, unhandled; at it, those
 * of every connection holding some; beyond it and its headroom (`UNREAD_TOTAL_HEADROOM_DIVISOR`), every connection's
 * (src/server/server.ts, `Server.unreadRefusal`).
 */
export const DEFAULT_MAX_UNREAD_TOTAL_BYTES = 1024 * 2 ** 20;

/**
 * The headroom above the total unread budget (`ycgym serve --max-unread-total-mib`) is that budget divided by this: a
 * connection with no large reply counted (a lockstep client whose replies are all small, one that read what it took) is
 * served while every connection's unread replies together stay below the budget plus the headroom; connections holding
 * something counted are refused at the budget (src/server/server.ts, `unreadVerdict`). So connections that never read
 * and hold the budget do not lock out the clients that hold nothing; beyond the budget plus the headroom every
 * connection is refused. A connection holds at most one large reply from the headroom before it holds something
 * counted (its count leaves only once ZeroMQ took 17 later replies for it, which needs ZeroMQ's queue for it to drain:
 * the client read, or the kernel's socket buffers took the bytes), so only many new connections that never read fill
 * it (at most `--max-connections` served at once).
 */
export const UNREAD_TOTAL_HEADROOM_DIVISOR = 4;

/**
 * The headroom above the total unread budget `maxTotal` (bytes): `maxTotal / UNREAD_TOTAL_HEADROOM_DIVISOR`, rounded
 * down to whole bytes (exact for every `--max-unread-total-mib`). The server's bound and `hello.limits.unread_total_headroom_bytes`.
 */
export function unreadTotalHeadroom(maxTotal: number): number {
  return Math.floor(maxTotal / UNREAD_TOTAL_HEADROOM_DIVISOR);
}

/**
 * Default cap on the ZeroMQ connections served at once (`ycgym serve --max-connections`). ZeroMQ may hold a connection's
 * last 17 replies whatever it reads, and the replies under 64 KiB are not counted in the unread-reply budgets (counting
 * them would cost every reply, and their memory, copied by zeromq.js, is invisible to the buffer measure), so each open
 * connection may make the server hold ~1.1 MiB outside them: 512 of them ~0.55 GiB. While more connections are open,
 * the requests of a connection not served before (nor owning a live session) are answered `capacity`, unhandled
 * (src/server/server.ts, `Server.connectionRefusal`; a burst of new connections at the cap may be served a few beyond it:
 * the accept events counted may come just after a connection's first request).
 */
export const DEFAULT_MAX_CONNECTIONS = 512;

/** Requests the TS client sends ahead of their replies (half the server's per-client quota; see `Client.request`). */
export const CLIENT_SEND_WINDOW = MAX_CLIENT_QUEUED_REQUESTS / 2;
/** Their bytes (half the server's per-client quota). */
export const CLIENT_SEND_WINDOW_BYTES = MAX_CLIENT_QUEUED_BYTES / 2;

/**
 * Requests given up on (timed out, or failed by an ambiguous reply) whose ids a client keeps while their replies may
 * still come (the TS `Client.gaveUp`, the Python `Client._abandoned`): past it the oldest is forgotten. An id also
 * leaves when its own reply comes, or the reply to a request sent after it (the server answers a connection's
 * requests in order); this bounds what a server that never answers makes a client hold.
 */
export const GAVE_UP_KEPT = 4096;

/** Random bytes in a session id issued by the server (128 bits: ids are capabilities, not guessable). */
export const SESSION_ID_RANDOM_BYTES = 16;

/** Default idle time after which a session is closed, in milliseconds; 0 disables reaping (`hello.limits.idle_timeout_ms`). */
export const DEFAULT_IDLE_TIMEOUT_MS = 600_000;

/** Longest instance tag of session ids (`s1.<tag>`), of the characters `[A-Za-z0-9_-]`. */
export const MAX_SESSION_ID_TAG_CHARS = 32;

/** Default per-request timeout of the TS client in milliseconds (0 waits forever). */
export const CLIENT_DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Default byte budget of a server's record directory (`ycgym serve --record-max-mib`): the bytes of every recording this
 * server started there, together. A recording that would go beyond it is completed with the rows written so far and
 * its sessions go on unrecorded; a reset asking to record once it cannot hold another recording is `record_limit`.
 */
export const DEFAULT_RECORD_MAX_BYTES = 16 * 2 ** 30;

/**
 * Default share of that budget one client (connection) may use (`--record-client-mib`, at most the budget): one client
 * cannot take the record directory's room from the others.
 */
export const DEFAULT_RECORD_CLIENT_BYTES = 2 * 2 ** 30;

/** Default cap on the recordings of one client in progress at once (`--record-max-per-client`). */
export const DEFAULT_MAX_RECORDINGS_PER_CLIENT = 16;
