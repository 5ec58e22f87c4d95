/**
 * Types of a validated YC-Bench experiment configuration.
 *
 * Keys are snake_case exactly as in the TOML presets and the reference's
 * pydantic models (yc_bench/config/schema.py), so `cfg.world.trust_max` here
 * is `cfg.world.trust_max` there. The JSON Schema in schema/preset.schema.json
 * is the runtime counterpart of these types; keep the two in sync.
 */

/** Triangular(low, high, mode) distribution, clamped to [low, high]. */
export interface TriangularDist {
  type: 'triangular';
  low: number;
  high: number;
  mode: number;
}

/** scale × Beta(alpha, beta), clamped to [low, high] and rounded to 4 decimals. */
export interface BetaDist {
  type: 'beta';
  alpha: number;
  beta: number;
  /** Defaults to 1.0. */
  scale: number;
  /** Defaults to 0.0. */
  low: number;
  /** Defaults to 1.0. */
  high: number;
}

/** Normal(mean, stdev), clamped to [low, high] and rounded to 4 decimals. */
export interface NormalDist {
  type: 'normal';
  mean: number;
  stdev: number;
  low: number;
  high: number;
}

/** Uniform(low, high) distribution. */
export interface UniformDist {
  type: 'uniform';
  low: number;
  high: number;
}

/** Degenerate distribution that always yields `value`. */
export interface ConstantDist {
  type: 'constant';
  value: number;
}

/** A distribution spec, discriminated on `type` (reference: sampling.DistSpec). */
export type DistSpec = TriangularDist | BetaDist | NormalDist | UniformDist | ConstantDist;

/** The distribution family names accepted in `type`. */
export type DistType = DistSpec['type'];

/** The keys each distribution family accepts (including `type`), as in the reference's sampling models. */
export const DIST_FIELDS: Readonly<Record<DistType, readonly string[]>> = Object.freeze({
  triangular: ['type', 'low', 'high', 'mode'],
  beta: ['type', 'alpha', 'beta', 'scale', 'low', 'high'],
  normal: ['type', 'mean', 'stdev', 'low', 'high'],
  uniform: ['type', 'low', 'high'],
  constant: ['type', 'value'],
});

/** Distributions of the random quantities drawn during world generation (reference: WorldDists). */
export interface WorldDists {
  required_prestige: DistSpec;
  reward_funds_cents: DistSpec;
  domain_count: DistSpec;
  required_qty: DistSpec;
  reward_prestige_delta: DistSpec;
  required_trust: DistSpec;
  skill_boost: DistSpec;
}

/** One salary tier; the three tiers' shares sum to 1.0 (reference: SalaryTierConfig). */
export interface SalaryTierConfig {
  name: string;
  share: number;
  /** Integer cents per month. */
  min_cents: number;
  /** Integer cents per month. */
  max_cents: number;
  rate_min: number;
  rate_max: number;
}

/** LLM agent settings (reference: AgentConfig). */
export interface AgentConfig {
  model: string;
  temperature: number;
  top_p: number;
  request_timeout_seconds: number;
  /** Integer. */
  retry_max_attempts: number;
  retry_backoff_seconds: number;
  /** Integer. */
  history_keep_rounds: number;
  /** null means the built-in prompt. */
  system_prompt: string | null;
}

/** Agent loop settings (reference: LoopConfig). */
export interface LoopConfig {
  /** Integer. */
  auto_advance_after_turns: number;
  /** Integer, or null for unlimited. */
  max_turns: number | null;
}

/** Simulation clock settings (reference: SimConfig). */
export interface SimConfig {
  /** ISO 8601 date string, YYYY-MM-DD. */
  start_date: string;
  /** Integer. */
  horizon_years: number;
  company_name: string;
}

/** World-generation parameters with derived trust/loyalty fields computed (reference: WorldConfig). */
export interface WorldConfig {
  // --- Workforce ---
  num_employees: number;
  initial_funds_cents: number;
  initial_prestige_level: number;
  work_hours_per_day: number;

  // --- Market ---
  num_market_tasks: number;
  market_browse_default_limit: number;

  // --- Salary bump on task completion ---
  salary_bump_pct: number;
  salary_max_cents: number;
  skill_rate_max: number;

  // --- Prestige mechanics ---
  prestige_max: number;
  prestige_min: number;
  penalty_fail_multiplier: number;
  penalty_fail_funds_pct: number;
  penalty_cancel_multiplier: number;
  reward_prestige_scale: number;
  prestige_decay_per_day: number;

  // --- Client trust knobs ---
  num_clients: number;
  trust_max: number;
  trust_build_rate: number;
  trust_fragility: number;
  trust_focus_pressure: number;
  trust_reward_ceiling: number;
  trust_work_reduction_max: number;
  trust_gating_fraction: number;

  // --- Client loyalty knobs ---
  loyalty_rat_fraction: number;
  loyalty_severity: number;
  loyalty_reveal_trust: number;

