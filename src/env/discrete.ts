/**
 * The Discrete action frame: a finite action space of templates × slots, a mask of the actions valid now and a
 * fixed-size numeric observation, all built only from what the agent can see through its commands (`market
 * browse`, `task list`, `task inspect`, `employee list`, `company status`, `client list`). Computed here once;
 * the step env serves it in-process and over the protocol (reset option `actions: "discrete"`).
 *
 * Action table (N = 1 + K + T·(3 + E); K market slots, T task slots, E employees):
 *
 * | index                    | name                 | command                                                  |
 * |--------------------------|----------------------|----------------------------------------------------------|
 * | 0                        | `resume`             | `sim resume`                                             |
 * | 1 + k (k < K)            | `accept[k]`          | `task accept --task-id <k-th browsable task>`            |
 * | 1 + K + j·(3+E)          | `task[j].assign_all` | `task assign --task-id <task j> --employees <all, list order>` |
 * | 1 + K + j·(3+E) + 1      | `task[j].dispatch`   | `task dispatch --task-id <task j>`                       |
 * | 1 + K + j·(3+E) + 2      | `task[j].cancel`     | `task cancel --task-id <task j> --reason discrete`       |
 * | 1 + K + j·(3+E) + 3 + e  | `task[j].assign[e]`  | `task assign --task-id <task j> --employees <employee e>` |
 *
 * Market slot k is the k-th task of `market browse` (reward descending, the prestige and trust gates applied).
 * Task slot j is the j-th open (planned or active) owned task by acceptance time, then rowid. Employees are in
 * `employee list` order.
 *
 * Mask (an action is masked in exactly when its command is accepted, with one documented exception):
 * - `resume`: some task is active. When no action at all is valid, `resume` is masked in as the only "wait"
 *   action; it then fails with the reference's "No active tasks" error (exit 1) and does not advance time.
 * - `accept[k]`: slot k holds a task and fewer than T tasks are open (every owned task keeps a slot).
 * - `task[j].assign_all`: slot j holds a task that lacks some employee. `task[j].assign[e]`: it lacks employee e.
 * - `task[j].dispatch`: slot j holds a planned task with at least one assignee.
 * - `task[j].cancel`: slot j holds a task and the preset enables `fixes.task_cancel` (else cancel always fails).
 *
 * Nothing the agent cannot observe enters the frame: no skill rates (hidden in the paper; the employee
 * features are tier, salary and assignments), no client loyalty or adversarial flag, no scheduled event times
 * (a task's ETA is extrapolated from its observed progress since acceptance).
 */
import { browsable, clientsByName, DOMAINS, payrollOf, type Simulation, type Task, toFloat, US_PER_DAY } from '../sim/index.js';

/** Options of the Discrete frame (reset options `market_slots`, `task_slots`). */
export interface DiscreteOptions {
  /** K: visible market tasks offered for `accept` (default 10; `num_market_tasks` makes every browsable task reachable). */
  market_slots?: number;
  /** T: open owned tasks addressable by the task templates (default 4). */
  task_slots?: number;
}

/** Default K. */
export const DEFAULT_MARKET_SLOTS = 10;
/** Default T. */
export const DEFAULT_TASK_SLOTS = 4;
/** Upper limit of K and T (keeps frames bounded). */
export const MAX_SLOTS = 256;

/** Employee tiers, one-hot in this order. */
export const TIERS = ['junior', 'mid', 'senior'] as const;

/** The shapes, names and bounds of a Discrete frame (fixed for a preset and options). */
export interface DiscreteSpec {
  market_slots: number;
  task_slots: number;
  /** Employee names in `employee list` order (E = length). */
  employees: string[];
  /** Client names, sorted (the one-hot order). */
  clients: string[];
  /** N. */
  n_actions: number;
  /** Action names (`resume`, `accept[3]`, `task[1].assign[5]`, ...), by index. */
  action_names: string[];
  /** Observation length. */
  obs_size: number;
  /** Feature names, by index. */
  feature_names: string[];
  /** Inclusive bounds of every feature (values are clipped into them). */
  obs_low: number[];
  obs_high: number[];
}

