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
 * An action runs as its command already parsed (`discreteCommand`'s `spec` and `opts`, `Simulation.executeParsed`); its
 * command line (`commandLine`, rendered from them) is what shows it (`info.action_text`, the admissible commands).
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
import { browsable, claimedTasks, clientsByName, commandLine, commandSpec, type CommandSpec, deadlineBusinessDays, DOMAINS, type ParsedOptions, payrollOf, type Simulation, type Task, toFloat, US_PER_DAY } from '../sim/index.js';
import { DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, MAX_SLOTS } from './discrete-slots.js';

/** Options of the Discrete frame (reset options `market_slots`, `task_slots`). */
export interface DiscreteOptions {
  /** K: visible market tasks offered for `accept` (default 10; `num_market_tasks` makes every browsable task reachable). */
  market_slots?: number;
  /** T: open owned tasks addressable by the task templates (default 4). */
  task_slots?: number;
}

export { DEFAULT_MARKET_SLOTS, DEFAULT_TASK_SLOTS, MAX_SLOTS };

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
  const out: Task[] = [];
  for (const t of sim.state.tasks) if (t.owned && (t.status === 'planned' || t.status === 'active')) out.push(t);
  return out.length > 1 ? out.sort(bySlot) : out;
}

function bySlot(a: Task, b: Task): number {
  return (a.acceptedAt ?? 0) - (b.acceptedAt ?? 0) || a.id - b.id;
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
    const days = deadlineBusinessDays(cfg, maxQty);
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

/** Specs built so far, by what they are built from (`specKey`); a few, cleared when full. */
const specs = new Map<string, DiscreteSpec>();
const MAX_CACHED_SPECS = 64;

/** What a spec is built from: the sizes, the employee names in list order and the client names in sorted order. */
function specKey(sim: Simulation, k: number, t: number): string {
  return JSON.stringify([k, t, sim.state.employees.map((e) => e.name), clientsByName(sim.state.clients).map((c) => c.name)]);
}

/**
 * The spec of the frame for a simulation (fixed for its preset and the options). Built once per sizes, employee
 * names and client names (every reset of a preset asks for the same one) and shared: deep-frozen, read-only.
 */
export function discreteSpec(sim: Simulation, o: DiscreteOptions = {}): DiscreteSpec {
  const { market_slots: k, task_slots: t } = discreteSizes(o);
  const key = specKey(sim, k, t);
  let spec = specs.get(key);
  if (spec === undefined) {
    const b = buildDiscreteSpec(sim, { market_slots: k, task_slots: t });
    for (const a of [b.employees, b.clients, b.action_names, b.feature_names, b.obs_low, b.obs_high]) Object.freeze(a);
    spec = Object.freeze(b);
    if (specs.size >= MAX_CACHED_SPECS) specs.clear();
    specs.set(key, spec);
  }
  return spec;
}

/** `discreteSpec` built afresh (not shared, not frozen). */
export function buildDiscreteSpec(sim: Simulation, o: DiscreteOptions = {}): DiscreteSpec {
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

/** A feature's value as the frame holds it: clipped into its bounds (a non-finite value becomes the upper bound). */
function bounded(v: number, lo: number, hi: number): number {
  return clip(Number.isFinite(v) ? v : hi, lo, hi);
}

/** The values' writer of the reference frame: each feature bounded, in order, into a preallocated array. */
class ValueWriter implements Writer {
  n = 0;
  constructor(readonly obs: number[]) {}
  f(_prefix: string, _name: string, lo: number, hi: number, v: number): void {
    this.obs[this.n++] = bounded(v, lo, hi);
  }
}

/** Packed arrays per spec, copied for each frame (see `packedDoubles`). */
const doubleTemplates = new WeakMap<DiscreteSpec, number[]>();
const maskTemplates = new WeakMap<DiscreteSpec, boolean[]>();

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

/** A fresh packed array of `spec.n_actions` false (a `new Array(n).fill(false)` stays holey: slower to serialise). */
function packedFalse(spec: DiscreteSpec): boolean[] {
  let t = maskTemplates.get(spec);
  if (t === undefined) {
    t = [];
    for (let i = 0; i < spec.n_actions; i++) t.push(false);
    maskTemplates.set(spec, t);
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

/**
 * The frame as `features` defines it, computed straightforwardly (every feature through the writer, the mask with
 * `some`): the oracle `discreteFrame`'s fast path is tested against, and its fallback for states it does not cover.
 */
export function discreteFrameReference(sim: Simulation, spec: DiscreteSpec, open: Task[] = openTasks(sim), market: readonly Task[] = browsable(sim)): DiscreteFrame {
  const w = new ValueWriter(packedDoubles(spec));
  features(sim, spec.market_slots, spec.task_slots, w, open, market);
  const obs = w.obs;
  if (w.n !== obs.length) obs.length = w.n;
  const mask = packedFalse(spec);
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

/** A domain's index in `DOMAINS` (the order of the per-domain features). */
const DOMAIN_INDEX: Readonly<Record<string, number>> = Object.fromEntries(DOMAINS.map((d, i) => [d, i]));

/** Width of the frame's blocks (the layout `features` writes): company, one market slot, one task slot, one employee. */
const companyWidth = (clients: number) => 11 + clients;
const marketWidth = (clients: number) => 12 + clients;
const taskWidth = (employees: number) => 12 + employees;
const EMPLOYEE_WIDTH = 6;
/** Offset of `client_trust` in a market slot (the one feature of a listed task that changes while it is listed). */
const MARKET_CLIENT_TRUST = 4;

/**
 * Per simulation: what the features of a market task are computed from besides the task (fixed for a simulation
 * in practice; a new context, with empty caches, when any of it differs), the market features computed so far and
 * the open tasks of the last frame. Everything is kept per simulation (small maps, reached with one lookup per
 * frame): the frame of one of many sessions finds its simulation's data cold in the CPU caches, and a scan of every
 * task, or a lookup per task in one big table, costs more than the features themselves.
 */
interface FrameCtx {
  readonly funds0: number;
  readonly pmax: number;
  readonly tmax: number;
  readonly deadlineMin: number;
  readonly qtyPerDay: number;
  readonly clients: ReturnType<typeof clientsByName>;
  /** Listed tasks' market features, by task id. */
  readonly market: Map<number, MarketEntry>;
  /**
   * The frame's starting values, copied for each frame (private: never handed out): the market slots' values of the
   * listing `slotMarket` in their block (`marketEntry`'s, `client_trust` 0; zeros for an empty slot), every other
   * feature a placeholder that the frame overwrites. Built for `templateSpec`. The slots' tasks and client ids are
   * `slotTasks` and `slotClients`. A frame whose listing is the same array (`browsable` keeps it while nothing it
   * shows changed) copies the block with the template, without touching a task or an entry.
   */
  template: number[];
  templateSpec: DiscreteSpec | null;
  slotMarket: readonly Task[] | null;
  slotTasks: (Task | undefined)[];
  slotClients: (number | null)[];
  /** The task list and its length when `open` was listed. */
  tasks: readonly Task[] | null;
  taskCount: number;
  open: Task[];
}
const frameCtxs = new WeakMap<Simulation, FrameCtx>();

function frameCtx(sim: Simulation): FrameCtx {
  const cfg = sim.cfg.world;
  const funds0 = Math.max(1, sim.state.initialFundsCents);
  const clients = clientsByName(sim.state.clients);
  const c = frameCtxs.get(sim);
  if (c !== undefined && c.funds0 === funds0 && c.pmax === cfg.prestige_max && c.tmax === cfg.trust_max && c.deadlineMin === cfg.deadline_min_biz_days && c.qtyPerDay === cfg.deadline_qty_per_day && c.clients === clients) return c;
  const n: FrameCtx = { funds0, pmax: cfg.prestige_max, tmax: cfg.trust_max, deadlineMin: cfg.deadline_min_biz_days, qtyPerDay: cfg.deadline_qty_per_day, clients, market: new Map(), template: [], templateSpec: null, slotMarket: null, slotTasks: [], slotClients: [], tasks: null, taskCount: 0, open: [] };
  frameCtxs.set(sim, n);
  return n;
}

/**
 * `openTasks`, reusing the last frame's list while the task list has the same length. A task becomes open only by
 * `task accept`, which always adds the replacement task (the count grows); an open task's slot order (acceptance
 * time, rowid) never changes; it leaves the open set in place (completed, failed, cancelled): dropped here. A new
 * count lists them from `claimedTasks` (every owned task is claimed), not from every task (`openTasks`, the oracle).
 */
function openTasksOf(sim: Simulation, ctx: FrameCtx): Task[] {
  const tasks = sim.state.tasks;
  if (ctx.tasks !== tasks || ctx.taskCount !== tasks.length) {
    ctx.tasks = tasks;
    ctx.taskCount = tasks.length;
    // From the claimed tasks (every owned task among them; kept per task count, and extended by `task accept`
    // without a scan): the open tasks without reading the whole market.
    const out: Task[] = [];
    const claimed = claimedTasks(sim.state);
    for (let i = 0; i < claimed.length; i++) {
      const t = claimed[i] as Task;
      if (t.owned && (t.status === 'planned' || t.status === 'active')) out.push(t);
    }
    return (ctx.open = out.length > 1 ? out.sort(bySlot) : out);
  }
  const open = ctx.open;
  for (let i = 0; i < open.length; i++) {
    const t = open[i]!;
    if (!(t.owned && (t.status === 'planned' || t.status === 'active'))) {
      // Never changed in place: the list may be held by the caller (the frame's listings).
      return (ctx.open = open.filter((x) => x.owned && (x.status === 'planned' || x.status === 'active')));
    }
  }
  return open;
}

/**
 * The features of a listed market task, computed once per task: a listed task's own fields never change
 * (accepting one rewrites its requirements' quantities, and it leaves the market for good; `browsable` relies on
 * the same). A market slot holding the same task object as in the last frame reuses its entry without reading the
 * task; a task new to its slot finds its entry by id, reused when it is for the same task object with the same
 * requirement Decimals. `client_trust` (the client's trust changes) is left 0 here and written per frame.
 */
interface MarketEntry {
  readonly task: Task;
  readonly clientId: number | null;
  readonly required: readonly Task['reqs'][number]['required'][];
  readonly values: readonly number[];
}

function marketEntry(t: Task, ctx: FrameCtx): MarketEntry {
  const e = ctx.market.get(t.id);
  if (e !== undefined && e.task === t && e.required.length === t.reqs.length) {
    let same = true;
    for (let i = 0; i < t.reqs.length; i++) if (t.reqs[i]!.required !== e.required[i]) same = false;
    if (same) return e;
  }
  const v: number[] = [1, bounded(t.rewardCents / ctx.funds0, 0, 10), bounded(t.requiredPrestige / ctx.pmax, 0, 1), bounded(t.requiredTrust / ctx.tmax, 0, 1), 0];
  v.push(bounded(toFloat(t.rewardPrestigeDelta), 0, 10), bounded(toFloat(t.skillBoostPct), 0, 10));
  let maxQty = 0;
  for (let n = 0; n < DOMAINS.length; n++) {
    // The first requirement of the domain (as `reqs.find`).
    let q = 0;
    for (const r of t.reqs) {
      if (r.domain === DOMAINS[n]) {
        q = toFloat(r.required);
        break;
      }
    }
    maxQty = Math.max(maxQty, q);
    v.push(bounded(q / SCALE_QTY, 0, 10));
  }
  const days = Math.max(ctx.deadlineMin, Math.trunc(maxQty / ctx.qtyPerDay));
  v.push(bounded(days / MONTH_DAYS, 0, 100));
  for (const c of ctx.clients) v.push(t.clientId === c.id ? 1 : 0);
  const n: MarketEntry = { task: t, clientId: t.clientId, required: t.reqs.map((r) => r.required), values: v };
  ctx.market.set(t.id, n);
  return n;
}

/**
 * `ctx.template` for `spec` with the market block of `market` (K slots of width `mw` from offset `mo`). A slot holding
 * the same task as before keeps its values; a task new to its slot (an accept shifts the slots below it) takes its
 * entry (`marketEntry`: checked against the task, recomputed when its requirements changed).
 */
function marketTemplate(spec: DiscreteSpec, ctx: FrameCtx, market: readonly Task[], K: number, mw: number, mo: number): number[] {
  let tpl = ctx.template;
  if (ctx.templateSpec !== spec || tpl.length !== spec.obs_size) {
    tpl = ctx.template = packedDoubles(spec);
    ctx.templateSpec = spec;
    ctx.slotMarket = null;
    ctx.slotTasks = [];
    ctx.slotClients = [];
  }
  if (market === ctx.slotMarket) return tpl;
  for (let i = 0; i < K; i++) {
    const t = market[i];
    if (ctx.slotTasks[i] === t && t !== undefined) continue;
    const at = mo + i * mw;
    ctx.slotTasks[i] = t;
    if (t === undefined) {
      for (let x = 0; x < mw; x++) tpl[at + x] = 0;
      ctx.slotClients[i] = null;
      continue;
    }
    const e = marketEntry(t, ctx);
    for (let x = 0; x < mw; x++) tpl[at + x] = e.values[x] as number;
    ctx.slotClients[i] = e.clientId;
  }
  ctx.slotMarket = market;
  return tpl;
}

/** Scratch of `fastFrame`: each client's trust feature by id. */
const trustScratch: number[] = [];
/** Scratch of `fastFrame`: per open task slot, which employees (by index) it has. */
let assignedScratch = new Uint8Array(64);

/**
 * The frame written by index with the layout `features` defines (its values bit for bit), without closures or
 * per-slot searches, a listed market task's features taken from its `marketEntry`. Null when the state does not fit
 * the spec's layout (other client or employee counts, employee ids not their list index): the caller then computes
 * the reference frame.
 */
function fastFrame(sim: Simulation, spec: DiscreteSpec, ctx: FrameCtx, open: readonly Task[], market: readonly Task[]): DiscreteFrame | null {
  const s = sim.state;
  const clients = ctx.clients;
  const C = clients.length;
  const E = s.employees.length;
  const K = spec.market_slots;
  const T = spec.task_slots;
  if (C !== spec.clients.length || E !== spec.employees.length) return null;
  if (companyWidth(C) + K * marketWidth(C) + T * taskWidth(E) + E * EMPLOYEE_WIDTH !== spec.obs_size) return null;
  for (let e = 0; e < E; e++) if (s.employees[e]!.id !== e) return null;
  const { funds0, pmax, tmax } = ctx;
  const obs = marketTemplate(spec, ctx, market, K, marketWidth(C), companyWidth(C)).slice();
  const mask = packedFalse(spec);
  // Each client's trust feature by client id (as `features`' trustOf: s.clients[id], 0 when absent).
  const trustById = trustScratch;
  trustById.length = 0;
  for (const c of s.clients) trustById.push(c ? toFloat(c.trust) / tmax : 0);
  const trustOf = (clientId: number | null): number => (clientId === null ? 0 : (trustById[clientId] ?? 0));
  let o = 0;

  // Company.
  const payroll = payrollOf(s);
  obs[o++] = bounded(s.fundsCents / funds0, -10, 100);
  obs[o++] = bounded(payroll / funds0, 0, 10);
  obs[o++] = bounded(payroll > 0 ? s.fundsCents / payroll / 12 : 10, -10, 10);
  obs[o++] = bounded((s.simTime - s.startTime) / Math.max(1, s.horizonEnd - s.startTime), 0, 1);
  for (let n = 0; n < DOMAINS.length; n++) obs[o++] = bounded(toFloat(s.prestige[DOMAINS[n]!]) / pmax, 0, 1);
  for (let c = 0; c < C; c++) obs[o++] = bounded(toFloat(clients[c]!.trust) / tmax, 0, 1);
  let active = 0;
  for (const t of open) if (t.status === 'active') active++;
  obs[o++] = bounded(open.length / T, 0, MAX_SLOTS);
  obs[o++] = bounded(active / T, 0, MAX_SLOTS);
  obs[o++] = bounded(market.length / Math.max(1, sim.cfg.world.num_market_tasks), 0, 1);

  // Market slots: their values came with the template; each present slot's client trust.
  const mw = marketWidth(C);
  for (let i = 0; i < K; i++, o += mw) if (ctx.slotTasks[i] !== undefined) obs[o + MARKET_CLIENT_TRUST] = bounded(trustOf(ctx.slotClients[i] as number | null), 0, 1);

  // Task slots (and, per slot, which employees it has: the mask's and the employees' block's source).
  if (assignedScratch.length < T * E) assignedScratch = new Uint8Array(T * E);
  const assigned = assignedScratch;
  assigned.fill(0, 0, T * E);
  const tw = taskWidth(E);
  const remaining = [0, 0, 0, 0];
  for (let j = 0; j < T; j++, o += tw) {
    const t = open[j];
    if (t === undefined) {
      for (let x = 0; x < tw; x++) obs[o + x] = 0;
      continue;
    }
    // Progress as `task list` reports it; the remaining work of each domain's first requirement.
    let req = 0;
    let done = 0;
    for (const r of t.reqs) req += toFloat(r.required);
    let found = 0;
    for (const r of t.reqs) {
      const c = toFloat(r.completed);
      done += c;
      const n = DOMAIN_INDEX[r.domain];
      if (n !== undefined && (found & (1 << n)) === 0) {
        found |= 1 << n;
        remaining[n] = (toFloat(r.required) - c) / SCALE_QTY;
      }
    }
    const prog = req > 0 ? done / req : 0;
    obs[o] = 1;
    obs[o + 1] = t.status === 'planned' ? 1 : 0;
    obs[o + 2] = t.status === 'active' ? 1 : 0;
    obs[o + 3] = bounded(prog, 0, 1);
    obs[o + 4] = bounded(t.deadline !== null ? (t.deadline - s.simTime) / US_PER_DAY / MONTH_DAYS : 0, -12, 12);
    let eta = 12;
    if (prog > 0 && t.acceptedAt !== null) eta = ((s.simTime - t.acceptedAt) * (1 - prog)) / prog / US_PER_DAY / MONTH_DAYS;
    obs[o + 5] = bounded(eta, 0, 12);
    obs[o + 6] = bounded(t.rewardCents / funds0, 0, 10);
    obs[o + 7] = bounded(trustOf(t.clientId), 0, 1);
    for (let n = 0; n < 4; n++) obs[o + 8 + n] = (found & (1 << n)) === 0 ? 0 : bounded(remaining[n]!, 0, 10);
    for (const a of t.assignments) if (a.employeeId >= 0 && a.employeeId < E) assigned[j * E + a.employeeId] = 1;
    for (let e = 0; e < E; e++) obs[o + 12 + e] = assigned[j * E + e]!;
  }

  // Employees (every open task counts, also those beyond the task slots).
  for (let e = 0; e < E; e++, o += EMPLOYEE_WIDTH) {
    const emp = s.employees[e]!;
    for (let n = 0; n < TIERS.length; n++) obs[o + n] = emp.tier === TIERS[n] ? 1 : 0;
    obs[o + 3] = bounded(emp.salaryCents / SCALE_SALARY, 0, 100);
    let busy = 0;
    let onOpen = 0;
    for (let j = 0; j < open.length; j++) {
      const t = open[j]!;
      let has = j < T ? assigned[j * E + e] === 1 : false;
      if (j >= T) for (const a of t.assignments) if (a.employeeId === e) has = true;
      if (!has) continue;
      onOpen++;
      if (t.status === 'active') busy++;
    }
    obs[o + 4] = bounded(busy / T, 0, MAX_SLOTS);
    obs[o + 5] = bounded(onOpen / T, 0, MAX_SLOTS);
  }

  // Mask.
  let any = active > 0;
  mask[0] = any;
  if (open.length < T) {
    for (let i = 0; i < K && i < market.length; i++) mask[1 + i] = any = true;
  }
  const cancel = sim.cfg.fixes.task_cancel;
  for (let j = 0; j < T && j < open.length; j++) {
    const t = open[j]!;
    const base = 1 + K + j * (3 + E);
    let lacking = false;
    for (let e = 0; e < E; e++) {
      if (assigned[j * E + e] === 0) {
        lacking = true;
        mask[base + 3 + e] = true;
      }
    }
    const dispatch = t.status === 'planned' && t.assignments.length > 0;
    mask[base] = lacking;
    mask[base + 1] = dispatch;
    mask[base + 2] = cancel;
    if (lacking || dispatch || cancel) any = true;
  }
  if (!any) mask[0] = true;
  return { obs, mask };
}

/** Observation and mask of the current state (`lists`: receives the listings it was computed from). */
export function discreteFrame(sim: Simulation, spec: DiscreteSpec, lists?: FrameLists): DiscreteFrame {
  const ctx = frameCtx(sim);
  const open = openTasksOf(sim, ctx);
  const market = browsable(sim);
  if (lists !== undefined) {
    lists.market = market;
    lists.open = open;
  }
  return fastFrame(sim, spec, ctx, open, market) ?? discreteFrameReference(sim, spec, open, market);
}

const RESUME = commandSpec('sim', 'resume');
const ACCEPT = commandSpec('task', 'accept');
const ASSIGN = commandSpec('task', 'assign');
const DISPATCH = commandSpec('task', 'dispatch');
const CANCEL = commandSpec('task', 'cancel');
const NO_OPTIONS: ParsedOptions = Object.freeze({});

/** A Discrete action's command: the parsed form the simulation runs, and its command line for what shows it. */
export interface DiscreteCommand {
  /** The command line (`commandLine(spec, opts)`: `info.action_text`, the admissible commands, recordings). */
  command: string;
  /** The command of the table, and its options, as `parseLine(command)` gives them. */
  spec: CommandSpec;
  opts: ParsedOptions;
}

/**
 * The command of a valid action index, given the current market listing and open tasks, as its parsed form: the one
 * description of each action (the table above), which its command line is rendered from (`commandLine`).
 */
function parsedOf(sim: Simulation, spec: DiscreteSpec, a: number, market: () => readonly Task[], open: () => Task[]): { spec: CommandSpec; opts: ParsedOptions } {
  if (a === 0) return { spec: RESUME, opts: NO_OPTIONS };
  if (a <= spec.market_slots) return { spec: ACCEPT, opts: { task_id: sim.taskRef(market()[a - 1]!.id) } };
  const E = spec.employees.length;
  const r = a - 1 - spec.market_slots;
  const op = r % (3 + E);
  const id = sim.taskRef(open()[Math.floor(r / (3 + E))]!.id);
  if (op === 0) return { spec: ASSIGN, opts: { task_id: id, employees: sim.state.employees.map((e) => e.name).join(',') } };
  if (op === 1) return { spec: DISPATCH, opts: { task_id: id } };
  if (op === 2) return { spec: CANCEL, opts: { task_id: id, reason: 'discrete' } };
  return { spec: ASSIGN, opts: { task_id: id, employees: sim.state.employees[op - 3]!.name } };
}

/** `parsedOf` with its command line. */
function commandOf(sim: Simulation, spec: DiscreteSpec, a: number, market: () => readonly Task[], open: () => Task[]): DiscreteCommand {
  const p = parsedOf(sim, spec, a, market, open);
  return { command: commandLine(p.spec, p.opts), spec: p.spec, opts: p.opts };
}

/**
 * The command of action `a` in the current state, or why there is none: out of range (`masked` false) or masked
 * out (`masked` true). `mask` must be the current mask; `lists`, when given, the listings the current frame was
 * computed from (`discreteFrame`), with the state unchanged since. Run it with `Simulation.executeParsed`.
 */
export function discreteCommand(sim: Simulation, spec: DiscreteSpec, mask: readonly boolean[], a: number, lists?: FrameLists): DiscreteCommand | { error: string; masked: boolean } {
  if (typeof a !== 'number' || !Number.isInteger(a) || a < 0 || a >= spec.n_actions) return { error: `action must be an integer in [0, ${spec.n_actions - 1}]`, masked: false };
  if (!mask[a]) return { error: `action ${a} (${spec.action_names[a]}) is masked out (not valid now)`, masked: true };
  if (lists !== undefined) return commandOf(sim, spec, a, () => lists.market, () => lists.open);
  return commandOf(sim, spec, a, () => browsable(sim), () => openTasks(sim));
}

/** The commands of every masked-in action (TextWorld's `admissible_commands`), in action order (`lists`: as `discreteCommand`). */
export function admissibleCommands(sim: Simulation, spec: DiscreteSpec, mask: readonly boolean[], lists?: FrameLists): string[] {
  let market: readonly Task[] | null = lists?.market ?? null;
  let open: Task[] | null = lists?.open ?? null;
  const out: string[] = [];
  for (let a = 0; a < mask.length; a++) {
    if (mask[a]) out.push(commandOf(sim, spec, a, () => (market ??= browsable(sim)), () => (open ??= openTasks(sim))).command);
  }
  return out;
}
