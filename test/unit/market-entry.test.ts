/**
 * Reused `market browse` entries (src/sim/commands/market-entry.ts) are exactly the entries built afresh: across
 * listings, across episodes on the same seed, and after a listed field of a task changed.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { toFloat, D } from '../../src/sim/py/decimal.js';
import type { Out } from '../../src/sim/py/pyjson.js';
import { Simulation } from '../../src/sim/simulation.js';
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