/** The frame after a step: observation, mask and the command text of every masked-in action. */
export interface DiscreteFrame {
  obs: number[];
  mask: boolean[];
}

/** Validate and default the options. */
export function discreteSizes(o: DiscreteOptions = {}): { market_slots: number; task_slots: number } {
  const k = o.market_slots ?? DEFAULT_MARKET_SLOTS;
  const t = o.task_slots ?? DEFAULT_TASK_SLOTS;
  if (!Number.isInteger(k) || k < 1 || k > MAX_SLOTS) throw new RangeError(`market_slots must be an integer in [1, ${MAX_SLOTS}]`);
  if (!Number.isInteger(t) || t < 1 || t > MAX_SLOTS) throw new RangeError(`task_slots must be an integer in [1, ${MAX_SLOTS}]`);
  return { market_slots: k, task_slots: t };
}

/** Receives every feature in order: its name is `prefix + name` (joined only when the spec is built). */
interface Writer {
  f(prefix: string, name: string, low: number, high: number, value: number): void;
}

const QTY_NAMES = DOMAINS.map((d) => `qty.${d}`);
const REMAINING_NAMES = DOMAINS.map((d) => `remaining.${d}`);
const PRESTIGE_NAMES = DOMAINS.map((d) => `prestige.${d}`);
const TIER_NAMES = TIERS.map((t) => `tier.${t}`);

const SCALE_QTY = 10_000;
const SCALE_SALARY = 1_000_000;
const MONTH_DAYS = 30;

