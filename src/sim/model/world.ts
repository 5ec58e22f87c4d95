/**
 * World generation identical to the reference generators (`services/generate_*.py`):
 * employees and clients from the fixed world seed 1, market and replacement tasks from the run seed.
 * Every draw happens in the reference's order on its own SHA-256-seeded stream.
 */
import type { DistSpec, WorldConfig } from '../config/types.js';
import { pyRound, pyRoundInt } from '../py/pyfloat.js';
import { restream, stream, StreamSequence, type PyRandom } from '../py/rng.js';
import { DOMAINS, type Domain } from './types.js';

/** Employees and clients are identical across run seeds (reference `_FIXED_WORLD_SEED`). */
export const FIXED_WORLD_SEED = 1;

const TIER_SEQUENCE = ['junior', 'junior', 'junior', 'junior', 'junior', 'mid', 'mid', 'mid', 'senior', 'senior'];

/** Client names the reference samples from. */
export const CLIENT_NAME_POOL = [
  'Nexus AI', 'Vertex Labs', 'Quantum Dynamics', 'Atlas Computing', 'Helix Systems', 'Orion Data', 'Cipher Corp',
  'Prism Analytics', 'Nova Research', 'Zenith Technologies', 'Apex Robotics', 'Stratos Cloud', 'Vanguard ML',
  'Equinox Labs', 'Cortex Intelligence',
];

/** A generated employee, rates as drawn (4 dp floats, before storage quantization). */
export interface GenEmployee {
  name: string;
  tier: string;
  salary_cents: number;
  work_hours_per_day: number;
  rates: Record<Domain, number>;
}

/** A generated client. */
export interface GenClient {
  name: string;
  reward_multiplier: number;
  tier: string;
  specialty_domains: Domain[];
  loyalty: number;
  adversarial: boolean;
}

/** A generated task; `requirements` in sampling order; floats as drawn. */
export interface GenTask {
  title: string;
  client_index: number;
  required_prestige: number;
  reward_funds_cents: number;
  reward_prestige_delta: number;
  skill_boost_pct: number;
  required_trust: number;
  requirements: [Domain, number][];
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}

/** Python `max(lo, min(hi, v))` keeps the first argument on ties; with numbers the value is what matters. */
function sampleFromSpec(rng: PyRandom, spec: DistSpec): number {
  switch (spec.type) {
    case 'triangular':
      return clamp(rng.triangular(spec.low, spec.high, spec.mode), spec.low, spec.high);
    case 'beta':
      // pyRound(clamp(spec.scale * rng.betavariate(spec.alpha, spec.beta), spec.low, spec.high), 4), the same bits
      return rng.betavariateRounded4(spec.alpha, spec.beta, spec.scale, spec.low, spec.high);
    case 'normal':
      return pyRound(clamp(rng.gauss(spec.mean, spec.stdev), spec.low, spec.high), 4);
    case 'uniform':
      return rng.uniform(spec.low, spec.high);
    case 'constant':
      return spec.value;
  }
}

function tierConfig(cfg: WorldConfig, name: string) {
  for (const t of [cfg.salary_junior, cfg.salary_mid, cfg.salary_senior]) if (t.name === name) return t;
  throw new Error(`Tier ${name} not found`);
}

/** Reference `generate_employees(run_seed, count, cfg)`. */
export function generateEmployees(runSeed: number, count: number, cfg: WorldConfig): GenEmployee[] {
  if (count <= 0) return [];
  const tiers = Array.from({ length: count }, (_, i) => TIER_SEQUENCE[i % TIER_SEQUENCE.length] as string);
  stream(runSeed, 'tier_assignment').shuffle(tiers);
  const out: GenEmployee[] = [];
  // One stream per employee, each dropped before the next is drawn from (seeded in pairs).
  const streams = new StreamSequence(runSeed, 'employee_', count);
  for (let idx = 1; idx <= count; idx++) {
    const rng = streams.next();
    const tierName = tiers[idx - 1] as string;
    const tc = tierConfig(cfg, tierName);
    const rates = {} as Record<Domain, number>;
    for (const d of DOMAINS) rates[d] = pyRound(rng.uniform(tc.rate_min, tc.rate_max), 4);
    const salary = Math.trunc(clamp(pyRoundInt(rng.triangular(tc.min_cents, tc.max_cents, tc.max_cents)), tc.min_cents, tc.max_cents));
    out.push({ name: `Emp_${idx}`, tier: tierName, salary_cents: salary, work_hours_per_day: cfg.work_hours_per_day, rates });
  }
  return out;
}

