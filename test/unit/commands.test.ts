import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { COMMANDS } from '../../src/sim/commands/spec.js';
import { Simulation } from '../../src/sim/simulation.js';

const cfg = loadPreset('default');
const fresh = () => Simulation.create(cfg, { seed: 1 });
const run = (sim: Simulation, c: string) => {
  const r = sim.execute(c);
  return { exit: r.exit, value: r.value as Record<string, unknown>, text: r.text };
};

describe('command line parsing', () => {
  it('accepts the yc-bench prefix, shell quoting and --opt=value', () => {
    const sim = fresh();
    expect(run(sim, 'yc-bench market browse --limit=2').value['limit']).toBe(2);
    expect(run(sim, `scratchpad write --content "two words 'quoted'"`).value['content']).toBe("two words 'quoted'");
    expect(run(sim, "scratchpad append --content 'line two'").value['content']).toBe("two words 'quoted'\nline two");
  });
  it('usage errors exit 2 with a clear message and change nothing', () => {
    const sim = fresh();
    const cases: [string, string][] = [
      ['', 'Missing command.'],
      ['bogus', "No such command 'bogus'."],
      ['task frobnicate', "No such command 'frobnicate'."],
      // Object.prototype's keys are no groups (click: No such command)
      ['constructor', "No such command 'constructor'."],
      ['toString --help', "No such command 'toString'."],
      ['__proto__ status', "No such command '__proto__'."],
      ['hasOwnProperty x', "No such command 'hasOwnProperty'."],
      ['task accept', "Missing option '--task-id'."],
      ['task accept --task-id', "Option '--task-id' requires an argument."],
      ['market browse --limit ten', "Invalid value for '--limit': 'ten' is not a valid integer."],
      ['market browse --domain art', "Invalid value for '--domain': 'art' is not one of 'research', 'inference', 'data_environment', 'training'."],
      ['company status --verbose', 'No such option: --verbose'],
      ['sim resume now', 'Got unexpected extra argument (now)'],
      ['task accept --task-id "Task-1', 'Could not parse command: '],
      ['finance ledger --from 2025-01-01', 'Invalid value: Invalid date format: 2025-01-01. Use MM/DD/YYYY.'],
    ];
    for (const [cmd, msg] of cases) {
      const r = run(sim, cmd);
      expect(r.exit, cmd).toBe(2);
      expect(String(r.value['error']), cmd).toContain(msg);
    }
    expect(sim.state.tasks.every((t) => t.status === 'market')).toBe(true);
  });
  it('--help works on every command and group', () => {
    const sim = fresh();
    for (const c of COMMANDS) {
      const r = sim.execute(`${c.group} ${c.name} --help`);
      expect(r.exit).toBe(0);
      expect(r.text).toContain(`Usage: yc-bench ${c.group} ${c.name} [OPTIONS]`);
      for (const o of c.options) expect(r.text).toContain(o.flag);
    }
    expect(sim.execute('task --help').text).toContain('accept');
    expect(sim.execute('--help').text).toContain('scratchpad');
  });
  it('over-long commands and oversized scratchpads are rejected with the limit in the message', () => {
    const sim = Simulation.create(cfg, { seed: 1 }, { maxCommandChars: 100, maxScratchpadChars: 10 });
    expect(run(sim, `scratchpad write --content ${'x'.repeat(200)}`).value['error']).toMatch(/Command too long: \d+ characters \(limit 100\)/);
    expect(run(sim, 'scratchpad write --content 0123456789A').value['error']).toMatch(/exceed 10 characters/);
    expect(sim.state.scratchpad).toBe('');
  });
});

describe('reference error texts', () => {
  it('task accept / assign / dispatch / inspect', () => {
    const sim = fresh();
    expect(run(sim, 'task accept --task-id Task-99999').value).toEqual({ error: "Task 'Task-99999' not found." });
    const hard = sim.state.tasks.find((t) => t.requiredPrestige > 1)!;
    expect(run(sim, `task accept --task-id ${hard.title}`).value['error']).toMatch(/^Company prestige in \w+ \(1\.0\) does not meet task requirement \(\d\)\.$/);
    expect(run(sim, 'task assign --task-id Task-1 --employees Emp_1').value).toEqual({ error: 'Task Task-1 must be planned or active to assign (current: market).' });
    expect(run(sim, 'task dispatch --task-id Task-1').value).toEqual({ error: 'Task Task-1 must be planned to dispatch (current: market).' });
    run(sim, 'task accept --task-id Task-1');
    expect(run(sim, 'task accept --task-id Task-1').value).toEqual({ error: 'Task Task-1 is not in market status (current: planned).' });
    expect(run(sim, 'task dispatch --task-id Task-1').value).toEqual({ error: 'No employees assigned. Use `task assign-all` or `task assign --employee-id Emp_1` first.' });
    expect(run(sim, 'task assign --task-id Task-1 --employees Emp_1,Emp_404').value).toEqual({ error: "Employee 'Emp_404' not found." });
    expect(sim.state.tasks[0]!.assignments).toHaveLength(0); // the partial assign was rolled back
    expect(run(sim, 'task assign-all --task-id Task-1').value['error']).toMatch(/^assign-all is not available/);
    expect(run(sim, 'sim resume').value['error']).toMatch(/^No active tasks\./);
    expect(run(sim, 'task list --status bogus').value['error']).toBe("Invalid status: bogus. Valid: ['market', 'planned', 'active', 'completed_success', 'completed_fail', 'cancelled']");
    expect(run(sim, 'finance ledger --category nope').value['error']).toBe("Invalid category: nope. Valid: ['monthly_payroll', 'task_reward', 'task_fail_penalty', 'task_cancel_penalty', 'payment_dispute']");
    expect(run(sim, 'sim init --seed 2 --start-date 01/01/2025 --company-name X').value['error']).toBe('A simulation already exists. Only one simulation per database is supported.');
  });
  it('trust-gated tasks are hidden from the market and refused on accept', () => {
    const sim = fresh();
    const gated = sim.state.tasks.find((t) => t.requiredTrust > 0 && t.requiredPrestige === 1)!;
    const browse = run(sim, 'market browse --limit 500').value['tasks'] as { task_id: string }[];
    expect(browse.some((t) => t.task_id === gated.title)).toBe(false);
    expect(run(sim, `task accept --task-id ${gated.title}`).value['error']).toMatch(/^Client trust with .+ \(0\.0\) does not meet task requirement \(\d\)\.$/);
  });
  it('errors print as compact JSON like the reference (json.dumps without indent)', () => {
    expect(fresh().execute('task accept --task-id X').text).toBe('{"error": "Task \'X\' not found."}');
  });
});

