/**
 * A deterministic scripted agent for the stress tests: a greedy-like loop (browse, accept, assign a
 * subset of employees, dispatch, resume) sprinkled with read-only, rejected and garbage commands, driven
 * only by what it observes. Run against the server and in-process with the same seeds, it must produce
 * byte-identical trajectories; the trajectory hash covers every reset and step result in full.
 */
import type { Client } from '../../../src/client/client.js';
import { Env, type ResetOptions, type ResetResult, type StepResult } from '../../../src/env/env.js';
import { Prng, TrajectoryHash } from './util.js';

/** Commands sprinkled in (read-only, rejected, usage errors, garbage). */
const NOISE: readonly string[] = [
  'company status',
  'task list',
  'task list --status active',
  'client list',
  'client history',
  'report monthly',
  'employee list',
  'market browse --limit 3 --offset 7',
  'market browse --domain training --limit 2',
  'task inspect --task-id Task-3',
  'task accept --task-id Task-99999',
  'task dispatch --task-id Task-1',
  'sim resume --now',
  'scratchpad read',
  '',
  'yc-bench company status',
  '$(reboot); rm -rf / | cat > /etc/passwd &',
  "task assign --task-id 'Task-1 --employees Emp_1",
  'финансы ledger 🚀',
];

/** Anything the policy reads from a reset or step result. */
export type Outcome = ResetResult | StepResult;

function parseJson(text: string): Record<string, unknown> | null {
  if (!text.startsWith('{')) return null;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The scripted agent (one per episode stream; `reset` starts a new episode). */
export class ScriptedPolicy {
  private rng: Prng;
  private employees: string[] = [];
  private phase: 'start' | 'idle' | 'browsed' | 'accepted' | 'assigned' = 'start';
  private task = '';
  private notes = 0;

  constructor(seed: number) {
    this.rng = new Prng(seed);
  }

  /** Start a new episode. */
  reset(seed: number): void {
    this.rng = new Prng(seed);
    this.employees = [];
    this.phase = 'start';
    this.task = '';
    this.notes = 0;
  }

  /** Next command given the last outcome. */
  act(last: Outcome): string {
    const obs = last.observation;
    const out = obs.ok ? parseJson(obs.text) : null;
    switch (this.phase) {
      case 'start':
        this.phase = 'idle';
        return 'employee list';
      case 'browsed': {
        const tasks = (out?.['tasks'] as { task_id?: unknown }[] | undefined) ?? [];
        this.phase = 'idle';
        if (tasks.length === 0) return 'sim resume';
        const id = tasks[this.rng.int(tasks.length)]?.task_id;
        if (typeof id !== 'string') return 'sim resume';
        this.task = id;
        this.phase = 'accepted';
        return `task accept --task-id ${id}`;
      }
      case 'accepted': {
        if (!obs.ok) {
          this.phase = 'idle';
          return 'sim resume';
        }
        const team = this.employees.filter(() => this.rng.chance(0.6));
        if (team.length === 0 && this.employees.length > 0) team.push(this.rng.pick(this.employees));
        this.phase = 'assigned';
        return `task assign --task-id ${this.task} --employees ${team.join(',')}`;
      }
      case 'assigned':
        this.phase = 'idle';
        return `task dispatch --task-id ${this.task}`;
      case 'idle': {
        if (obs.command === 'employee list' && out) {
          const emps = (out['employees'] as { name?: unknown }[] | undefined) ?? [];
          this.employees = emps.map((e) => e.name).filter((n): n is string => typeof n === 'string');
        }
        if (this.rng.chance(0.12)) {
          if (this.rng.chance(0.15)) return `scratchpad append --content "note ${++this.notes}: ${'x'.repeat(this.rng.int(40))}"`;
          return this.rng.pick(NOISE);
        }
        if (obs.status.active_tasks > 0 || obs.status.planned_tasks > 2) return 'sim resume';
        this.phase = 'browsed';
        return `market browse --limit ${1 + this.rng.int(6)}`;
      }
    }
  }
}

/** What a policy run needs from an environment (in-process `Env`, a server session, ...). */
export interface Driver {
  reset(seed: number, options: ResetOptions): Promise<ResetResult> | ResetResult;
  step(action: string): Promise<StepResult> | StepResult;
}

/** Options of `runPolicy`. */
export interface PolicyRunOptions {
  /** Seed of the first episode; later episodes use seed + 1, seed + 2, ... */
  seed: number;
  /** Total steps to take (episodes are reset as they end). */
  steps: number;
  /** Per-episode step cap (`options.max_steps`), so truncation is exercised too (default 400). */
  maxSteps?: number;
  /** Called with each step's latency in microseconds (timed around `driver.step`). */
  onLatency?: (us: number) => void;
}

/** Result of `runPolicy`: the trajectory hash and counts. */
export interface PolicyRun {
  hash: string;
  steps: number;
  episodes: number;
}

function strip(r: ResetResult & { session?: unknown }): ResetResult {
  return { observation: r.observation, info: r.info };
}

/**
 * Run the scripted policy for `steps` steps, resetting as episodes end. The hash covers, in order,
 * `R <seed>` + the reset result and `S <action>` + the step result (JSON), so two runs agree only if every
 * observation, reward, flag and info field is identical.
 */
export async function runPolicy(driver: Driver, opts: PolicyRunOptions): Promise<PolicyRun> {
  const maxSteps = opts.maxSteps ?? 400;
  const hash = new TrajectoryHash();
  const policy = new ScriptedPolicy(opts.seed);
  let seed = opts.seed;
  let episodes = 1;
  policy.reset(seed);
  let last: Outcome = strip(await driver.reset(seed, { max_steps: maxSteps }));
  hash.add(`R ${seed}`);
  hash.add(JSON.stringify(last));
  for (let i = 0; i < opts.steps; i++) {
    const action = policy.act(last);
    const t0 = performance.now();
    const r = await driver.step(action);
    opts.onLatency?.((performance.now() - t0) * 1000);
    hash.add(`S ${action}`);
    hash.add(JSON.stringify(r));
    last = r;
    if ((r.terminated || r.truncated) && i + 1 < opts.steps) {
      seed++;
      episodes++;
      policy.reset(seed);
      last = strip(await driver.reset(seed, { max_steps: maxSteps }));
      hash.add(`R ${seed}`);
      hash.add(JSON.stringify(last));
    }
  }
  return { hash: hash.digest(), steps: opts.steps, episodes };
}

/** An in-process driver (one `Env`, reset in place). */
export function localDriver(): Driver {
  const env = new Env();
  return { reset: (seed, options) => env.reset({ seed, options }), step: (action) => env.step(action) };
}

/** A driver over one server session of `client` (created by the first reset, reused by later ones). */
export function remoteDriver(client: Client): Driver & { readonly session: string | null } {
  let session: string | null = null;
  return {
    get session() {
      return session;
    },
    async reset(seed, options) {
      const r = await client.reset(session === null ? { seed, options } : { seed, options, session });
      session = r.session;
      return r;
    },
    step(action) {
      if (session === null) throw new Error('step before reset');
      return client.step(session, action);
    },
  };
}