function tierFromMultiplier(mult: number, cfg: WorldConfig): string {
  if (mult < cfg.client_tier_premium_threshold) return 'Standard';
  if (mult < cfg.client_tier_enterprise_threshold) return 'Premium';
  return 'Enterprise';
}

/** Reference `generate_clients(run_seed, count, cfg)` (including the final shuffle). */
export function generateClients(runSeed: number, count: number, cfg: WorldConfig): GenClient[] {
  if (count <= 0) return [];
  if (count > CLIENT_NAME_POOL.length) {
    throw new Error(`count (${count}) exceeds available client names (${CLIENT_NAME_POOL.length})`);
  }
  const rng = stream(runSeed, 'clients');
  const names = rng.sample(CLIENT_NAME_POOL, count);
  const nRats = Math.max(1, pyRoundInt(count * cfg.loyalty_rat_fraction));
  const clients: GenClient[] = [];
  names.forEach((name, i) => {
    let mult = pyRound(rng.triangular(cfg.client_reward_mult_low, cfg.client_reward_mult_high, cfg.client_reward_mult_mode), 2);
    const tier = tierFromMultiplier(mult, cfg);
    const nSpec = rng.random() < cfg.client_single_specialty_prob ? 1 : 2;
    const specialties = rng.sample([...DOMAINS], nSpec);
    let loyalty: number;
    if (i < nRats) {
      loyalty = pyRound(rng.uniform(-1.0, -0.3), 3);
      mult = Math.max(mult, cfg.client_reward_mult_high * 0.75);
    } else {
      loyalty = pyRound(rng.triangular(-0.3, 1.0, cfg.loyalty_mode), 3);
    }
    clients.push({ name, reward_multiplier: mult, tier, specialty_domains: specialties, loyalty, adversarial: loyalty < -0.3 });
  });
  rng.shuffle(clients);
  return clients;
}

function sampleDomainsWithBias(rng: PyRandom, k: number, specialties: readonly Domain[] | null, bias: number): Domain[] {
  if (!specialties || specialties.length === 0 || k <= 0) return rng.sample([...DOMAINS], k);
  const available: Domain[] = [...DOMAINS];
  const specialtyEnums = DOMAINS.filter((d) => specialties.includes(d));
  let first: Domain;
  if (specialtyEnums.length > 0 && rng.random() < bias) first = rng.choice(specialtyEnums);
  else first = rng.choice(available);
  const picked: Domain[] = [first];
  available.splice(available.indexOf(first), 1);
  if (k > 1 && available.length > 0) picked.push(...rng.sample(available, Math.min(k - 1, available.length)));
  return picked;
}

function sampleRequirements(rng: PyRandom, cfg: WorldConfig, prestige: number, specialties: readonly Domain[] | null): [Domain, number][] {
  const k = Math.trunc(sampleFromSpec(rng, cfg.dist.domain_count));
  const picked = sampleDomainsWithBias(rng, k, specialties, cfg.task_specialty_domain_bias);
  const scale = 1 + cfg.prestige_qty_scale * (prestige - 1);
  const out: [Domain, number][] = [];
  for (const d of picked) {
    const qty = Math.trunc(Math.trunc(sampleFromSpec(rng, cfg.dist.required_qty)) * scale);
    let existing = -1;
    for (let i = 0; i < out.length; i++) {
      if ((out[i] as [Domain, number])[0] === d) {
        existing = i;
        break;
      }
    }
    if (existing >= 0) out[existing] = [d, qty];
    else out.push([d, qty]);
  }
  // of its exact length: generated tasks are kept in the world cache (an array grown by push keeps room for 17)
  return out.slice();
}

function distBound(spec: DistSpec, key: 'low' | 'high', dflt: number): number {
  if (spec.type === 'constant') return dflt;
  if (key === 'low') return 'low' in spec ? spec.low : dflt;
  return 'high' in spec ? spec.high : dflt;
}

