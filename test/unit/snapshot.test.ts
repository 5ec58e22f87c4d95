import { describe, expect, it } from 'vitest';
import { Env } from '../../src/env/env.js';
import { validateSimSnapshot } from '../../src/env/snapshot.js';

function live() {
  const env = new Env();
  env.reset({ seed: 2 });
  for (const c of ['task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1,Emp_2', 'task dispatch --task-id Task-1', 'sim resume']) env.step(c);
  return env;
}

describe('snapshot validation at the boundary', () => {
  it('accepts a real snapshot and continues identically after a JSON round trip', () => {
    const env = live();
    const snap = JSON.parse(JSON.stringify(env.snapshot())) as ReturnType<Env['snapshot']>;
    const copy = new Env();
    copy.restore(snap);
    for (const c of ['market browse --limit 3', 'task accept --task-id Task-2', 'sim resume']) expect(copy.step(c)).toEqual(env.step(c));
  });
  const corruptions: [string, (s: Record<string, any>) => void, RegExp][] = [
    ['non-integer funds', (s) => (s.state.fundsCents = 1.5), /fundsCents/],
    ['funds inconsistent with the ledger', (s) => (s.state.fundsCents += 1), /ledger/],
    ['a decimal that is not a number', (s) => (s.state.prestige.research = 'abc'), /prestige\/research/],
    ['unknown task status', (s) => (s.state.tasks[0].status = 'done'), /status/],
    ['dangling employee reference', (s) => (s.state.tasks[0].assignments = [{ employeeId: 99, assignedAt: 0 }]), /employeeId/],
    ['completed above required', (s) => (s.state.tasks[0].reqs[0].completed = '999999'), /completed <= required/],
    ['an unknown field', (s) => (s.state.extra = 1), /additional/],
    ['a broken config', (s) => (s.config.world.num_employees = 'many'), /config/],
    ['sim time past the horizon', (s) => (s.state.simTime = s.state.horizonEnd + 1), /simTime/],
  ];
  for (const [name, mutate, msg] of corruptions) {
    it(`rejects ${name}`, () => {
      const snap = JSON.parse(JSON.stringify(live().snapshot().sim)) as Record<string, any>;
      mutate(snap);
      expect(() => validateSimSnapshot(snap)).toThrow(msg);
    });
  }
});

describe('snapshot config maxima (issue 12, F2)', () => {
  // Attack: a 1 KB change to a real snapshot asked for a 3,000,000-task market; a restart of the episode (turn
  // protocol, bankruptcy) then generated it and the server died out of memory. Now the restore itself is refused.
  for (const [key, value] of [['num_market_tasks', 3_000_000], ['num_employees', 1_000_000], ['num_clients', 1_000_000]] as const) {
    it(`refuses ${key} = ${value} with a clear error naming the field`, () => {
      const snap = JSON.parse(JSON.stringify(live().snapshot().sim)) as Record<string, any>;
      snap.config.world[key] = value;
      expect(() => validateSimSnapshot(snap)).toThrow(new RegExp(`invalid snapshot config: .*/world/${key}: must be <= \\d+`));
    });
  }
  it('refuses a horizon of 10,000 years', () => {
    const snap = JSON.parse(JSON.stringify(live().snapshot().sim)) as Record<string, any>;
    snap.config.sim.horizon_years = 10_000;
    expect(() => validateSimSnapshot(snap)).toThrow(/\/sim\/horizon_years: must be <= 100/);
  });
});