  // --- Trust parameters (derived ones are recomputed; see DERIVED_WORLD_KEYS) ---
  trust_min: number;
  trust_gain_base: number;
  trust_gain_diminishing_power: number;
  trust_fail_penalty: number;
  trust_cancel_penalty: number;
  trust_decay_per_day: number;
  trust_cross_client_decay: number;
  trust_base_multiplier: number;
  trust_reward_scale: number;
  trust_reward_threshold: number;
  trust_reward_ramp: number;
  trust_level_reward_scale: number;
  trust_level_max_required: number;
  trust_gated_reward_boost: number;
  client_reward_mult_low: number;
  client_reward_mult_high: number;
  client_reward_mult_mode: number;
  client_single_specialty_prob: number;
  client_tier_premium_threshold: number;
  client_tier_enterprise_threshold: number;
  task_specialty_domain_bias: number;

  // --- Loyalty parameters (all derived) ---
  loyalty_mode: number;
  scope_creep_max: number;
  dispute_clawback_max: number;
  dispute_prob_max: number;

  // --- Task scaling ---
  prestige_qty_scale: number;
  deadline_qty_per_day: number;
  deadline_min_biz_days: number;

  // --- Progress milestones ---
  task_progress_milestones: number[];

  // --- Business hours ---
  workday_start_hour: number;
  workday_end_hour: number;

  // --- Distributions ---
  dist: WorldDists;

  // --- Salary tiers ---
  salary_junior: SalaryTierConfig;
  salary_mid: SalaryTierConfig;
  salary_senior: SalaryTierConfig;
}

/** World fields that the reference validator always overwrites with values derived from the knobs. */
export const DERIVED_WORLD_KEYS = [
  'trust_gain_base',
  'trust_fail_penalty',
  'trust_cancel_penalty',
  'trust_decay_per_day',
  'trust_cross_client_decay',
  'trust_reward_scale',
  'trust_reward_threshold',
  'trust_reward_ramp',
  'loyalty_mode',
  'scope_creep_max',
  'dispute_clawback_max',
  'dispute_prob_max',
] as const satisfies readonly (keyof WorldConfig)[];

/** Name of a world field that is always recomputed by deriveWorld. */
export type DerivedWorldKey = (typeof DERIVED_WORLD_KEYS)[number];

/** World parameters before derivation: the derived fields may be present (they are ignored) or absent. */
export type WorldInput = Omit<WorldConfig, DerivedWorldKey> & Partial<Pick<WorldConfig, DerivedWorldKey>>;

/** Names of ycgym's corrections of reference bugs, in documentation order. */
export const FIX_NAMES = [
  'progress_flush_hours',
  'task_cancel',
  'replacement_client_multiplier',
  'replacement_unique_titles',
  'salary_bump_total',
  'resume_old_sim_time',
  'next_payroll',
  'market_browse_total',
  'report_monthly',
  'fail_penalty_category',
] as const;

/** Name of one correction switch in the `[fixes]` table. */
export type FixName = (typeof FIX_NAMES)[number];

/** The `[fixes]` table: one boolean per correction, false (reference behaviour) by default. */
export type FixesConfig = Record<FixName, boolean>;

/** One-sentence description of each fix: what the reference does, and what the fix does instead. */
export const FIX_DOCS: Readonly<Record<FixName, string>> = Object.freeze({
  progress_flush_hours:
    "The reference's business_hours_between clips each midnight-split segment with the END day's 18:00, so a segment ending at midnight counts from max(start, 09:00) to 24:00 (up to 15 h per weekday); the fix counts only 09:00-18:00.",
  task_cancel:
    'The reference `task cancel` crashes on SQLite (it uses a PostgreSQL-only JSON operator) and changes nothing; the fix implements the intended semantics (prestige -penalty_cancel_multiplier*delta, trust -trust_cancel_penalty, the task\'s pending events dropped, ETAs of peer tasks recalculated).',
  replacement_client_multiplier:
    "The reference generates replacement tasks on accept without the client's reward multiplier; the fix applies it.",
  replacement_unique_titles:
    'The reference titles replacement tasks `Task-{slot*1000+gen}`, which collide with existing titles; the fix gives them unique titles.',
  salary_bump_total:
    "The reference's wake event reports salary_bump_total_cents as the sum of post-bump salary x pct instead of the bumps applied; the fix reports the total actually applied.",
  resume_old_sim_time:
    'The reference `sim resume` reports old_sim_time equal to new_sim_time; the fix reports the simulation time before the resume.',
  next_payroll:
    "The reference `company status` always reports next_payroll as next month's first business day; the fix reports the actual next payroll instant.",
  market_browse_total:
    'The reference `market browse` reports `total` as the length of the returned page; the fix reports the number of matching tasks.',
  report_monthly:
    'The reference `report monthly` is always empty; the fix fills monthly revenue, cost, return and ending funds from the ledger.',
  fail_penalty_category:
    'The reference books the task failure penalty under ledger category task_reward; the fix books it under task_fail_penalty.',
});

/** A complete, validated experiment configuration (reference: ExperimentConfig, plus `fixes`). */
export interface ExperimentConfig {
  name: string;
  description: string;
  agent: AgentConfig;
  loop: LoopConfig;
  sim: SimConfig;
  world: WorldConfig;
  fixes: FixesConfig;
}