function requiredTrustFromReward(rng: PyRandom, cfg: WorldConfig, reward: number): number {
  const floor = distBound(cfg.dist.reward_funds_cents, 'low', 300_000);
  const ceiling = distBound(cfg.dist.reward_funds_cents, 'high', 4_000_000);
  if (reward <= floor) return 0;
  const frac = Math.min(1.0, (reward - floor) / (ceiling - floor));
  const prob = Math.max(0.0, (frac - cfg.trust_reward_threshold) / cfg.trust_reward_ramp);
  if (rng.random() >= prob) return 0;
  return Math.max(1, Math.min(Math.trunc(1 + frac * cfg.trust_level_reward_scale), cfg.trust_level_max_required));
}

function makeTask(rng: PyRandom, cfg: WorldConfig, prestige: number, serial: number, reqs: [Domain, number][], clientIndex: number): GenTask {
  let reward = Math.trunc(Math.trunc(sampleFromSpec(rng, cfg.dist.reward_funds_cents)) * (1 + cfg.reward_prestige_scale * (prestige - 1)));
  const requiredTrust = requiredTrustFromReward(rng, cfg, reward);
  if (requiredTrust > 0) reward = Math.trunc(reward * (1.0 + cfg.trust_gated_reward_boost * requiredTrust));
  const delta = sampleFromSpec(rng, cfg.dist.reward_prestige_delta);
  const boost = sampleFromSpec(rng, cfg.dist.skill_boost);
  return {
    title: `Task-${serial}`,
    client_index: clientIndex,
    required_prestige: prestige,
    reward_funds_cents: reward,
    reward_prestige_delta: delta,
    skill_boost_pct: boost,
    required_trust: requiredTrust,
    requirements: reqs,
  };
}

/** Reference `generate_tasks`: the initial market, with client specialties and reward multipliers by client index. */
export function generateTasks(runSeed: number, count: number, cfg: WorldConfig, clientSpecialties: readonly (readonly Domain[])[] | null, clientMults: readonly number[] | null): GenTask[] {
  const out: GenTask[] = [];
  const numClients = cfg.num_clients > 0 ? cfg.num_clients : 1;
  // One stream per task, each dropped before the next is drawn from (seeded in pairs).
  const streams = new StreamSequence(runSeed, 'task_', count);
  for (let idx = 1; idx <= count; idx++) {
    const rng = streams.next();
    const prestige = idx - 1 < 10 ? 1 : Math.trunc(sampleFromSpec(rng, cfg.dist.required_prestige));
    const clientIndex = (idx - 1) % numClients;
    const spec = clientSpecialties && clientSpecialties.length > 0 ? (clientSpecialties[clientIndex % clientSpecialties.length] ?? null) : null;
    const reqs = sampleRequirements(rng, cfg, prestige, spec);
    const task = makeTask(rng, cfg, prestige, idx, reqs, clientIndex);
    if (clientMults && clientIndex < clientMults.length) task.reward_funds_cents = Math.trunc(task.reward_funds_cents * (clientMults[clientIndex] as number));
    out.push(task);
  }
  return out;
}

let replenishRng: PyRandom | null = null;

/** Reference `generate_replacement_task`: same prestige, the replaced client's specialties, no client multiplier. */
export function generateReplacementTask(runSeed: number, counter: number, prestige: number, clientIndex: number, cfg: WorldConfig, specialties: readonly Domain[] | null): GenTask {
  // A module-level generator reseeded per call: the stream is dropped when this returns, and nothing here re-enters.
  const rng = (replenishRng = restream(replenishRng, runSeed, `replenish_${counter}`));
  const reqs = sampleRequirements(rng, cfg, prestige, specialties);
  return makeTask(rng, cfg, prestige, counter, reqs, clientIndex);
}

/** A whole generated world in the golden-file format. */
export interface GeneratedWorld {
  seed: number;
  employees: GenEmployee[];
  clients: GenClient[];
  market: GenTask[];
}

/** Generate employees, clients (fixed seed) and the market (run seed) for a preset. */
export function generateWorld(seed: number, cfg: WorldConfig): GeneratedWorld {
  const employees = generateEmployees(FIXED_WORLD_SEED, cfg.num_employees, cfg);
  const clients = generateClients(FIXED_WORLD_SEED, cfg.num_clients, cfg);
  const market = generateTasks(
    seed,
    cfg.num_market_tasks,
    cfg,
    clients.length > 0 ? clients.map((c) => c.specialty_domains) : null,
    clients.length > 0 ? clients.map((c) => c.reward_multiplier) : null,
  );
  return { seed, employees, clients, market };
}
