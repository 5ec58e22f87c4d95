/**
 * ycgym's public TypeScript surface: everything of the in-process entry (./core.ts: the environment, episode loop,
 * presets, the simulation and the `Policy` interface), plus the network client and server. Everything else is internal.
 */
export * from './core.js';
export { Client, ProtocolError } from './client/client.js';
export type { BatchItem, BatchStep, ClientErrorCode, ClientOptions, ClientResetArgs, SessionResetResult } from './client/client.js';
export { RemoteEnv } from './client/remote-env.js';
export { Server, startServer } from './server/server.js';
export type { Logger, ServerOptions } from './server/server.js';
export type { CloseReason, SessionHooks } from './server/sessions.js';
export type { ErrorCode, HelloResult, RecordingStopped } from './protocol/protocol.js';
export { generateCurveKeyPair } from './protocol/curve.js';
export type { CurveKeyPair } from './protocol/curve.js';
export { RecoveringEnv } from './client/recovering-env.js';
export { runEpisodesBatched } from './client/batched.js';
export type { BatchedEpisode, BatchedHooks } from './client/batched.js';
export type { ClientTurnResetArgs, ToolsChoice, TurnResetReply, TurnStepReply, TurnRestoreReply, WireTurnAction } from './client/client.js';
export type { CallDetail, TurnStepDetail } from './protocol/ops.js';
