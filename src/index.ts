/**
 * ycgym's public TypeScript surface: the in-process environment, its network client and server, presets, the
 * simulation, and the `Policy` interface the baselines implement (they import nothing else). Everything else is internal.
 */
export { Env, EnvUsageError } from './env/env.js';
export type { EnvLike, EnvSnapshot, Observation, ResetArgs, ResetOptions, ResetResult, Status, StepInfo, StepResult } from './env/env.js';
export { Client, ProtocolError } from './client/client.js';
export type { BatchItem, BatchStep, ClientErrorCode, ClientOptions, ClientResetArgs, SessionResetResult } from './client/client.js';
export { RemoteEnv } from './client/remote-env.js';
export { Server, startServer } from './server/server.js';
export type { Logger, ServerOptions } from './server/server.js';
export type { CloseReason, SessionHooks } from './server/sessions.js';
export type { ErrorCode, HelloResult } from './protocol/protocol.js';
export { generateCurveKeyPair } from './protocol/curve.js';
export type { CurveKeyPair } from './protocol/curve.js';
export { listPresets, loadPreset, PresetError } from './config/load.js';
export type { ExperimentConfig } from './sim/index.js';
export { Simulation, stream } from './sim/index.js';
// The typed result of every command (what its JSON output renders) and the wake events of `sim resume`.
export { isError, isVerb } from './sim/index.js';
export type {
  BankruptcyWakeEvent,
  ClientHistoryResult,
  ClientHistoryRow,
  ClientListResult,
  ClientRow,
  CommandResult,
  CommandResults,
  CommandValue,
  CompanyStatusResult,
  EmployeeListResult,
  EmployeeRow,
  ErrorResult,
  FinanceLedgerResult,
  Float,
  HorizonEndWakeEvent,
  LedgerRow,
  MarketBrowseResult,
  MarketRequirementRow,
  MarketTaskRow,
  MonthlyPayrollWakeEvent,
  MonthRow,
  PrestigeChangeRow,
  ReportMonthlyResult,
  RiskRow,
  ScratchpadClearResult,
  ScratchpadReadResult,
  ScratchpadWriteResult,
  SimResumeResult,
  TaskAcceptResult,
  TaskAssignmentRow,
  TaskAssignResult,
  TaskCancelResult,
  TaskCompletedWakeEvent,
  TaskCountsRow,
  TaskDispatchResult,
  TaskHalfWakeEvent,
  TaskInspectResult,
  TaskListResult,
  TaskListRow,
  TaskRequirementRow,
  TaskTerms,
  UnknownWakeEvent,
  Verb,
  VerbValue,
  WakeEvent,
} from './sim/index.js';
export type { Policy, PolicyObservation } from './env/policy.js';
export { EpisodeLoop, outputValue, recordCommandStep, runEpisode, runEpisodeAsync, simulationReason, startCommandEpisode } from './env/episode.js';
export { admissibleCommands, DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, discreteCommand, discreteFrame, discreteSpec, MAX_SLOTS, TIERS } from './env/discrete.js';
export type { DiscreteFrame, DiscreteOptions, DiscreteSpec } from './env/discrete.js';
export type { Agent, EpisodeHooks, EpisodeResult, EpisodeStep, StepView, SyncEnvLike } from './env/episode.js';
export { commandPolicyAgent, runTurnEpisode, turnView } from './turns/episode.js';
export type { TurnAgent, TurnEnvLike, TurnEpisodeHooks, TurnEpisodeStep, TurnObservation } from './turns/episode.js';
export { TurnEnv, TURN_FIX_NAMES } from './turns/turns.js';
export type { ChatMessage, ToolCall, TurnAction, TurnFixes, TurnInfo, TurnOptions, TurnResetArgs, TurnResetResult, TurnSnapshot, TurnStepResult, TurnTerminalReason, ToolResult } from './turns/turns.js';
export { RUN_COMMAND_TOOL, toolCallToCommand, toolSchemas } from './turns/tools.js';
export { SYSTEM_PROMPT } from './turns/prompts.js';
export { RecoveringEnv } from './client/recovering-env.js';
export { runEpisodesBatched } from './client/batched.js';
export type { BatchedEpisode, BatchedHooks } from './client/batched.js';
export type { ClientTurnResetArgs, ToolsChoice, TurnResetReply, TurnStepReply, TurnRestoreReply, WireTurnAction } from './client/client.js';
export type { CallDetail, TurnStepDetail } from './protocol/ops.js';