describe('market browse', () => {
  it('sorts by reward, paginates with offset/limit, reports the page length as total (reference quirk)', () => {
    const sim = fresh();
    const all = run(sim, 'market browse --limit 1000').value['tasks'] as { reward_funds_cents: number; task_id: string }[];
    expect(all.map((t) => t.reward_funds_cents)).toEqual([...all.map((t) => t.reward_funds_cents)].sort((a, b) => b - a));
    const page = run(sim, 'market browse --limit 5 --offset 3').value;
    expect(page['total']).toBe(5);
    expect((page['tasks'] as { task_id: string }[]).map((t) => t.task_id)).toEqual(all.slice(3, 8).map((t) => t.task_id));
    const corrected = Simulation.create(loadPreset('corrected'), { seed: 1 });
    expect(run(corrected, 'market browse --limit 5').value['total']).toBe(all.length);
  });
  it('filters by domain and minimum reward', () => {
    const sim = fresh();
    const r = run(sim, 'market browse --domain training --reward-min-cents 1000000 --limit 100').value['tasks'] as {
      reward_funds_cents: number;
      requirements: { domain: string }[];
    }[];
    expect(r.length).toBeGreaterThan(0);
    for (const t of r) {
      expect(t.reward_funds_cents).toBeGreaterThanOrEqual(1000000);
      expect(t.requirements.some((q) => q.domain === 'training')).toBe(true);
    }
  });
});

describe('task cancel', () => {
  it('faithful mode: a clear error, nothing changes (the reference crashes on SQLite)', () => {
    const sim = fresh();
    run(sim, 'task accept --task-id Task-1');
    const before = JSON.stringify(sim.snapshot());
    const r = run(sim, 'task cancel --task-id Task-1 --reason "changed plans"');
    expect(r.exit).toBe(1);
    expect(String(r.value['error'])).toContain('fixes.task_cancel');
    expect(JSON.stringify(sim.snapshot())).toBe(before);
  });
  it('corrected mode: prestige -1.5 x delta, trust penalty, events dropped, peers re-planned', () => {
    const sim = Simulation.create(loadPreset('corrected'), { seed: 1 });
    run(sim, 'task accept --task-id Task-8');
    run(sim, 'task assign --task-id Task-8 --employees Emp_4');
    run(sim, 'task dispatch --task-id Task-8');
    expect(sim.state.events.some((e) => e.taskId === 7)).toBe(true);
    const r = run(sim, 'task cancel --task-id Task-8 --reason test');
    expect(r.exit).toBe(0);
    expect(r.value['status']).toBe('cancelled');
    expect(r.value['cancel_penalty_per_domain']).toBe(0.3825);
    expect(sim.state.events.some((e) => e.taskId === 7)).toBe(false);
    expect(sim.state.prestige.research.toString()).toBe('1');
    expect(run(sim, 'company status').value['tasks']).toEqual({ active: 0, planned: 0, completed: 0, cancelled: 1 });
  });
});

describe('finance ledger and report monthly', () => {
  it('filters by date and category; report monthly is empty unless fixed', () => {
    const sim = fresh();
    run(sim, 'task accept --task-id Task-1');
    run(sim, 'task assign --task-id Task-1 --employees Emp_1');
    run(sim, 'task dispatch --task-id Task-1');
    for (let i = 0; i < 6; i++) run(sim, 'sim resume');
    const all = run(sim, 'finance ledger').value;
    const feb = run(sim, 'finance ledger --from 02/01/2025 --to 02/28/2025 --category monthly_payroll').value;
    expect((all['entries'] as unknown[]).length).toBeGreaterThan(0);
    expect(feb['count']).toBe(8);
    expect(run(sim, 'report monthly').value).toEqual({ count: 0, months: [] });
    const fixed = Simulation.restore({ ...sim.snapshot(), config: loadPreset('corrected') });
    const months = run(fixed, 'report monthly').value['months'] as { ending_funds_cents: number }[];
    expect(months.at(-1)?.ending_funds_cents).toBe(fixed.state.fundsCents);
  });
});
