/**
 * The paper's greedy baseline, played through the public command interface exactly as the golden
 * `greedy` trajectories do: with no active task, browse, accept the best-reward browsable task,
 * assign every employee, dispatch; then `sim resume` until bankruptcy or the horizon.
 */
import type { Policy, PolicyObservation } from '../src/index.js';

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
    const out = obs.lastOutput as Record<string, unknown> | null;
    if (this.queue.length > 0) return this.queue.shift() as string;
    switch (this.phase) {
      case 'start':
        this.phase = 'check';
        return 'employee list';
      case 'check':
        if (obs.lastCommand === 'employee list' && out) {
          this.employees = ((out['employees'] as { name: string }[]) ?? []).map((e) => e.name);
        }
        if (obs.lastCommand === 'sim resume' && out && (out['bankrupt'] === true || out['horizon_reached'] === true)) {
          this.phase = 'done';
          this.queue = ['client history', 'employee list', 'finance ledger'];
          return 'company status';
        }
        this.phase = 'browse';
        return 'task list --status active';
      case 'browse': {
        const count = out ? Number(out['count'] ?? 0) : 0;
        if (count > 0) {
          this.phase = 'check';
          return 'sim resume';
        }
        this.phase = 'resume';
        return 'market browse --limit 200';
      }
      case 'resume': {
        const tasks = (out?.['tasks'] as { task_id: string }[] | undefined) ?? [];
        const best = tasks[0];
        this.phase = 'check';
        if (!best) return 'sim resume';
        const id = best.task_id;
        this.queue = [`task assign --task-id ${id} --employees ${this.employees.join(',')}`, `task dispatch --task-id ${id}`, 'sim resume'];
        return `task accept --task-id ${id}`;
      }
      case 'final':
      case 'done':
        return null;
    }
  }
}
