/**
 * ycgym's in-process public surface: the environment (text, Discrete and turn-level), the one episode loop,
 * presets, the simulation and its typed command results, and the `Policy` interface the baselines implement (they
 * import nothing else). No network, no native addon, no Arrow: importing it loads only the simulation and its
 * configuration, so worker threads and in-process users start fast. `ycgym` (src/index.ts) re-exports all of it
 * with the network client and server (package entry `ycgym/core` for this one).
 */
export { Env, EnvUsageError } from './env/env.js';
export type { EnvLike, EnvSnapshot, Observation, ResetArgs, ResetOptions, ResetResult, Status, StepInfo, StepResult } from './env/env.js';
export { listPresets, loadPreset, PresetError } from './config/load.js';
export type { ExperimentConfig } from './sim/index.js';
export { Simulation, stream } from './sim/index.js';
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
export type { DiscreteCommand, DiscreteFrame, DiscreteOptions, DiscreteSpec } from './env/discrete.js';
export type { Agent, EpisodeHooks, EpisodeResult, EpisodeStep, StepView, SyncEnvLike } from './env/episode.js';
export { commandPolicyAgent, runTurnEpisode, turnView } from './turns/episode.js';
export type { TurnAgent, TurnEnvLike, TurnEpisodeHooks, TurnEpisodeStep, TurnObservation } from './turns/episode.js';
export { TurnEnv, TURN_FIX_NAMES } from './turns/turns.js';
export type { ChatMessage, ToolCall, TurnAction, TurnFixes, TurnInfo, TurnOptions, TurnResetArgs, TurnResetResult, TurnSnapshot, TurnStepResult, TurnTerminalReason, ToolResult } from './turns/turns.js';
export { RUN_COMMAND_TOOL, toolCallToCommand, toolSchemas } from './turns/tools.js';
export { SYSTEM_PROMPT } from './turns/prompts.js';
