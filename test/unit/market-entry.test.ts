/**
 * Reused `market browse` entries (src/sim/commands/market-entry.ts) are exactly the entries built afresh: across
 * listings, across episodes on the same seed, and after a listed field of a task changed.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { toFloat, D } from '../../src/sim/py/decimal.js';
import type { Out } from '../../src/sim/py/pyjson.js';
import { Simulation } from '../../src/sim/simulation.js';
import { marketEntry, worldEntries } from '../../src/sim/commands/market-entry.js';
import { DOMAINS } from '../../src/sim/index.js';
import type { Task } from '../../src/sim/model/types.js';
import { oraclePyJsonDumps } from '../helpers/pyjson-oracle.js';

const cfg = loadPreset('default');

/** The listing entry of a task, built from its fields as the handler did before entries were reused. */
function fresh(sim: Simulation, t: Task): Out {
  return {
    task_id: t.title,
    client_name: t.clientId !== null ? (sim.state.clients[t.clientId]?.name ?? null) : null,
    required_prestige: t.requiredPrestige,
    required_trust: t.requiredTrust,
    reward_funds_cents: t.rewardCents,
    reward_prestige_delta: toFloat(t.rewardPrestigeDelta),
    skill_boost_pct: toFloat(t.skillBoostPct),
    requirements: t.reqs.map((r) => ({ domain: r.domain, required_qty: toFloat(r.required) })),
  };
}

function check(sim: Simulation): { tasks: Out[] } {
  const r = sim.execute('market browse --limit 200');
  const v = r.value as { tasks: Out[] };
  const byTitle = new Map(sim.state.tasks.filter((t) => t.status === 'market').map((t) => [t.title, t]));
  for (const e of v.tasks) expect(e).toEqual(fresh(sim, byTitle.get((e as { task_id: string }).task_id) as Task));
  expect(r.text).toBe(oraclePyJsonDumps(r.value, 2));
  return v;
}

describe('market browse entries', () => {
  it('are shared by the listings of two episodes on one seed, and equal fresh ones', () => {
    const a = Simulation.create(cfg, { seed: 11 });
    const b = Simulation.create(cfg, { seed: 11 });
    const la = check(a);
    const lb = check(b);
    expect(lb.tasks.length).toBeGreaterThan(0);
    expect(lb.tasks.every((e, i) => e === la.tasks[i])).toBe(true);
    for (const e of lb.tasks as { requirements: object[] }[]) {
      expect(Object.isFrozen(e) && Object.isFrozen(e.requirements) && e.requirements.every((r) => Object.isFrozen(r))).toBe(true);
    }
  });

  it('are rebuilt when a listed field changed (requirement, reward delta), in this episode and the next', () => {
    const a = Simulation.create(cfg, { seed: 12 });
    const before = check(a);
    const t = a.state.tasks.find((x) => x.title === (before.tasks[0] as { task_id: string }).task_id) as Task;
    (t.reqs[0] as { required: ReturnType<typeof D> }).required = D('1234');
    const after = check(a);
    expect(after.tasks[0]).not.toBe(before.tasks[0]);
    expect((after.tasks[0] as { requirements: { required_qty: number }[] }).requirements[0]?.required_qty).toBe(1234);
    const b = Simulation.create(cfg, { seed: 12 });
    const other = check(b); // the template's requirement again: not the edited entry
    expect(other.tasks[0]).toEqual(before.tasks[0]);
    (b.state.tasks[(t as Task).id] as { rewardPrestigeDelta: ReturnType<typeof D> }).rewardPrestigeDelta = D('0.5');
    check(b);
  });
});

