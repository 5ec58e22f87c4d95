import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { listPresets, loadPreset, presetBase } from '../../src/config/load.js';
import { presetRows, presetTable } from '../../src/cli/presets.js';
import { rollout } from '../../src/export/rollout.js';

const HISTORICAL = ['tutorial', 'easy', 'medium', 'hard', 'nightmare', 'fast_test', 'high_reward'] as const;

// The reference's presets at its commit 97b1bdb, resolved by that commit's loader on that commit's default.toml
// (facts read from the reference; the seed-1 worlds are checked field by field in test/golden/world.test.ts).
const RESOLVED: Record<(typeof HISTORICAL)[number], { years: number; employees: number; clients: number; tasks: number; funds: number; autoAdvance: number; maxTurns: number | null; deadlineQty: number; milestones: number[] }> = {
  tutorial: { years: 1, employees: 10, clients: 8, tasks: 200, funds: 25_000_000, autoAdvance: 5, maxTurns: null, deadlineQty: 50, milestones: [0.25, 0.5, 0.75] },
  easy: { years: 1, employees: 10, clients: 8, tasks: 200, funds: 20_000_000, autoAdvance: 8, maxTurns: null, deadlineQty: 100, milestones: [0.25, 0.5, 0.75] },
  medium: { years: 1, employees: 8, clients: 6, tasks: 200, funds: 20_000_000, autoAdvance: 5, maxTurns: null, deadlineQty: 150, milestones: [] },
  hard: { years: 1, employees: 10, clients: 8, tasks: 200, funds: 20_000_000, autoAdvance: 10, maxTurns: null, deadlineQty: 220, milestones: [0.25, 0.5, 0.75] },
  nightmare: { years: 1, employees: 10, clients: 8, tasks: 200, funds: 8_000_000, autoAdvance: 10, maxTurns: null, deadlineQty: 220, milestones: [0.25, 0.5, 0.75] },
  fast_test: { years: 1, employees: 10, clients: 8, tasks: 200, funds: 15_000_000, autoAdvance: 5, maxTurns: 50, deadlineQty: 150, milestones: [0.25, 0.5, 0.75] },
  high_reward: { years: 3, employees: 10, clients: 8, tasks: 1000, funds: 15_000_000, autoAdvance: 10, maxTurns: null, deadlineQty: 200, milestones: [0.25, 0.5, 0.75] },
};

describe('historical presets (reference commit 97b1bdb)', () => {
  it('all seven ship, each on the 2026q1 base (the reference default of that commit)', () => {
    const names = listPresets();
    for (const p of HISTORICAL) {
      expect(names).toContain(p);
      expect(presetBase(p)).toBe('default-2026q1');
    }
    const base = loadPreset('default-2026q1');
    expect([base.sim.horizon_years, base.world.num_employees, base.world.num_clients, base.world.initial_funds_cents]).toEqual([3, 10, 8, 15_000_000]);
    // Not today's default, which is a different world.
    const today = loadPreset('default');
    expect([today.sim.horizon_years, today.world.num_employees, today.world.num_clients, today.world.initial_funds_cents]).toEqual([1, 8, 6, 20_000_000]);
  });

  it.each(HISTORICAL)('%s resolves to the reference values', (p) => {
    const c = loadPreset(p);
    const r = RESOLVED[p];
    expect(c.name).toBe(p);
    expect(c.sim.horizon_years).toBe(r.years);
    expect(c.world.num_employees).toBe(r.employees);
    expect(c.world.num_clients).toBe(r.clients);
    expect(c.world.num_market_tasks).toBe(r.tasks);
    expect(c.world.initial_funds_cents).toBe(r.funds);
    expect(c.loop.auto_advance_after_turns).toBe(r.autoAdvance);
    expect(c.loop.max_turns).toBe(r.maxTurns);
    expect(c.world.deadline_qty_per_day).toBe(r.deadlineQty);
    expect(c.world.task_progress_milestones).toEqual(r.milestones);
    expect(Object.values(c.fixes).every((on) => on === false)).toBe(true);
  });

  // high_reward, seed 1: greedy livelocks after some years of play (its best-listed task is a replacement that
  // `market browse` shows at prestige 1 while `task accept` requires 5, and `sim resume` with nothing active
  // does not advance time), so its episode is capped; every other preset ends at the horizon or in bankruptcy.
  it.each(HISTORICAL)('%s: a full greedy episode plays to its end, deterministically', (p) => {
    const cfg = loadPreset(p);
    const maxSteps = p === 'high_reward' ? 4_000 : 100_000;
    const play = () => rollout(cfg, makePolicy('greedy'), { runId: 'r', episodeId: 0, policy: 'greedy', preset: p, seed: 1 }, { maxSteps }).episode;
    const a = play();
    expect(p === 'high_reward' ? ['truncated'] : ['horizon_end', 'bankruptcy']).toContain(a.outcome);
    expect(a.tasks_succeeded + a.tasks_failed).toBeGreaterThan(0);
    expect(play()).toEqual(a);
  });
});

describe('ycgym presets', () => {
  it('lists every built-in preset with its description and key numbers', () => {
    const rows = presetRows();
    expect(rows.map((r) => r.name)).toEqual(listPresets());
    for (const r of rows) expect(r.description.length).toBeGreaterThan(10);
    const table = presetTable(rows);
    expect(table).toContain('| nightmare | default-2026q1 | 1 | 10 | 8 | 200 | $80,000 | - | - |');
    expect(table).toContain('| corrected | default | 1 | 8 | 6 | 200 | $200,000 | - | 10 on |');
  });

  it('the CLI lists them; --config is an alias of --preset, and giving both is an error', () => {
    const cli = 'dist/src/cli/main.js';
    const json = JSON.parse(execFileSync('node', [cli, 'presets', '--json'], { encoding: 'utf8' })) as { name: string }[];
    expect(json.map((r) => r.name)).toEqual(listPresets());
    const viaConfig = execFileSync('node', [cli, 'world', '--seed', '2', '--config', 'hard'], { encoding: 'utf8' });
    const viaPreset = execFileSync('node', [cli, 'world', '--seed', '2', '--preset', 'hard'], { encoding: 'utf8' });
    expect(viaConfig).toBe(viaPreset);
    expect(viaConfig).not.toBe(execFileSync('node', [cli, 'world', '--seed', '2'], { encoding: 'utf8' }));
    expect(() => execFileSync('node', [cli, 'world', '--seed', '2', '--config', 'hard', '--preset', 'easy'], { stdio: 'pipe' })).toThrow(/cannot be used with/);
  });
});