function clip(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** Open (planned or active) owned tasks in slot order: acceptance time, then rowid. */
export function openTasks(sim: Simulation): Task[] {
  return sim.state.tasks
    .filter((t) => t.owned && (t.status === 'planned' || t.status === 'active'))
    .sort((a, b) => (a.acceptedAt ?? 0) - (b.acceptedAt ?? 0) || a.id - b.id);
}

/** Progress of a task as `task list` reports it, as a fraction. */
function progress(t: Task): number {
  let req = 0;
  let done = 0;
  for (const r of t.reqs) req += toFloat(r.required);
  for (const r of t.reqs) done += toFloat(r.completed);
  return req > 0 ? done / req : 0;
}

/** Slot prefixes, built once (`market[3].`, `task[1].`, `employee[5].`). */
const slotPrefixes = (kind: string) => Array.from({ length: Math.max(MAX_SLOTS, 64) }, (_, i) => `${kind}[${i}].`);
const MARKET_P = slotPrefixes('market');
const TASK_P = slotPrefixes('task');
const EMPLOYEE_P = slotPrefixes('employee');
const ASSIGNED_NAMES = Array.from({ length: 64 }, (_, i) => `assigned[${i}]`);
const prefixOf = (table: readonly string[], kind: string, i: number) => table[i] ?? `${kind}[${i}].`;

/** Feature names that depend on the world's clients, built once per client order (`clientsByName` keeps it). */
const clientNameCache = new WeakMap<object, { trust: string[]; client: string[] }>();
function clientFeatureNames(sim: Simulation) {
  const clients = clientsByName(sim.state.clients);
  let names = clientNameCache.get(clients);
  if (names === undefined) {
    names = { trust: clients.map((x) => `trust.${x.name}`), client: clients.map((x) => `client.${x.name}`) };
    clientNameCache.set(clients, names);
  }
  return { clients, ...names };
}

/** Every feature, in order, through `w` (one source for the spec and the values); `open` and `market` as listed now. */
function features(sim: Simulation, k: number, tslots: number, w: Writer, open: readonly Task[] = openTasks(sim), market: readonly Task[] = browsable(sim)): void {
  const s = sim.state;
  const cfg = sim.cfg.world;
  const funds0 = Math.max(1, s.initialFundsCents);
  const pmax = cfg.prestige_max;
  const tmax = cfg.trust_max;
  const { clients, trust: trustNames, client: clientNames } = clientFeatureNames(sim);
  const trustOf = (clientId: number | null) => {
    const c = clientId === null ? undefined : s.clients[clientId];
    return c ? toFloat(c.trust) / tmax : 0;
  };
  const payroll = payrollOf(s);
  const E = s.employees.length;

  // Company.
  w.f('company.', 'funds', -10, 100, s.fundsCents / funds0);
  w.f('company.', 'payroll', 0, 10, payroll / funds0);
  w.f('company.', 'runway_years', -10, 10, payroll > 0 ? s.fundsCents / payroll / 12 : 10);
  w.f('company.', 'time_elapsed', 0, 1, (s.simTime - s.startTime) / Math.max(1, s.horizonEnd - s.startTime));
  DOMAINS.forEach((d, i) => w.f('company.', PRESTIGE_NAMES[i]!, 0, 1, toFloat(s.prestige[d]) / pmax));
  for (let c = 0; c < clients.length; c++) w.f('company.', trustNames[c]!, 0, 1, toFloat(clients[c]!.trust) / tmax);
  w.f('company.', 'open_tasks', 0, MAX_SLOTS, open.length / tslots);
  w.f('company.', 'active_tasks', 0, MAX_SLOTS, open.filter((t) => t.status === 'active').length / tslots);
  w.f('company.', 'market_size', 0, 1, market.length / Math.max(1, cfg.num_market_tasks));

  // Market slots.
  for (let i = 0; i < k; i++) {
    const t = market[i];
    const p = prefixOf(MARKET_P, 'market', i);
    w.f(p, 'present', 0, 1, t ? 1 : 0);
    w.f(p, 'reward', 0, 10, t ? t.rewardCents / funds0 : 0);
    w.f(p, 'required_prestige', 0, 1, t ? t.requiredPrestige / pmax : 0);
    w.f(p, 'required_trust', 0, 1, t ? t.requiredTrust / tmax : 0);
    w.f(p, 'client_trust', 0, 1, t ? trustOf(t.clientId) : 0);
    w.f(p, 'prestige_delta', 0, 10, t ? toFloat(t.rewardPrestigeDelta) : 0);
    w.f(p, 'skill_boost', 0, 10, t ? toFloat(t.skillBoostPct) : 0);
    let maxQty = 0;
    DOMAINS.forEach((d, n) => {
      const r = t?.reqs.find((q) => q.domain === d);
      const q = r ? toFloat(r.required) : 0;
      maxQty = Math.max(maxQty, q);
      w.f(p, QTY_NAMES[n]!, 0, 10, q / SCALE_QTY);
    });
    // The deadline `task accept` would set from the listed work (the documented rule), in months of business days.
    const days = Math.max(cfg.deadline_min_biz_days, Math.trunc(maxQty / cfg.deadline_qty_per_day));
    w.f(p, 'deadline_biz_days', 0, 100, t ? days / MONTH_DAYS : 0);
    for (let c = 0; c < clients.length; c++) w.f(p, clientNames[c]!, 0, 1, t && t.clientId === clients[c]!.id ? 1 : 0);
  }

  // Task slots.
  for (let j = 0; j < tslots; j++) {
    const t = open[j];
    const p = prefixOf(TASK_P, 'task', j);
    const prog = t ? progress(t) : 0;
    w.f(p, 'present', 0, 1, t ? 1 : 0);
    w.f(p, 'planned', 0, 1, t?.status === 'planned' ? 1 : 0);
    w.f(p, 'active', 0, 1, t?.status === 'active' ? 1 : 0);
    w.f(p, 'progress', 0, 1, prog);
    const slack = t && t.deadline !== null ? (t.deadline - s.simTime) / US_PER_DAY / MONTH_DAYS : 0;
    w.f(p, 'deadline_slack_months', -12, 12, slack);
    // ETA extrapolated from the progress observed since acceptance (12 months when nothing is done yet).
    let eta = t ? 12 : 0;
    if (t && prog > 0 && t.acceptedAt !== null) eta = ((s.simTime - t.acceptedAt) * (1 - prog)) / prog / US_PER_DAY / MONTH_DAYS;
    w.f(p, 'eta_months', 0, 12, eta);
    w.f(p, 'reward', 0, 10, t ? t.rewardCents / funds0 : 0);
    w.f(p, 'client_trust', 0, 1, t ? trustOf(t.clientId) : 0);
    DOMAINS.forEach((d, n) => {
      const r = t?.reqs.find((q) => q.domain === d);
      w.f(p, REMAINING_NAMES[n]!, 0, 10, r ? (toFloat(r.required) - toFloat(r.completed)) / SCALE_QTY : 0);
    });
    for (let e = 0; e < E; e++) w.f(p, ASSIGNED_NAMES[e] ?? `assigned[${e}]`, 0, 1, t && t.assignments.some((a) => a.employeeId === e) ? 1 : 0);
  }

  // Employees.
  for (let e = 0; e < E; e++) {
    const emp = s.employees[e]!;
    const p = prefixOf(EMPLOYEE_P, 'employee', e);
    TIERS.forEach((tier, n) => w.f(p, TIER_NAMES[n]!, 0, 1, emp.tier === tier ? 1 : 0));
    w.f(p, 'salary', 0, 100, emp.salaryCents / SCALE_SALARY);
    let active = 0;
    let onOpen = 0;
    for (const t of open) {
      if (!t.assignments.some((a) => a.employeeId === emp.id)) continue;
      onOpen++;
      if (t.status === 'active') active++;
    }
    w.f(p, 'active_tasks', 0, MAX_SLOTS, active / tslots);
    w.f(p, 'open_tasks', 0, MAX_SLOTS, onOpen / tslots);
  }
}

/** The spec of the frame for a simulation (fixed for its preset and the options). */
export function discreteSpec(sim: Simulation, o: DiscreteOptions = {}): DiscreteSpec {
  const { market_slots: k, task_slots: t } = discreteSizes(o);
  const names: string[] = [];
  const low: number[] = [];
  const high: number[] = [];
  features(sim, k, t, {
    f(prefix, name, lo, hi) {
      names.push(prefix + name);
      low.push(lo);
      high.push(hi);
    },
  });
  const employees = sim.state.employees.map((e) => e.name);
  const actions = ['resume'];
  for (let i = 0; i < k; i++) actions.push(`accept[${i}]`);
  for (let j = 0; j < t; j++) {
    actions.push(`task[${j}].assign_all`, `task[${j}].dispatch`, `task[${j}].cancel`);
    for (let e = 0; e < employees.length; e++) actions.push(`task[${j}].assign[${e}]`);
  }
  return {
    market_slots: k,
    task_slots: t,
    employees,
    clients: clientsByName(sim.state.clients).map((c) => c.name),
    n_actions: actions.length,
    action_names: actions,
    obs_size: names.length,
    feature_names: names,
    obs_low: low,
    obs_high: high,
  };
}

/** The values' writer of `discreteFrame`: each feature clipped into its bounds, in order, into a preallocated array. */
class ValueWriter implements Writer {
  n = 0;
  constructor(readonly obs: number[]) {}
  f(_prefix: string, _name: string, lo: number, hi: number, v: number): void {
    this.obs[this.n++] = clip(Number.isFinite(v) ? v : hi, lo, hi);
  }
}

/** A packed array of doubles per spec, copied for each frame (see `packedDoubles`). */
const doubleTemplates = new WeakMap<DiscreteSpec, number[]>();

/**
 * A fresh array of `spec.obs_size` doubles to write by index. A copy of a packed double array: `new Array(n)` is
 * holey, which `JSON.stringify` serialises ~1.5x slower (and `Float32Array.set` reads slower) than a packed one.
 */
function packedDoubles(spec: DiscreteSpec): number[] {
  let t = doubleTemplates.get(spec);
  if (t === undefined) {
    t = [];
    for (let i = 0; i < spec.obs_size; i++) t.push(0.5);
    doubleTemplates.set(spec, t);
  }
  return t.slice();
}

/**
 * What the frame was computed from: the market listing and the open tasks at that moment. While the state has not
 * changed since, `discreteCommand` takes them from here instead of listing both again.
 */
export interface FrameLists {
  market: readonly Task[];
  open: Task[];
}

/** Observation and mask of the current state (`lists`: receives the listings it was computed from). */
export function discreteFrame(sim: Simulation, spec: DiscreteSpec, lists?: FrameLists): DiscreteFrame {
  const open = openTasks(sim);
  const market = browsable(sim);
  if (lists !== undefined) {
    lists.market = market;
    lists.open = open;
  }
  // Written by index into an array of the spec's length (pushing grew it step by step: a fifth of the frame's time).
  const w = new ValueWriter(packedDoubles(spec));
  features(sim, spec.market_slots, spec.task_slots, w, open, market);
  const obs = w.obs;
  if (w.n !== obs.length) obs.length = w.n;
  // Packed (a `new Array(n).fill(false)` stays holey: slower to serialise).
  const mask: boolean[] = [];
  for (let i = 0; i < spec.n_actions; i++) mask.push(false);
  const s = sim.state;
  const E = spec.employees.length;
  mask[0] = open.some((t) => t.status === 'active');
  if (open.length < spec.task_slots) {
    for (let i = 0; i < spec.market_slots && i < market.length; i++) mask[1 + i] = true;
  }
  const cancel = sim.cfg.fixes.task_cancel;
  for (let j = 0; j < spec.task_slots && j < open.length; j++) {
    const t = open[j]!;
    const base = 1 + spec.market_slots + j * (3 + E);
    const has = (e: number) => t.assignments.some((a) => a.employeeId === e);
    let lacking = false;
    for (let e = 0; e < E && e < s.employees.length; e++) {
      if (!has(e)) {
        lacking = true;
        mask[base + 3 + e] = true;
      }
    }
    mask[base] = lacking;
    mask[base + 1] = t.status === 'planned' && t.assignments.length > 0;
    mask[base + 2] = cancel;
  }
  if (!mask.some((m) => m)) mask[0] = true;
  return { obs, mask };
}

/** The command of a valid action index, given the current market listing and open tasks. */
function commandOf(sim: Simulation, spec: DiscreteSpec, a: number, market: () => readonly Task[], open: () => Task[]): string {
  if (a === 0) return 'sim resume';
  if (a <= spec.market_slots) return `task accept --task-id ${sim.taskRef(market()[a - 1]!.id)}`;
  const E = spec.employees.length;
  const r = a - 1 - spec.market_slots;
  const op = r % (3 + E);
  const id = sim.taskRef(open()[Math.floor(r / (3 + E))]!.id);
  if (op === 0) return `task assign --task-id ${id} --employees ${sim.state.employees.map((e) => e.name).join(',')}`;
  if (op === 1) return `task dispatch --task-id ${id}`;
  if (op === 2) return `task cancel --task-id ${id} --reason discrete`;
  return `task assign --task-id ${id} --employees ${sim.state.employees[op - 3]!.name}`;
}

/**
 * The command of action `a` in the current state, or why there is none: out of range (`masked` false) or masked
 * out (`masked` true). `mask` must be the current mask; `lists`, when given, the listings the current frame was
 * computed from (`discreteFrame`), with the state unchanged since.
 */
export function discreteCommand(sim: Simulation, spec: DiscreteSpec, mask: readonly boolean[], a: number, lists?: FrameLists): { command: string } | { error: string; masked: boolean } {
  if (typeof a !== 'number' || !Number.isInteger(a) || a < 0 || a >= spec.n_actions) return { error: `action must be an integer in [0, ${spec.n_actions - 1}]`, masked: false };
  if (!mask[a]) return { error: `action ${a} (${spec.action_names[a]}) is masked out (not valid now)`, masked: true };
  if (lists !== undefined) return { command: commandOf(sim, spec, a, () => lists.market, () => lists.open) };
  return { command: commandOf(sim, spec, a, () => browsable(sim), () => openTasks(sim)) };
}

/** The commands of every masked-in action (TextWorld's `admissible_commands`), in action order (`lists`: as `discreteCommand`). */
export function admissibleCommands(sim: Simulation, spec: DiscreteSpec, mask: readonly boolean[], lists?: FrameLists): string[] {
  let market: readonly Task[] | null = lists?.market ?? null;
  let open: Task[] | null = lists?.open ?? null;
  const out: string[] = [];
  for (let a = 0; a < mask.length; a++) {
    if (mask[a]) out.push(commandOf(sim, spec, a, () => (market ??= browsable(sim)), () => (open ??= openTasks(sim))));
  }
  return out;
}