describe('market browse entries shared by the episodes of one world', () => {
  const title = (e: Out) => (e as { task_id: string }).task_id;

  it('list exactly the fresh entries when two simulations of one world put different tasks at one id', () => {
    const a = Simulation.create(cfg, { seed: 13 });
    const b = Simulation.create(cfg, { seed: 13 });
    const first = check(a);
    check(b);
    // Each accepts another task: both append their replacement at the same id, from other templates.
    expect(a.execute(`task accept --task-id ${title(first.tasks[0] as Out)}`).ok).toBe(true);
    expect(b.execute(`task accept --task-id ${title(first.tasks[1] as Out)}`).ok).toBe(true);
    const id = a.state.tasks.length - 1;
    expect(b.state.tasks.length - 1).toBe(id);
    const ra = a.state.tasks[id] as Task;
    const rb = b.state.tasks[id] as Task;
    expect(fresh(a, ra)).not.toEqual(fresh(b, rb));
    for (let round = 0; round < 3; round++) {
      for (const [sim, rep] of [[a, ra], [b, rb]] as const) {
        const listed = check(sim);
        if (rep.status === 'market' && browsableTitle(sim, rep)) expect(listed.tasks.map(title)).toContain(rep.title);
      }
    }
  });

  it('are rebuilt when any requirement changes in place, the fifth and later ones included', () => {
    const a = Simulation.create(cfg, { seed: 14 });
    const before = check(a);
    const multi = a.state.tasks.find((x) => x.title === title(before.tasks[0] as Out)) as Task;
    // Every domain required (generated tasks mostly ask for fewer): each of the four inline requirements is compared.
    for (const d of DOMAINS) if (!multi.reqs.some((r) => r.domain === d)) multi.reqs.push({ domain: d, required: D(500), completed: D(0) });
    expect(check(a).tasks.find((e) => title(e) === multi.title)).toEqual(fresh(a, multi));
    for (let i = 0; i < multi.reqs.length; i++) {
      (multi.reqs[i] as { required: ReturnType<typeof D> }).required = D(7000 + i);
      const listed = check(a).tasks.find((e) => title(e) === multi.title) as { requirements: { required_qty: number }[] };
      expect(listed.requirements[i]?.required_qty).toBe(7000 + i);
    }
    // More requirements than domains (not generated, but a state may hold them): compared one by one as well.
    while (multi.reqs.length < 6) multi.reqs.push({ domain: 'research', required: D(300), completed: D(0) });
    check(a);
    (multi.reqs[5] as { required: ReturnType<typeof D> }).required = D(301);
    const listed = check(a).tasks.find((e) => title(e) === multi.title) as { requirements: { required_qty: number }[] };
    expect(listed.requirements.map((r) => r.required_qty).slice(4)).toEqual([300, 301]);
    (multi.reqs[5] as { domain: string }).domain = 'training';
    check(a);
  });
});

describe('a world\'s entries (marketEntry with WorldEntries)', () => {
  const nameOf = (sim: Simulation, t: Task): string | null => (t.clientId !== null ? (sim.state.clients[t.clientId]?.name ?? null) : null);
  const market = (sim: Simulation): Task[] => sim.state.tasks.filter((t) => t.status === 'market');

  it('episodes that list the same tasks at the same ids share the entries by id and build no index', () => {
    const w = worldEntries();
    const a = Simulation.create(cfg, { seed: 21 });
    const b = Simulation.create(cfg, { seed: 21 });
    const ea = market(a).map((t) => marketEntry(t, nameOf(a, t), w));
    const eb = market(b).map((t) => marketEntry(t, nameOf(b, t), w));
    expect(eb.every((e, i) => e === ea[i])).toBe(true);
    market(b).forEach((t, i) => expect(eb[i]).toEqual(fresh(b, t)));
    expect(w.byDelta).toBeNull();
  });

  it('once a slot did not fit, a task listed at another id than before gets its earlier entry, and every entry is the fresh one', () => {
    const w = worldEntries();
    const sim = Simulation.create(cfg, { seed: 22 });
    const [t1, t2, t3] = market(sim) as [Task, Task, Task];
    const e1 = marketEntry(t1, nameOf(sim, t1), w);
    const e2 = marketEntry(t2, nameOf(sim, t2), w);
    // Another episode of the world: t3's task at t1's id (the slot does not fit: the index is built), t1's at t2's id.
    const moved3 = { ...t3, id: t1.id };
    const e3 = marketEntry(moved3, nameOf(sim, t3), w);
    expect(e3).toEqual(fresh(sim, moved3));
    expect(w.byDelta).not.toBeNull();
    const moved1 = { ...t1, id: t2.id };
    expect(marketEntry(moved1, nameOf(sim, t1), w)).toBe(e1);
    // Back where they were: t1's slot now holds t3's entry, t2's entry is found in the index.
    expect(marketEntry(t2, nameOf(sim, t2), w)).toBe(e2);
    expect(marketEntry(t3, nameOf(sim, t3), w)).toBe(e3);
    // A listed field changed: not the indexed entry, the fresh one.
    const edited = { ...t2, id: t3.id, rewardCents: t2.rewardCents + 1 };
    const e4 = marketEntry(edited, nameOf(sim, t2), w);
    expect(e4).not.toBe(e2);
    expect(e4).toEqual(fresh(sim, edited));
  });
});

/** Whether `t` passes the listing's gates (browsed with every requirement's prestige and its client's trust). */
function browsableTitle(sim: Simulation, t: Task): boolean {
  const p = sim.state.prestige;
  if (!t.reqs.every((r) => Math.trunc(toFloat(p[r.domain])) >= t.requiredPrestige)) return false;
  const c = t.clientId !== null ? sim.state.clients[t.clientId] : undefined;
  return !(t.requiredTrust > 0 && c !== undefined && toFloat(c.trust) < t.requiredTrust);
}
