/**
 * The generated world in the golden-file format (`employees`, `clients`, `market`, `replacements`),
 * as printed by `ycgym world`.
 */
import { DOMAINS, F, generateReplacementTask, generateWorld, type GenTask, type Out, type WorldConfig } from '../sim/index.js';

/** Market slots whose first three replacement generations are included (the golden files' choice). */
export function replacementSlots(numTasks: number): number[] {
  return [...new Set([0, 1, 7, 42, numTasks - 1])].filter((s) => s >= 0 && s < numTasks).sort((a, b) => a - b);
}

function taskJson(t: GenTask, client: string | null): Out {
  const reqs: { [k: string]: Out } = {};
  for (const [d, q] of t.requirements) reqs[d] = q;
  return {
    title: t.title,
    client,
    required_prestige: t.required_prestige,
    reward_funds_cents: t.reward_funds_cents,
    reward_prestige_delta: F(t.reward_prestige_delta),
    skill_boost_pct: F(t.skill_boost_pct),
    required_trust: t.required_trust,
    requirements: reqs,
  };
}

/** Golden-format world of one run seed: generation-order employees and clients, slot-order market, sample replacements. */
export function worldJson(seed: number, w: WorldConfig): { [k: string]: Out } {
  const world = generateWorld(seed, w);
  const clientName = (i: number): string | null => (world.clients.length > 0 ? (world.clients[i % world.clients.length]?.name ?? null) : null);
  const byName = [...world.clients].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const replacements: Out[] = [];
  for (const slot of replacementSlots(world.market.length)) {
    const orig = world.market[slot] as GenTask;
    const client = world.clients.length > 0 ? world.clients[orig.client_index % world.clients.length] : undefined;
    const ci = client ? byName.indexOf(client) : 0;
    for (let gen = 0; gen < 3; gen++) {
      const counter = slot * 1000 + gen;
      const t = generateReplacementTask(seed, counter, orig.required_prestige, ci, w, client ? client.specialty_domains : null);
      const rc = byName.length > 0 ? (byName[t.client_index % byName.length]?.name ?? null) : null;
      replacements.push({ slot, generation: gen, replenish_counter: counter, task: taskJson(t, rc) });
    }
  }
  return {
    seed,
    employees: world.employees.map((e) => {
      const rates: { [k: string]: Out } = {};
      for (const d of DOMAINS) rates[d] = F(e.rates[d]);
      return { name: e.name, tier: e.tier, salary_cents: e.salary_cents, work_hours_per_day: F(e.work_hours_per_day), rates };
    }),
    clients: world.clients.map((c) => ({
      name: c.name,
      reward_multiplier: F(c.reward_multiplier),
      tier: c.tier,
      specialty_domains: [...c.specialty_domains],
      loyalty: F(c.loyalty),
      adversarial: c.adversarial,
    })),
    market: world.market.map((t) => taskJson(t, clientName(t.client_index))),
    replacements,
  };
}
