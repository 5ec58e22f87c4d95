/** Public API of the experiment-configuration module (presets, schema validation, derived parameters). */
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
} from '../sim/index.js';
export { DERIVED_WORLD_KEYS, DIST_FIELDS, FIX_DOCS, FIX_NAMES } from '../sim/index.js';
export { deriveWorld, formatFixedPy, salaryShareTotal } from '../sim/index.js';
export {
  PresetError,
  configFromRaw,
  listPresets,
  loadPreset,
  loadPresetFromText,
  packageRoot,
  presetDir,
  schemaPath,
} from './load.js';
