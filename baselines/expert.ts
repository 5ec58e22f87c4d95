/**
 * A scripted policy that plays well using only what an agent can observe (command outputs):
 *
 * - Adversarial clients: right after accepting a task it inspects it; a task whose work grew far beyond
 *   what the market listed (scope creep) marks its client as adversarial: the task is left planned (a
 *   planned task is never due, so it costs nothing) and the client is avoided from then on. A failed task
 *   also marks its client (a backstop; the policy only dispatches tasks it expects to finish in time).
 * - Value: tasks are ranked by reward per unit of work the company will actually do (trust with the
 *   client cuts the work), net of the salary raises the completion will trigger; trust-building with a few
 *   reliable clients is rewarded so the work discount compounds.
 * - Value also counts the task's skill boost (the top four assignees' rates grow by it on success), weighted
 *   by the share of the year left.
 * - Staffing: the best free specialists of the task's domain, at most four (only the top four
 *   contributions count), never an employee on two tasks (their rate would be split), and only as many
 *   as needed to meet the deadline (fewer raises; more tasks in parallel). Employees left idle join the
 *   running task they speed up the most, when that is worth their raise.
 * - Deadlines: deadline = max(7, int(max qty / 150)) business days of 9 h; a task is taken only when the
 *   team's rate meets it (the progress flush runs ahead of the 9 h/day ETA, so this is conservative).
 * - Several tasks run in parallel; idle employees join running tasks where they speed them up.
 * - Near the horizon only tasks that can finish in time are taken.
 */
import { employees, episodeOver, fields, marketTasks, num, rec, str, arr, type MarketTask } from './obs.js';
import type {
  ClientListResult,
  ClientRow,
  CompanyStatusResult,
  Policy,
  PolicyObservation,
  SimResumeResult,
  TaskCompletedWakeEvent,
  TaskInspectResult,
  TaskRequirementRow,
} from '../src/core.js';

/** Game rules the expert relies on (the default preset's documented values). */
export interface ExpertRules {
  trustMax: number;
  trustWorkReductionMax: number;
  deadlineMinBizDays: number;
  deadlineQtyPerDay: number;
  workdayHours: number;
  /** Raise per completed task, cents per month, by tier (1% of the tier's salary midpoint). */
  bumpCents: Record<string, number>;
}

/** Tunable knobs of the expert. */
export interface ExpertKnobs {
  /** Accept when nominal team hours ≤ deadline hours × this (the flush quirk makes real work faster). */
  deadlineSlack: number;
  /** Weight of the skill-boost term in a task's score. */
  boostWeight: number;
  /** Weight of the trust-building term in a task's score. */
  trustWeight: number;
  /** Number of clients to focus trust on. */
  focusClients: number;
  /** Ratio of actual to expected work above which a client is adversarial. */
  creepRatio: number;
  /** Extra team members beyond the minimum: 'min' adds none, 'max' fills to four. */
  teamMode: 'min' | 'max';
  /** Let idle employees join running tasks. */
  joinIdle: boolean;
}

/** The default preset's rules. */
export const DEFAULT_RULES: ExpertRules = {
  trustMax: 5,
  trustWorkReductionMax: 0.5,
  deadlineMinBizDays: 7,
  deadlineQtyPerDay: 150,
  workdayHours: 9,
  bumpCents: { junior: 3000, mid: 7000, senior: 12500 },
};

/** Default knobs (tuned on seeds 1-10 of the default preset). */
export const DEFAULT_KNOBS: ExpertKnobs = {
  deadlineSlack: 1.0,
  boostWeight: 1,
  trustWeight: 0,
  focusClients: 3,
  creepRatio: 1.5,
  teamMode: 'min',
  joinIdle: true,
};

const TEAM_CAP = 4;
const US_PER_HOUR = 3_600_000_000;
const US_PER_DAY = 24 * US_PER_HOUR;

/** Parse `YYYY-MM-DDTHH:MM:SS[.ffffff]` to µs since epoch (naive). */
export function parseIsoUs(s: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(s);
  if (!m) return NaN;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  const frac = m[7] ? Number(m[7].padEnd(6, '0')) : 0;
  return ms * 1000 + frac;
}

