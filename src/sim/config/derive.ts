/**
 * Derived world parameters, bit-for-bit like the reference validator
 * `WorldConfig._derive_trust_params` (yc_bench/config/schema.py).
 *
 * Every expression below keeps the reference's operand order and constants so
 * that IEEE-754 double arithmetic gives identical results (JS numbers and
 * Python floats are both binary64 with round-to-nearest-even). Do not
 * "simplify" them: `a * 1.6 / b` and `a * (1.6 / b)` differ in the last bit.
 */
import type { WorldConfig, WorldInput } from './types.js';

/** Python's built-in `max(a, b)` for floats: returns `a` unless `b > a` (so ties and NaN keep `a`). */
function pyMax(a: number, b: number): number {
  return b > a ? b : a;
}

/** Python's built-in `min(a, b)` for floats: returns `a` unless `b < a` (so ties and NaN keep `a`). */
function pyMin(a: number, b: number): number {
  return b < a ? b : a;
}

/** Python float division: raises on a zero divisor (ZeroDivisionError) instead of yielding ±Infinity/NaN. */
function pyDiv(numerator: number, divisor: number, what: string): number {
  if (divisor === 0) {
    throw new RangeError(`${what}: must be non-zero (the reference raises ZeroDivisionError: float division by zero)`);
  }
  return numerator / divisor;
}

/**
 * Recompute the derived trust/loyalty fields from the knobs, exactly as the reference does; all other fields are copied unchanged.
 *
 * Overwritten (any value from the file is ignored): trust_gain_base, trust_fail_penalty,
 * trust_cancel_penalty, trust_decay_per_day, trust_cross_client_decay, trust_reward_scale,
 * trust_reward_threshold, trust_reward_ramp, loyalty_mode, scope_creep_max,
 * dispute_clawback_max, dispute_prob_max. Everything else in the "derived" section of the
 * reference model (trust_min, trust_base_multiplier, client_*, ...) keeps its file value or default.
 * Throws RangeError when trust_build_rate or trust_max is zero (the reference crashes there too).
 */
export function deriveWorld(raw: WorldInput): WorldConfig {
  // trust_build_rate -> gain_base: trust_max * 1.6 / trust_build_rate
  const trust_gain_base = pyDiv(raw.trust_max * 1.6, raw.trust_build_rate, '/world/trust_build_rate');

  // trust_fragility -> fail/cancel penalties and daily decay
  const trust_fail_penalty = raw.trust_fragility * 0.6;
  const trust_cancel_penalty = raw.trust_fragility * 1.0;
  const trust_decay_per_day = raw.trust_fragility * 0.03;

  // trust_focus_pressure -> cross-client decay
  const trust_cross_client_decay = raw.trust_focus_pressure * 0.06;

  // trust_reward_ceiling -> reward scale, with the Premium reference multiplier 1.3**2 = 1.69
  const ref_mult_sq = 1.69;
  const trust_reward_scale = pyDiv(
    raw.trust_reward_ceiling - raw.trust_base_multiplier,
    ref_mult_sq * raw.trust_max,
    '/world/trust_max',
  );

  // trust_gating_fraction -> threshold and ramp
  const trust_reward_threshold = pyMax(0.0, 1.0 - 2.0 * raw.trust_gating_fraction);
  const trust_reward_ramp = pyMin(1.0, 2.0 * raw.trust_gating_fraction);

  // loyalty knobs
  const loyalty_mode = 1.0 - 2.6 * raw.loyalty_rat_fraction;
  const scope_creep_max = raw.loyalty_severity * 1.0;
  const dispute_clawback_max = raw.loyalty_severity * 1.2;
  const dispute_prob_max = raw.loyalty_severity * 1.0;

  return {
    ...raw,
    trust_gain_base,
    trust_fail_penalty,
    trust_cancel_penalty,
    trust_decay_per_day,
    trust_cross_client_decay,
    trust_reward_scale,
    trust_reward_threshold,
    trust_reward_ramp,
    loyalty_mode,
    scope_creep_max,
    dispute_clawback_max,
    dispute_prob_max,
  };
}

/** Sum of the three salary-tier shares, added in the reference's order (junior + mid + senior). */
export function salaryShareTotal(world: Pick<WorldConfig, 'salary_junior' | 'salary_mid' | 'salary_senior'>): number {
  return world.salary_junior.share + world.salary_mid.share + world.salary_senior.share;
}

/**
 * Format like Python's `f"{x:.{digits}f}"`: the exact binary value rounded half-to-even
 * (JS `toFixed` rounds exact ties up, e.g. 1.0078125 -> "1.007813" where Python gives "1.007812").
 */
export function formatFixedPy(x: number, digits: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const abs = Math.abs(x);
  const awayFromZero = abs.toFixed(digits);
  if (abs >= 1e21) {
    // Every double this large is an integer; toFixed would switch to exponent notation.
    return sign + BigInt(abs).toString() + (digits > 0 ? '.' + '0'.repeat(digits) : '');
  }
  // A double below 1e21 that sits exactly on a tie at `digits + 1` decimals has a short exact
  // decimal expansion, so 100 digits always reveal whether it is an exact tie.
  const exact = abs.toFixed(100);
  const dot = exact.indexOf('.');
  if (!/^50*$/.test(exact.slice(dot + 1 + digits))) return sign + awayFromZero;
  // Exact tie: toFixed rounded away from zero; Python rounds to even.
  const truncated = exact.slice(0, digits === 0 ? dot : dot + 1 + digits);
  const lastDigit = Number(truncated.charAt(truncated.length - 1));
  return sign + (lastDigit % 2 === 0 ? truncated : awayFromZero);
}
