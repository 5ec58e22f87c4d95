/**
 * The paper's greedy baseline written against the Discrete action frame (src/env/discrete.ts): it reads only
 * the numeric observation, the mask and the spec's names. A planned task gets every employee, then is
 * dispatched; while a task is active it resumes; otherwise it accepts the best-reward browsable task (market
 * slot 0); with nothing to do it sends the fallback `resume`. Its commands are the state-changing commands of
 * the golden `greedy` trajectories, in the same order.
 */
import type { DiscreteSpec } from '../src/core.js';

/** Index lookups of a spec, built once per spec. */
export class DiscreteGreedy {
  private readonly feature: Map<string, number>;
  private readonly action: Map<string, number>;

  constructor(private readonly spec: DiscreteSpec) {
    this.feature = new Map(spec.feature_names.map((n, i) => [n, i]));
    this.action = new Map(spec.action_names.map((n, i) => [n, i]));
  }

  private f(obs: readonly number[], name: string): number {
    const i = this.feature.get(name);
    if (i === undefined) throw new Error(`no feature ${name}`);
    return obs[i] as number;
  }

  private a(name: string): number {
    const i = this.action.get(name);
    if (i === undefined) throw new Error(`no action ${name}`);
    return i;
  }

  /** The next action index. */
  act(obs: readonly number[], mask: readonly boolean[]): number {
    const E = this.spec.employees.length;
    let active = false;
    for (let j = 0; j < this.spec.task_slots; j++) {
      if (this.f(obs, `task[${j}].planned`) === 1) {
        let assigned = 0;
        for (let e = 0; e < E; e++) assigned += this.f(obs, `task[${j}].assigned[${e}]`);
        const a = assigned === 0 ? this.a(`task[${j}].assign_all`) : this.a(`task[${j}].dispatch`);
        if (mask[a]) return a;
      }
      if (this.f(obs, `task[${j}].active`) === 1) active = true;
    }
    if (active) return this.a('resume');
    const accept = this.a('accept[0]');
    return mask[accept] ? accept : this.a('resume');
  }
}