/** Business hours (Mon-Fri 09:00-18:00) between two instants in µs. */
export function businessHours(a: number, b: number): number {
  let total = 0;
  let day = Math.floor(a / US_PER_DAY);
  const last = Math.floor(b / US_PER_DAY);
  for (; day <= last; day++) {
    const wd = (((day + 3) % 7) + 7) % 7;
    if (wd >= 5) continue;
    const lo = Math.max(a, day * US_PER_DAY + 9 * US_PER_HOUR);
    const hi = Math.min(b, day * US_PER_DAY + 18 * US_PER_HOUR);
    if (hi > lo) total += (hi - lo) / US_PER_HOUR;
  }
  return total;
}

interface Emp {
  name: string;
  tier: string;
  rates: Record<string, number>;
}

interface Running {
  title: string;
  client: string | null;
  team: string[];
  reqs: { domain: string; qty: number }[];
  rewardCents: number;
}

interface ClientInfo {
  trust: number;
  adversarial: boolean;
  succeeded: number;
  failed: number;
}

interface Plan {
  task: MarketTask;
  team: string[];
  score: number;
}

/** The expert policy. */
export class ExpertPolicy implements Policy {
  readonly name = 'expert';
  private gen: Generator<string, void, PolicyObservation> | null = null;
  private readonly rules: ExpertRules;
  private readonly knobs: ExpertKnobs;

  private emps: Emp[] = [];
  private busy = new Map<string, string>();
  private running = new Map<string, Running>();
  private clients = new Map<string, ClientInfo>();
  private prestige: Record<string, number> = {};
  private now = 0;
  private horizon = 0;

  constructor(opts: { rules?: Partial<ExpertRules>; knobs?: Partial<ExpertKnobs> } = {}) {
    this.rules = { ...DEFAULT_RULES, ...opts.rules };
    this.knobs = { ...DEFAULT_KNOBS, ...opts.knobs };
  }

  reset(): void {
    this.emps = [];
    this.busy = new Map();
    this.running = new Map();
    this.clients = new Map();
    this.prestige = {};
    this.now = 0;
    this.horizon = 0;
    this.gen = this.play();
  }

  act(obs: PolicyObservation): string | null {
    if (this.gen === null) this.reset();
    const r = (this.gen as Generator<string, void, PolicyObservation>).next(obs);
    return r.done ? null : r.value;
  }

  private client(name: string | null): ClientInfo | null {
    if (name === null) return null;
    let c = this.clients.get(name);
    if (!c) {
      c = { trust: 0, adversarial: false, succeeded: 0, failed: 0 };
      this.clients.set(name, c);
    }
    return c;
  }

  /** Work the company will do on a listed task: trust cuts it (adversarial clients inflate it instead). */
  private expectedQty(t: MarketTask, q: number): number {
    const c = this.client(t.client);
    const trust = c ? c.trust : 0;
    const red = this.rules.trustWorkReductionMax * (trust / this.rules.trustMax);
    return Math.max(200, Math.trunc(q * (1 - red)));
  }

  private deadlineHours(reqs: { qty: number }[]): number {
    const maxQty = Math.max(0, ...reqs.map((r) => r.qty));
    return Math.max(this.rules.deadlineMinBizDays, Math.trunc(maxQty / this.rules.deadlineQtyPerDay)) * this.rules.workdayHours;
  }

  /** Nominal hours for a team (top-4 rates per domain, rates shaded down for the 2-dp listing). */
  private teamHours(team: Emp[], reqs: { domain: string; qty: number }[]): number {
    let h = 0;
    for (const r of reqs) {
      const rates = team.map((e) => Math.max(0, (e.rates[r.domain] ?? 0) - 0.005)).sort((a, b) => b - a);
      let s = 0;
      for (let i = 0; i < rates.length && i < TEAM_CAP; i++) s += rates[i] as number;
      if (s <= 0) return Infinity;
      h = Math.max(h, r.qty / s);
    }
    return h;
  }

  /** Choose a team among `free` for these requirements: the minimum meeting the deadline, then filled per knobs. */
  private chooseTeam(free: Emp[], reqs: { domain: string; qty: number }[], limitHours: number): Emp[] | null {
    const score = (e: Emp) => reqs.reduce((s, r) => s + (e.rates[r.domain] ?? 0), 0);
    const sorted = [...free].sort((a, b) => score(b) - score(a) || (a.name < b.name ? -1 : 1));
    const cap = Math.min(sorted.length, TEAM_CAP * reqs.length);
    for (let k = 1; k <= cap; k++) {
      const team = sorted.slice(0, k);
      if (this.teamHours(team, reqs) <= limitHours) {
        if (this.knobs.teamMode === 'max') return sorted.slice(0, cap);
        return team;
      }
    }
    return null;
  }

