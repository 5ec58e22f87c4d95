/**
 * The reference's rollout JSON (`results/yc_bench_result_<config>_<seed>_<slug>.json`, written by
 * `scripts/bot_runner.py` with `runner/extract.py`'s `extract_time_series`), rebuilt from a finished
 * simulation so that the reference's plotting scripts can read ycgym runs.
 */
import { clientsByName, DOMAINS_ALPHA, isoformat, outcome, pyPow, pyRound, type Simulation, type Task, toFloat } from '../sim/index.js';
import { ADVERSARIAL_LOYALTY } from './rollout.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function byCompletion(sim: Simulation): Task[] {
  return sim.state.tasks
    .filter((t) => t.owned && t.completedAt !== null && (t.status === 'completed_success' || t.status === 'completed_fail'))
    .sort((a, b) => (a.completedAt as number) - (b.completedAt as number) || a.id - b.id);
}

function byAcceptance(sim: Simulation): Task[] {
  return sim.state.tasks.filter((t) => t.owned).sort((a, b) => (a.acceptedAt ?? 0) - (b.acceptedAt ?? 0) || a.id - b.id);
}

/** `extract_time_series` of the reference, from the simulation state. */
export function extractTimeSeries(sim: Simulation): { [k: string]: Json } {
  const s = sim.state;
  const w = sim.cfg.world;
  const ledgerSorted = [...s.ledger].sort((a, b) => a.at - b.at || a.id - b.id);
  const ledger: Json[] = ledgerSorted.map((e) => ({ time: isoformat(e.at), category: e.category, amount_cents: e.amountCents }));
  const totalDelta = ledgerSorted.reduce((a, e) => a + e.amountCents, 0);
  let running = s.fundsCents - totalDelta;
  const funds: Json[] = [];
  const first = ledgerSorted[0];
  if (first) funds.push({ time: isoformat(first.at), funds_cents: running, event: 'start' });
  for (const e of ledgerSorted) {
    running += e.amountCents;
    funds.push({ time: isoformat(e.at), funds_cents: running, event: e.category });
  }

  const completed = byCompletion(sim);
  const domains = [...DOMAINS_ALPHA];
  const levels: Record<string, number> = {};
  for (const d of domains) levels[d] = w.initial_prestige_level;
  const prestige: Json[] = [];
  let last: number | null = null;
  const firstDone = completed[0];
  if (firstDone) {
    for (const d of domains) prestige.push({ time: isoformat(firstDone.completedAt as number), domain: d, level: pyRound(levels[d] as number, 4) });
    last = firstDone.completedAt;
  }
  for (const t of completed) {
    const at = t.completedAt as number;
    if (last !== null && at > last) {
      const decay = w.prestige_decay_per_day * ((at - last) / 1e6 / 86400);
      for (const d of domains) levels[d] = Math.max(w.prestige_min, (levels[d] as number) - decay);
    }
    const delta = toFloat(t.rewardPrestigeDelta);
    for (const r of t.reqs) {
      const cur = levels[r.domain] as number;
      levels[r.domain] = t.status === 'completed_success' ? Math.min(w.prestige_max, cur + delta) : Math.max(w.prestige_min, cur - w.penalty_fail_multiplier * delta);
      prestige.push({ time: isoformat(at), domain: r.domain, level: pyRound(levels[r.domain] as number, 4) });
    }
    last = at;
  }

  const byName = clientsByName(s.clients);
  const trust: Record<number, number> = {};
  for (const c of byName) trust[c.id] = 0;
  const clientTrust: Json[] = [];
  const withClient = completed.filter((t) => t.clientId !== null);
  let lastT: number | null = null;
  const firstC = withClient[0];
  if (firstC) {
    for (const c of byName) clientTrust.push({ time: isoformat(firstC.completedAt as number), client_name: c.name, trust_level: 0.0, loyalty: c.loyalty });
    lastT = firstC.completedAt;
  }
  for (const t of withClient) {
    const at = t.completedAt as number;
    const cid = t.clientId as number;
    if (lastT !== null && at > lastT) {
      const decay = w.trust_decay_per_day * ((at - lastT) / 1e6 / 86400);
      for (const c of byName) trust[c.id] = Math.max(w.trust_min, (trust[c.id] as number) - decay);
    }
    const cur = trust[cid] as number;
    if (t.status === 'completed_success') trust[cid] = Math.min(w.trust_max, cur + w.trust_gain_base * pyPow(1 - cur / w.trust_max, w.trust_gain_diminishing_power));
    else trust[cid] = Math.max(w.trust_min, cur - w.trust_fail_penalty);
    const c = s.clients[cid];
    clientTrust.push({ time: isoformat(at), client_name: c ? c.name : null, trust_level: pyRound(trust[cid] as number, 4), loyalty: c ? c.loyalty : 0.0 });
    lastT = at;
  }

  const owned = byAcceptance(sim);
  const iso = (t: number | null): Json => (t === null ? null : isoformat(t));
  const tasks: Json[] = owned.map((t) => ({
    task_id: sim.uuid('task', t.id),
    title: t.title,
    client_name: t.clientId !== null ? (s.clients[t.clientId]?.name ?? null) : null,
    required_prestige: t.requiredPrestige,
    required_trust: t.requiredTrust,
    reward_funds_cents: t.rewardCents,
    advertised_reward_cents: t.advertisedRewardCents || t.rewardCents,
    reward_prestige_delta: toFloat(t.rewardPrestigeDelta),
    status: t.status,
    accepted_at: iso(t.acceptedAt),
    deadline: iso(t.deadline),
    completed_at: iso(t.completedAt),
    domains: t.reqs.map((r) => r.domain),
    success: t.success,
  }));
  const employees: Json[] = s.employees.map((e) => {
    const rates: { [k: string]: Json } = {};
    for (const d of DOMAINS_ALPHA) rates[d] = pyRound(toFloat(e.rates[d]), 4);
    return { name: e.name, tier: e.tier, salary_cents: e.salaryCents, skill_rates: rates };
  });
  const assignments: Json[] = owned.map((t) => {
    const names = t.assignments.map((a) => s.employees[a.employeeId]?.name ?? 'unknown');
    return { task_title: t.title, status: t.status, employees_assigned: names, num_assigned: names.length, accepted_at: iso(t.acceptedAt), completed_at: iso(t.completedAt), success: t.success };
  });
  const clients: Json[] = s.clients.map((c) => ({
    name: c.name,
    loyalty: pyRound(c.loyalty, 4),
    is_rat: c.loyalty < ADVERSARIAL_LOYALTY,
    tier: c.tier,
    specialty_domains: [...c.specialties],
    final_trust: pyRound(toFloat(c.trust), 4),
  }));
  return {
    funds,
    prestige,
    tasks,
    ledger,
    client_trust: clientTrust,
    employees,
    assignments,
    clients,
    scratchpad: s.scratchpad ? s.scratchpad : null,
    config: {
      num_employees: w.num_employees,
      num_clients: w.num_clients,
      initial_funds_cents: w.initial_funds_cents,
      salary_bump_pct: w.salary_bump_pct,
      trust_build_rate: w.trust_build_rate,
      trust_gating_fraction: w.trust_gating_fraction,
      trust_gated_reward_boost: w.trust_gated_reward_boost,
      trust_work_reduction_max: w.trust_work_reduction_max,
      loyalty_rat_fraction: w.loyalty_rat_fraction,
      loyalty_severity: w.loyalty_severity,
      penalty_fail_funds_pct: w.penalty_fail_funds_pct,
      deadline_min_biz_days: w.deadline_min_biz_days,
      deadline_qty_per_day: w.deadline_qty_per_day,
      prestige_decay_per_day: w.prestige_decay_per_day,
      reward_prestige_scale: w.reward_prestige_scale,
      skill_rate_max: w.skill_rate_max,
      market_browse_default_limit: w.market_browse_default_limit,
    },
  };
}

/** The whole result document, in the shape bot_runner writes (`terminal_reason` "bankrupt" or "horizon_end"). */
export function toRolloutJson(sim: Simulation, policy: string, seed: number, turns: number): { [k: string]: Json } {
  const end = outcome(sim.state);
  const reason = end.reason === 'bankruptcy' ? 'bankrupt' : (end.reason ?? 'truncated');
  return {
    session_id: `bot-${seed}-${policy}`,
    model: policy,
    seed,
    horizon_years: sim.cfg.sim.horizon_years,
    turns_completed: turns,
    terminal: reason !== 'truncated',
    terminal_reason: reason,
    terminal_detail: reason,
    total_cost_usd: 0,
    time_series: extractTimeSeries(sim),
  };
}
