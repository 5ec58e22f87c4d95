/**
 * advanceTime leaves the task of the completion it is about to handle out of the progress flush before it
 * (src/sim/model/engine.ts flushProgress, `completing`): handleTaskComplete sets that task's progress to its required
 * amounts first, so the flush was never read. Checked here on states with several active tasks sharing employees
 * (their rates split), at several instants: flushing with the skip, then completing, leaves the same simulation as
 * flushing every task, then completing (the whole snapshot compared), for each active task as the completing one;
 * and the other tasks' flushed progress is the same with and without the skip. The end-to-end runs (parity goldens,
 * test/golden) cover advanceTime passing the right task.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { activeTasks, flushProgress } from '../../src/sim/model/engine.js';
import { Simulation } from '../../src/sim/simulation.js';

function completeReqs(sim: Simulation, id: number): void {
  for (const r of sim.state.tasks[id]!.reqs) r.completed = r.required;
}

function progress(sim: Simulation): string[] {
  return activeTasks(sim.state).map((t) => `${t.id}:${t.reqs.map((r) => `${r.domain}=${r.completed.toString()}`).join(',')}`);
}

let moved = 0;

function check(sim: Simulation, spans: number[]): number {
  let compared = 0;
  const t0 = sim.state.simTime;
  for (const hours of spans) {
    const t1 = t0 + hours * 3_600_000_000;
    for (const t of activeTasks(sim.state)) {
      const all = sim.clone();
      const skipping = sim.clone();
      flushProgress({ state: all.state, cfg: all.cfg }, t0, t1);
      flushProgress({ state: skipping.state, cfg: skipping.cfg }, t0, t1, t.id);
      // the other tasks' progress is flushed alike; the completing task's is left as it was
      expect(progress(skipping).filter((p) => !p.startsWith(`${t.id}:`))).toEqual(progress(all).filter((p) => !p.startsWith(`${t.id}:`)));
      expect(skipping.state.tasks[t.id]!.reqs.map((r) => r.completed.toString())).toEqual(t.reqs.map((r) => r.completed.toString()));
      if (JSON.stringify(progress(all)) !== JSON.stringify(progress(sim))) moved++; // the flush moved something
      completeReqs(all, t.id);
      completeReqs(skipping, t.id);
      expect(JSON.stringify(skipping.snapshot())).toBe(JSON.stringify(all.snapshot()));
      compared++;
    }
  }
  return compared;
}

describe('the completing task is left out of the flush before its completion', () => {
  it('changes nothing once the completion has set its progress, with rates split between tasks', () => {
    moved = 0;
    for (const preset of ['default', 'multi', 'corrected'] as const) {
      const sim = Simulation.create(loadPreset(preset), { seed: 3 });
      // three tasks, the employees shared between them (each works on two or three: rates split by k)
      const ids = ['Task-1', 'Task-2', 'Task-3', 'Task-4', 'Task-5', 'Task-6', 'Task-7', 'Task-8', 'Task-9', 'Task-10'];
      const accepted: string[] = [];
      for (const id of ids) {
        if (accepted.length === 3) break;
        if (sim.execute(`task accept --task-id ${id}`).exit === 0) accepted.push(id);
      }
      expect(accepted.length, preset).toBe(3);
      sim.execute(`task assign --task-id ${accepted[0]} --employees Emp_1,Emp_2,Emp_3`);
      sim.execute(`task assign --task-id ${accepted[1]} --employees Emp_2,Emp_3,Emp_4`);
      sim.execute(`task assign --task-id ${accepted[2]} --employees Emp_1,Emp_3,Emp_5`);
      for (const id of accepted) expect(sim.execute(`task dispatch --task-id ${id}`).exit, `${preset} ${id}`).toBe(0);
      expect(activeTasks(sim.state).length).toBe(3);
      let compared = check(sim, [0.5, 7, 30, 200]);
      // later instants, after some completions (fewer active tasks, one alone at the end)
      for (let i = 0; i < 3 && activeTasks(sim.state).length > 0; i++) {
        sim.execute('sim resume');
        compared += check(sim, [3, 50]);
      }
      expect(compared, preset).toBeGreaterThanOrEqual(12);
    }
    expect(moved).toBeGreaterThan(20);
  });
});