  private monthsLeft(): number {
    return Math.max(0, (this.horizon - this.now) / (30.4 * US_PER_DAY));
  }

  private bumpCost(team: Emp[]): number {
    const months = this.monthsLeft();
    return team.reduce((s, e) => s + (this.rules.bumpCents[e.tier] ?? 0), 0) * months;
  }

  /** Best next task for the free employees (null: nothing worth doing). */
  private planOne(market: MarketTask[], taken: Set<string>, free: Emp[]): Plan | null {
    let best: Plan | null = null;
    const hoursLeft = businessHours(this.now, this.horizon);
    for (const t of market) {
      if (taken.has(t.id) || t.reqs.length === 0) continue;
      const c = this.client(t.client);
      if (c?.adversarial) continue;
      const reqs = t.reqs.map((r) => ({ domain: r.domain, qty: this.expectedQty(t, r.qty) }));
      const limit = Math.min(this.deadlineHours(reqs) * this.knobs.deadlineSlack, hoursLeft);
      const team = this.chooseTeam(free, reqs, limit);
      if (!team) continue;
      const work = reqs.reduce((s, r) => s + r.qty, 0);
      let score = (t.rewardCents - this.bumpCost(team)) / work;
      score *= 1 + this.knobs.boostWeight * t.skillBoost * (this.monthsLeft() / 12);
      if (c && this.knobs.trustWeight > 0) score *= 1 + this.knobs.trustWeight * this.focusBonus(t.client);
      if (best === null || score > best.score) best = { task: t, team: team.map((e) => e.name), score };
    }
    return best && best.score > 0 ? best : null;
  }

  /** 1 for a client among the most trusted non-adversarial ones, 0 otherwise. */
  private focusBonus(name: string | null): number {
    if (name === null) return 0;
    const ranked = [...this.clients.entries()].filter(([, c]) => !c.adversarial).sort((a, b) => b[1].trust - a[1].trust || (a[0] < b[0] ? -1 : 1));
    const idx = ranked.findIndex(([n]) => n === name);
    return idx >= 0 && idx < this.knobs.focusClients ? 1 : 0;
  }

  private freeEmps(): Emp[] {
    return this.emps.filter((e) => !this.busy.has(e.name));
  }

  private readEmployees(out: unknown): void {
    const list = employees(out);
    if (list.length === 0) return;
    this.emps = list.map((e) => ({ name: e.name, tier: e.tier, rates: e.rates }));
  }

  private readStatus(out: unknown): void {
    const o = fields<CompanyStatusResult>(out);
    if (!o) return;
    this.now = parseIsoUs(str(o.sim_time));
    this.horizon = parseIsoUs(str(o.horizon_end));
    const p = rec(o.prestige);
    if (p) for (const [k, v] of Object.entries(p)) this.prestige[k] = num(v, 1);
  }

  private readClients(out: unknown): void {
    for (const c of arr(fields<ClientListResult>(out)?.clients)) {
      const r = fields<ClientRow>(c);
      if (!r) continue;
      const info = this.client(str(r.name));
      if (info) info.trust = num(r.trust_level);
    }
  }

  private readWake(out: unknown): void {
    for (const w of arr(fields<SimResumeResult>(out)?.wake_events)) {
      const e = fields<TaskCompletedWakeEvent>(w);
      if (!e || e.type !== 'task_completed') continue;
      const title = str(e.task_title);
      const run = this.running.get(title);
      if (run) {
        for (const n of run.team) if (this.busy.get(n) === title) this.busy.delete(n);
        this.running.delete(title);
      }
      const c = this.client(typeof e.client_name === 'string' ? e.client_name : null);
      if (c) {
        if (e.success === true) c.succeeded++;
        else {
          c.failed++;
          c.adversarial = true;
        }
      }
    }
  }

