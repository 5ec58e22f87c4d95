/**
 * The paper's greedy baseline, played through the public command interface exactly as the golden
 * `greedy` trajectories do: with no active task, browse, accept the best-reward browsable task,
 * assign every employee, dispatch; then `sim resume` until bankruptcy or the horizon.
 */
import { arr, employees, episodeOver, fields, num, str } from './obs.js';
import type { MarketBrowseResult, MarketTaskRow, Policy, PolicyObservation, TaskListResult } from '../src/core.js';

/** Greedy: one task at a time, all employees, highest listed reward first. */
export class GreedyPolicy implements Policy {
  readonly name = 'greedy';
  private queue: string[] = [];
  private employees: string[] = [];
  private phase: 'start' | 'check' | 'browse' | 'resume' | 'final' | 'done' = 'start';

  reset(): void {
    this.queue = [];
    this.employees = [];
    this.phase = 'start';
  }

  act(obs: PolicyObservation): string | null {
    const out = obs.lastOutput;
    if (this.queue.length > 0) return this.queue.shift() as string;
    switch (this.phase) {
      case 'start':
        this.phase = 'check';
        return 'employee list';
      case 'check':
        if (obs.lastCommand === 'employee list' && out) {
          // pushed, not `.map`: optimised, `.map` builds a holey array and the code reading it deoptimises (src/sim/py/packed.ts)
          const names: string[] = [];
          for (const e of employees(out)) names.push(e.name);
          this.employees = names;
        }
        if (obs.lastCommand === 'sim resume' && episodeOver(out)) {
          this.phase = 'done';
          this.queue = ['client history', 'employee list', 'finance ledger'];
          return 'company status';
        }
        this.phase = 'browse';
        return 'task list --status active';
      case 'browse': {
        const count = num(fields<TaskListResult>(out)?.count);
        if (count > 0) {
          this.phase = 'check';
          return 'sim resume';
        }
        this.phase = 'resume';
        return 'market browse --limit 200';
      }
      case 'resume': {
        // Only the first (highest-reward) task is read: greedy browses after every task.
        const best = fields<MarketTaskRow>(arr(fields<MarketBrowseResult>(out)?.tasks)[0]);
        this.phase = 'check';
        if (!best) return 'sim resume';
        const id = str(best.task_id);
        this.queue = [`task assign --task-id ${id} --employees ${this.employees.join(',')}`, `task dispatch --task-id ${id}`, 'sim resume'];
        return `task accept --task-id ${id}`;
      }
      case 'final':
      case 'done':
        return null;
    }
  }
}
