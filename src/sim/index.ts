/**
 * The simulation's one facade: every module outside `src/sim` reaches the simulation through these names
 * (test/architecture.test.ts enforces it). Everything behind it is pure: no I/O, no clock, no `Math.random`.
 */

// The company simulation, driven by command text.
export { checkWorldCounts, DEFAULT_LIMITS, installConfigValidator, Simulation } from './simulation.js';
export type { CommandResult, SimOptions, SimSnapshot } from './simulation.js';

// The agent commands: their grammar, and the company figures the status commands report.
export { commandLine, COMMANDS, commandSpec, GROUP_HELP, parseArgv } from './commands/spec.js';
export type { CommandSpec, OptionSpec, ParsedOptions } from './commands/spec.js';

// The one terminal rule (bankrupt or at the horizon) and the company figures every status view reports.
export { claimedTasks, clientsByName, companyFigures, countTasks, isBankrupt, isHorizonReached, outcome, payrollOf, runwayMonths, taskCounts, type TaskCounts, terminalReason } from './model/status.js';
export type { CompanyFigures, Outcome, TerminalReason } from './model/status.js';
export { browsable } from './commands/handlers.js';

// The typed result of each verb (what its JSON text renders), the `{error}` of a rejection, the wake events.
export { isError, isVerb, RESULT_KEYS, ROW_KEYS, WAKE_EVENT_KEYS } from './commands/results.js';
export type * from './commands/results.js';

// The domain model: calendar, world generation and its cache.
export { FIRST_START_DATE, isoformat, LAST_START_DATE, runBounds, US_PER_DAY } from './model/calendar.js';
export { deadlineBusinessDays, LAST_EXACT_INSTANT, LATEST_RUN_END, latestDeadline, MAX_HORIZON_YEARS } from './model/deadline.js';
export type { LatestDeadline } from './model/deadline.js';
export { DOMAINS, DOMAINS_ALPHA } from './model/types.js';
export type { Employee, Task } from './model/types.js';
export { generateReplacementTask, generateWorld } from './model/world.js';
export type { GenTask } from './model/world.js';
export { clearWorldCache, worldClients, worldsGenerated } from './model/world-cache.js';

// The experiment configuration the simulation reads (loading presets from files is src/config's job).
export type {
  AgentConfig,
  BetaDist,
  ConstantDist,
  DerivedWorldKey,
  DistSpec,
  DistType,
  ExperimentConfig,
  FixName,
  FixesConfig,
  LoopConfig,
  NormalDist,
  SalaryTierConfig,
  SimConfig,
  TriangularDist,
  UniformDist,
  WorldConfig,
  WorldDists,
  WorldInput,
} from './config/types.js';
export { DERIVED_WORLD_KEYS, DIST_FIELDS, FIX_DOCS, FIX_NAMES } from './config/types.js';
export { deriveWorld, formatFixedPy, salaryShareTotal } from './config/derive.js';

// Python compatibility: the reference's numbers, JSON text and seeded random streams.
export { toFloat } from './py/decimal.js';
export { pyFormatFixed, pyRepr, pyRound } from './py/pyfloat.js';
export { copyBytes, F, PyFloat, parseTyped, pyJsonDumps, toPlain, typedEqual, typedFromPlain } from './py/pyjson.js';
export type { Float, Out, TextSink } from './py/pyjson.js';
export { pyPow } from './py/pymath.js';
export { stream } from './py/rng.js';
export { mapPacked } from './py/packed.js';