  private *play(): Generator<string, void, PolicyObservation> {
    let o = yield 'employee list';
    this.readEmployees(o.lastOutput);
    for (;;) {
      o = yield 'company status';
      this.readStatus(o.lastOutput);
      o = yield 'client list';
      this.readClients(o.lastOutput);
      o = yield 'market browse --limit 200';
      const market = marketTasks(o.lastOutput);
      const taken = new Set<string>();
      for (;;) {
        const free = this.freeEmps();
        if (free.length === 0) break;
        const plan = this.planOne(market, taken, free);
        if (!plan) break;
        const t = plan.task;
        taken.add(t.id);
        o = yield `task accept --task-id ${t.id}`;
        if (o.lastExit !== 0) continue;
        o = yield `task inspect --task-id ${t.id}`;
        const ins = fields<TaskInspectResult>(o.lastOutput);
        const reqs = arr(ins?.requirements).flatMap((q) => {
          const r = fields<TaskRequirementRow>(q);
          return r ? [{ domain: str(r.domain), qty: num(r.required_qty) }] : [];
        });
        if (!ins || str(ins.status) !== 'planned' || reqs.length === 0) continue;
        const expected = t.reqs.reduce((s, r) => s + this.expectedQty(t, r.qty), 0);
        const actual = reqs.reduce((s, r) => s + r.qty, 0);
        const c = this.client(t.client);
        if (actual > expected * this.knobs.creepRatio) {
          // Scope creep: an adversarial client. Leave the task planned (never due) and avoid the client.
          if (c) c.adversarial = true;
          continue;
        }
        const hoursLeft = businessHours(this.now, this.horizon);
        const limit = Math.min(this.deadlineHours(reqs) * this.knobs.deadlineSlack, hoursLeft);
        const freeNow = this.freeEmps();
        const team = this.chooseTeam(freeNow, reqs, limit);
        if (!team) continue;
        const names = team.map((e) => e.name);
        o = yield `task assign --task-id ${t.id} --employees ${names.join(',')}`;
        if (o.lastExit !== 0) continue;
        o = yield `task dispatch --task-id ${t.id}`;
        if (o.lastExit !== 0) continue;
        for (const n of names) this.busy.set(n, t.id);
        this.running.set(t.id, { title: t.id, client: t.client, team: names, reqs, rewardCents: t.rewardCents });
      }
      if (this.knobs.joinIdle) {
        for (const e of this.freeEmps()) {
          const target = this.bestJoin(e);
          if (!target) continue;
          o = yield `task assign --task-id ${target.title} --employees ${e.name}`;
          if (o.lastExit !== 0) continue;
          target.team.push(e.name);
          this.busy.set(e.name, target.title);
        }
      }
      if (this.running.size === 0) {
        // Nothing worth doing and nothing running: take the best-value task with everyone rather than stall.
        const t = market.filter((x) => !taken.has(x.id) && !this.client(x.client)?.adversarial)[0];
        if (!t) return;
        o = yield `task accept --task-id ${t.id}`;
        if (o.lastExit === 0) {
          const names = this.emps.map((e) => e.name);
          yield `task assign --task-id ${t.id} --employees ${names.join(',')}`;
          o = yield `task dispatch --task-id ${t.id}`;
          if (o.lastExit === 0) {
            for (const n of names) this.busy.set(n, t.id);
            this.running.set(t.id, { title: t.id, client: t.client, team: names, reqs: t.reqs, rewardCents: t.rewardCents });
          }
        }
        if (this.running.size === 0) return;
      }
      o = yield 'sim resume';
      if (o.lastExit !== 0 || episodeOver(o.lastOutput)) return;
      this.readWake(o.lastOutput);
      o = yield 'employee list';
      this.readEmployees(o.lastOutput);
      // Employees the simulation reports idle are free (a task may have ended without our noticing).
      for (const e of employees(o.lastOutput)) {
        if (e.activeTasks.length === 0) this.busy.delete(e.name);
      }
    }
  }

  /** The running task an idle employee speeds up the most (value-weighted), or null. */
  private bestJoin(e: Emp): Running | null {
    let best: Running | null = null;
    let bestGain = 0;
    for (const run of this.running.values()) {
      if (run.team.length >= TEAM_CAP * run.reqs.length) continue;
      const team = this.emps.filter((x) => run.team.includes(x.name));
      const before = this.teamHours(team, run.reqs);
      const after = this.teamHours([...team, e], run.reqs);
      if (!(after < before)) continue;
      const gain = (1 - after / before) * run.rewardCents;
      const cost = (this.rules.bumpCents[e.tier] ?? 0) * this.monthsLeft();
      if (gain - cost > bestGain) {
        bestGain = gain - cost;
        best = run;
      }
    }
    return best;
  }
}
