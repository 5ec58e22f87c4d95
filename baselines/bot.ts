/**
 * The reference's `scripts/bot_runner.py` strategies played through commands: one task at a time, every
 * employee assigned, then `sim resume` until the episode ends. Candidates are the browsable market
 * (prestige- and trust-gated, like the bot's own filter); hours are estimated the bot's way, from tier
 * averages (junior 2.0, mid 3.5, senior 5.0 units/h, summed over all employees, one task at a time).
 */
import { employees, episodeOver, fields, marketTasks, num, rec, type MarketTask } from './obs.js';
import type { CompanyStatusResult, Policy, PolicyObservation, TaskListResult } from '../src/core.js';

/** bot_runner's `_TIER_AVG_RATE`. */
export const TIER_AVG_RATE: Readonly<Record<string, number>> = { junior: 2.0, mid: 3.5, senior: 5.0 };

/** A candidate with bot_runner's estimated completion hours. */
export interface Candidate {
  task: MarketTask;
  /** Largest requirement quantity (the estimate is max over domains of qty / rate). */
  maxQty: number;
  /** Estimated hours: maxQty / Σ tier averages. */
  hours: number;
}

/** What a strategy knows when it picks. */
export interface PickContext {
  seed: number;
  /** bot_runner's loop counter (one per accept-or-advance iteration). */
  turn: number;
  /** Highest prestige level over the four domains (from `company status`). */
  maxPrestige: number;
}

/** First maximum of `key` (Python `max` keeps the first of equal keys); `cmp(a, b) > 0` means a beats b. */
export function firstMax<T>(xs: readonly T[], better: (a: T, b: T) => boolean): T | null {
  let best: T | null = null;
  for (const x of xs) if (best === null || better(x, best)) best = x;
  return best;
}

/** Reward per estimated hour is larger for `a` than for `b` (exact cross-multiplication). */
export function higherThroughput(a: Candidate, b: Candidate): boolean {
  return a.task.rewardCents * b.hours > b.task.rewardCents * a.hours;
}

/** A bot_runner strategy played through the command interface. */
export abstract class MarketBot implements Policy {
  abstract readonly name: string;
  /** Whether `company status` must be read before each pick (the prestige strategy needs max prestige). */
  protected readonly needsPrestige: boolean = false;
  private seed = 0;
  private turn = 0;
  private names: string[] = [];
  private tierRate = 0;
  private maxPrestige = 1;
  private queue: string[] = [];
  private phase: 'start' | 'check' | 'status' | 'browse' | 'pick' | 'done' = 'start';

  /** Choose one candidate (null: nothing acceptable). */
  protected abstract pick(cands: Candidate[], ctx: PickContext): Candidate | null;

  reset(seed: number): void {
    this.seed = seed;
    this.turn = 0;
    this.names = [];
    this.tierRate = 0;
    this.maxPrestige = 1;
    this.queue = [];
    this.phase = 'start';
  }

  act(obs: PolicyObservation): string | null {
    const out = obs.lastOutput;
    if (obs.lastCommand === 'sim resume' && episodeOver(out)) this.phase = 'done';
    if (this.phase === 'done') return null;
    const queued = this.queue.shift();
    if (queued !== undefined) return queued;
    switch (this.phase) {
      case 'start':
        this.phase = 'check';
        return 'employee list';
      case 'check': {
        if (obs.lastCommand === 'employee list') {
          const emps = employees(out);
          this.names = emps.map((e) => e.name);
          this.tierRate = emps.reduce((s, e) => s + (TIER_AVG_RATE[e.tier] ?? 0), 0);
        }
        this.turn++;
        this.phase = 'status';
        return 'task list --status active';
      }
      case 'status': {
        const active = num(fields<TaskListResult>(out)?.count);
        if (active > 0) {
          this.phase = 'check';
          return 'sim resume';
        }
        if (this.needsPrestige) {
          this.phase = 'browse';
          return 'company status';
        }
        this.phase = 'pick';
        return 'market browse --limit 200';
      }
      case 'browse': {
        const p = rec(fields<CompanyStatusResult>(out)?.prestige);
        this.maxPrestige = p ? Math.max(...Object.values(p).map((v) => num(v, 1))) : 1;
        this.phase = 'pick';
        return 'market browse --limit 200';
      }
      case 'pick': {
        const cands: Candidate[] = marketTasks(out).map((task) => {
          const maxQty = Math.max(0, ...task.reqs.map((r) => r.qty));
          return { task, maxQty, hours: this.tierRate > 0 ? maxQty / this.tierRate : 999999 };
        });
        const chosen = this.pick(cands, { seed: this.seed, turn: this.turn, maxPrestige: this.maxPrestige });
        this.phase = 'check';
        if (chosen === null) {
          // Nothing to accept and nothing active: `sim resume` cannot advance time, so the episode stops.
          this.phase = 'done';
          return null;
        }
        const id = chosen.task.id;
        this.queue = [`task assign --task-id ${id} --employees ${this.names.join(',')}`, `task dispatch --task-id ${id}`, 'sim resume'];
        return `task accept --task-id ${id}`;
      }
    }
  }
}
