/**
 * The Gym-shaped environment: one step is one agent command (free text in, structured observation out).
 * Reward is the change in company funds caused by the step, in dollars (exact cents in `info`).
 */
import { presetConfig } from '../config/load.js';
import { resetRequestProblem } from './schema-errors.js';
import { ResetRequest } from './local-validators.generated.js';
import { checkWorldCounts, clientsByName, type CommandResult, type CompanyFigures, type CommandValue, companyFigures, countTasks, DOMAINS, type ExperimentConfig, isBankrupt, isHorizonReached, isoformat, isVerb, mapPacked, payrollOf, runwayMonths, type SimSnapshot, Simulation, type TaskCounts, terminalReason, type TextSink, toFloat, type VerbValue, type WakeEvent, worldClients } from '../sim/index.js';
import { validateSimSnapshot } from './snapshot.js';
import { admissibleCommands, discreteCommand, discreteFrame, discreteSizes, discreteSpec, type DiscreteCommand, type DiscreteFrame, type DiscreteSpec, type FrameLists } from './discrete.js';

/** Default of the `stall_steps` reset option: steps in a row without simulated time advancing before truncation. */
export const DEFAULT_STALL_STEPS = 200;

/** Options of `reset`. */
export interface ResetOptions {
  /** Truncate the episode after this many steps (default: unlimited). */
  max_steps?: number;
  /**
   * Truncate the episode after this many consecutive steps that do not advance simulated time (default
   * `DEFAULT_STALL_STEPS`; 0 disables the rule): a policy that never gets `sim resume` to advance ends its episode.
   */
  stall_steps?: number;
  /** ISO start date (default: the preset's `sim.start_date`). */
  start_date?: string;
  company_name?: string;
  horizon_years?: number;
  /**
   * `"text"` (default): actions are command lines. `"discrete"`: actions are integer indices of the Discrete frame
   * (src/env/discrete.ts); every observation carries `discrete` (numeric features and the action mask) and the
   * reset info carries `discrete_spec`.
   */
  actions?: 'text' | 'discrete';
  /** Discrete frame: visible market tasks offered for accept (K, default 10). */
  market_slots?: number;
  /** Discrete frame: open owned tasks addressable (T, default 4). */
  task_slots?: number;
  /** Add `info.admissible_commands` (the commands of the masked-in Discrete actions) to every step (either mode). */
  admissible_commands?: boolean;
  /**
   * `false`: observations carry no output text (`text` is `""`; everything else is unchanged), so the command output
   * is never rendered: for agents that read the typed status block or the Discrete frame. Default true (LLM agents
   * read the text).
   */
  text?: boolean;
}

/** Arguments of `reset`. */
export interface ResetArgs {
  seed: number;
  /** Preset name or path, or an already loaded config (default `"default"`). */
  preset?: string | ExperimentConfig;
  options?: ResetOptions;
}

/** Why `action`, of the wrong type for `mode`, is not an action. */
function actionTypeProblem(mode: 'text' | 'discrete', action: unknown): string {
  if (mode === 'discrete') return 'in discrete mode the action is an integer index';
  if (typeof action === 'number') return 'in text mode the action is a command string (integer actions need the reset option actions: "discrete")';
  return `in text mode the action is a command string, got ${action === null ? 'null' : typeof action}`;
}

/** The typed status block of every observation. */
export interface Status {
  sim_time: string;
  horizon_end: string;
  funds_cents: number;
  monthly_payroll_cents: number;
  runway_months: number | null;
  prestige: Record<string, number>;
  trust: Record<string, number>;
  active_tasks: number;
  planned_tasks: number;
  completed_tasks: number;
  bankrupt: boolean;
  horizon_reached: boolean;
  events: unknown[];
}

/** What the agent sees after each step. */
export interface Observation {
  /** Exactly what the reference CLI prints for the command. */
  text: string;
  ok: boolean;
  exit_code: number;
  /** Recognised verb (`"task accept"`) or null. */
  command: string | null;
  status: Status;
  /** Discrete mode only: the numeric observation and the action mask after this step. */
  discrete?: DiscreteFrame;
}

/** Extra step information. */
export interface StepInfo {
  reward_cents: number;
  step: number;
  funds_cents: number;
  terminal_reason: 'bankruptcy' | 'horizon_end' | 'max_steps' | 'stall' | null;
  /** Discrete mode: the command line the integer action stood for. */
  action_text?: string;
  /** With the `admissible_commands` option: the commands of the actions masked in now. */
  admissible_commands?: string[];
  /** Discrete mode, reset and restore only: shapes, names and bounds of the frame. */
  discrete_spec?: DiscreteSpec;
  [k: string]: unknown;
}

/**
 * The terminal reason of the simulation among an env's reasons (`max_steps`, `stall`, `error` are not its own): a step
 * whose `terminal_reason` is one terminated the episode, any other reason truncated it.
 */
export function simulationReason(r: string | null | undefined): 'bankruptcy' | 'horizon_end' | null {
  return r === 'bankruptcy' || r === 'horizon_end' ? r : null;
}

/** Result of `reset`. */
export interface ResetResult {
  observation: Observation;
  info: StepInfo;
}

/** Result of `step`. */
export interface StepResult {
  observation: Observation;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

/** A byte writer of JSON text (src/server/json-writer.ts's `JsonWriter`): what a `WireValue` writes itself into. */
export interface JsonSink extends TextSink {
  /** Append an ASCII text as it is. */
  ascii(s: string): void;
  /** Append bytes as they are. */
  raw(bytes: Uint8Array): void;
  /** Append `JSON.stringify(x)` of a number. */
  number(x: number): void;
  /** Append `JSON.stringify(s)` of a string. */
  jsonString(s: string): void;
  /** Append `JSON.stringify(v)`. */
  value(v: unknown): void;
}

/**
 * A part of a step result not serialised yet (`Env.stepForWire`), read from the environment when it is: `toJSON` gives
 * the plain value (what `JSON.stringify` writes), `writeJson` writes exactly the bytes of its `JSON.stringify` straight
 * into a byte writer. Serialise the result before the environment steps again.
 */
export abstract class WireValue {
  abstract toJSON(): unknown;
  /** Append the JSON text to `out`. */
  abstract writeJson(out: JsonSink): void;
}

/** A step's output text: escaped straight from the command's value into the bytes, never built as a string. */
export class OutputText extends WireValue {
  constructor(private readonly source: Pick<CommandResult, 'text' | 'appendEscapedText'>) {
    super();
  }

  toJSON(): string {
    return this.source.text;
  }

  writeJson(out: JsonSink): void {
    out.ascii('"');
    this.source.appendEscapedText(out);
    out.ascii('"');
  }
}

/**
 * What an environment's wire status blocks were last written from (`StatusWire`): the JSON of the `prestige` and
 * `trust` objects (UTF-8, each with its key), rebuilt when `StatusObjects` replaces an object, and the bytes of the whole
 * block before its events (`{"sim_time":...,"events":`) with the figures they were written from. A step that changes
 * none of those figures (a command that reads, without moving time or money: most of an agent's steps) copies that
 * head; any other step writes it again.
 */
class StatusWireMemo {
  readonly objects = new StatusObjects();
  prestigeOf: Record<string, number> | null = null;
  prestigeJson: Buffer | null = null;
  trustOf: Record<string, number> | null = null;
  trustJson: Buffer | null = null;
  /** The block's bytes before its events, written from the fields below (null: none yet). */
  head: Uint8Array | null = null;
  private simTime = 0;
  private horizonEnd = 0;
  private fundsCents = 0;
  private payrollCents = 0;
  private active = 0;
  private planned = 0;
  private completed = 0;

  /**
   * Whether `head` was written from these figures and this memo's current `prestige` and `trust` JSON. Numbers compare
   * with `===`: equal numbers have one JSON text (0 and -0 both write "0"). The runway, `bankrupt` and
   * `horizon_reached` follow from the figures compared (funds and payroll, funds, the two times).
   */
  holds(f: CompanyFigures): boolean {
    return (
      this.head !== null &&
      this.prestigeOf === this.objects.prestige &&
      this.trustOf === this.objects.trust &&
      f.simTime === this.simTime &&
      f.horizonEnd === this.horizonEnd &&
      f.fundsCents === this.fundsCents &&
      f.monthlyPayrollCents === this.payrollCents &&
      f.tasks.active === this.active &&
      f.tasks.planned === this.planned &&
      f.tasks.completed === this.completed
    );
  }

  /** Keep `head` (a copy of the bytes just written) as written from `f` and the current objects' JSON. */
  keep(f: CompanyFigures, head: Uint8Array): void {
    this.head = head;
    this.simTime = f.simTime;
    this.horizonEnd = f.horizonEnd;
    this.fundsCents = f.fundsCents;
    this.payrollCents = f.monthlyPayrollCents;
    this.active = f.tasks.active;
    this.planned = f.tasks.planned;
    this.completed = f.tasks.completed;
  }
}

/** A client of the simulation's state. */
type SimClient = Simulation['state']['clients'][number];

/**
 * A step's status block written straight from the simulation when the reply is serialised: the bytes of
 * `JSON.stringify(statusOf(sim, events))` (what `toJSON` gives), without building the block: while its figures are
 * unchanged the bytes before its events are copied from the environment's memo (`StatusWireMemo`), and so are the JSON of
 * its `prestige` and `trust` objects while their values are.
 */
class StatusWire extends WireValue {
  constructor(
    private readonly sim: Simulation,
    private readonly events: unknown[],
    private readonly memo: StatusWireMemo,
  ) {
    super();
  }

  toJSON(): Status {
    return statusOf(this.sim, this.events);
  }

  writeJson(out: JsonSink): void {
    const s = this.sim.state;
    const m = this.memo;
    const f = companyFigures(s);
    const o = m.objects.update(s);
    if (m.holds(f)) {
      out.raw(m.head as Uint8Array);
    } else {
      const start = out.used;
      out.ascii('{"sim_time":');
      out.jsonString(isoformat(f.simTime));
      out.ascii(',"horizon_end":');
      out.jsonString(isoformat(f.horizonEnd));
      out.ascii(',"funds_cents":');
      out.number(f.fundsCents);
      out.ascii(',"monthly_payroll_cents":');
      out.number(f.monthlyPayrollCents);
      out.ascii(',"runway_months":');
      if (f.runwayMonths === null) out.ascii('null');
      else out.number(f.runwayMonths);
      if (m.prestigeOf !== o.prestige) {
        m.prestigeOf = o.prestige;
        m.prestigeJson = Buffer.from(`,"prestige":${JSON.stringify(o.prestige)}`, 'utf8');
      }
      out.raw(m.prestigeJson as Buffer);
      if (m.trustOf !== o.trust) {
        m.trustOf = o.trust;
        m.trustJson = Buffer.from(`,"trust":${JSON.stringify(o.trust)}`, 'utf8');
      }
      out.raw(m.trustJson as Buffer);
      out.ascii(',"active_tasks":');
      out.number(f.tasks.active);
      out.ascii(',"planned_tasks":');
      out.number(f.tasks.planned);
      out.ascii(',"completed_tasks":');
      out.number(f.tasks.completed);
      out.ascii(f.bankrupt ? ',"bankrupt":true' : ',"bankrupt":false');
      out.ascii(f.horizonReached ? ',"horizon_reached":true' : ',"horizon_reached":false');
      out.ascii(',"events":');
      // A copy (the sink's buffer is reused and may move as it grows).
      m.keep(f, Uint8Array.prototype.slice.call(out.bytes, start, out.used));
    }
    if (this.events.length === 0) out.ascii('[]');
    else out.value(this.events);
    out.ascii('}');
  }
}

/** The observation of a `WireStep`: the keys in this order, `discrete` in discrete mode only. */
export interface WireObservation {
  text: string | OutputText;
  ok: boolean;
  exit_code: number;
  command: string | null;
  /** A `StatusWire` (any `WireValue` writes here). */
  status: WireValue;
  discrete?: DiscreteFrame;
}

/**
 * Three runs of a `WireStep`'s bytes as an environment last wrote them, with what they were written from: each is copied
 * while those inputs are the same (`===`: equal numbers have one JSON text, 0 and -0 both "0"), written again otherwise.
 * Most steps of a session repeat them (the same command, succeeding, with no reward, no end, the same funds). Exported
 * for its tests.
 */
export class WireStepMemo {
  /** `,"ok":…,"exit_code":…,"command":…,"status":` (null: none yet). */
  flags: Uint8Array | null = null;
  ok = false;
  exit = 0;
  command: string | null = null;
  /** `},"reward":…,"terminated":…,"truncated":…,"info":{"reward_cents":…,"step":` (null: none yet). */
  reward: Uint8Array | null = null;
  rewardOf = 0;
  terminated = false;
  truncated = false;
  rewardCents = 0;
  /** `,"funds_cents":…,"terminal_reason":…` (null: none yet). */
  funds: Uint8Array | null = null;
  fundsCents = 0;
  reason: StepInfo['terminal_reason'] = null;
}

/** The bytes `out` took since `start` (a copy: the sink's buffer is reused and may move as it grows). */
function taken(out: JsonSink, start: number): Uint8Array {
  return Uint8Array.prototype.slice.call(out.bytes, start, out.used);
}

/**
 * `Env.stepForWire`'s result: a `StepResult` (its fields are those of `step`'s, the text an `OutputText` unless empty,
 * the status block a `StatusWire`) that writes its own JSON with the keys it has, in their order, as `JSON.stringify`
 * would write the plain result (`toJSON`), without walking its objects key by key; runs of it that repeat from step to
 * step are copied from the environment's `WireStepMemo`. The observation and info are written as `Env.stepObserved`
 * builds them (info's four keys, then `action_text` in discrete mode and `admissible_commands` with that option): read
 * them only. Exported for its tests.
 */
export class WireStep extends WireValue {
  constructor(
    readonly observation: WireObservation,
    readonly reward: number,
    readonly terminated: boolean,
    readonly truncated: boolean,
    readonly info: StepInfo,
    private readonly memo: WireStepMemo,
  ) {
    super();
  }

  toJSON(): { observation: WireObservation; reward: number; terminated: boolean; truncated: boolean; info: StepInfo } {
    return { observation: this.observation, reward: this.reward, terminated: this.terminated, truncated: this.truncated, info: this.info };
  }

  writeJson(out: JsonSink): void {
    const o = this.observation;
    const m = this.memo;
    const i = this.info;
    out.ascii('{"observation":{"text":');
    if (typeof o.text === 'string') out.jsonString(o.text);
    else o.text.writeJson(out);
    if (m.flags !== null && o.ok === m.ok && o.exit_code === m.exit && o.command === m.command) {
      out.raw(m.flags);
    } else {
      const start = out.used;
      out.ascii(o.ok ? ',"ok":true,"exit_code":' : ',"ok":false,"exit_code":');
      out.number(o.exit_code);
      out.ascii(',"command":');
      if (o.command === null) out.ascii('null');
      else out.jsonString(o.command);
      out.ascii(',"status":');
      m.flags = taken(out, start);
      m.ok = o.ok;
      m.exit = o.exit_code;
      m.command = o.command;
    }
    o.status.writeJson(out);
    if (o.discrete !== undefined) {
      out.ascii(',"discrete":');
      out.value(o.discrete);
    }
    if (m.reward !== null && this.reward === m.rewardOf && this.terminated === m.terminated && this.truncated === m.truncated && i.reward_cents === m.rewardCents) {
      out.raw(m.reward);
    } else {
      const start = out.used;
      out.ascii('},"reward":');
      out.number(this.reward);
      out.ascii(this.terminated ? ',"terminated":true' : ',"terminated":false');
      out.ascii(this.truncated ? ',"truncated":true,"info":{"reward_cents":' : ',"truncated":false,"info":{"reward_cents":');
      out.number(i.reward_cents);
      out.ascii(',"step":');
      m.reward = taken(out, start);
      m.rewardOf = this.reward;
      m.terminated = this.terminated;
      m.truncated = this.truncated;
      m.rewardCents = i.reward_cents;
    }
    out.number(i.step);
    if (m.funds !== null && i.funds_cents === m.fundsCents && i.terminal_reason === m.reason) {
      out.raw(m.funds);
    } else {
      const start = out.used;
      out.ascii(',"funds_cents":');
      out.number(i.funds_cents);
      out.ascii(',"terminal_reason":');
      if (i.terminal_reason === null) out.ascii('null');
      else out.jsonString(i.terminal_reason);
      m.funds = taken(out, start);
      m.fundsCents = i.funds_cents;
      m.reason = i.terminal_reason;
    }
    if (i.action_text !== undefined) {
      out.ascii(',"action_text":');
      out.jsonString(i.action_text);
    }
    if (i.admissible_commands !== undefined) {
      out.ascii(',"admissible_commands":');
      out.value(i.admissible_commands);
    }
    out.ascii('}}');
  }
}

/** A `StepResult` whose output text may be an `OutputText`: its JSON is that of the `StepResult` (`Env.stepForWire`). */
export interface WireStepResult extends Omit<StepResult, 'observation'> {
  observation: Omit<Observation, 'text' | 'status'> & { text: string | OutputText; status: Status | WireValue };
}

/** An observation without its status block (`Env.stepWithoutStatus`). */
export type ObservationWithoutStatus = Omit<Observation, 'status'>;

/** Result of `Env.stepWithoutStatus`: a `StepResult` whose observation has no status block. */
export interface StepResultWithoutStatus extends Omit<StepResult, 'observation'> {
  observation: ObservationWithoutStatus;
}

/**
 * Result of `Env.stepWithoutStatus(action, true)`: its output text may be an `OutputText` (written into a reply's bytes
 * before the next step, never built as a string).
 */
export interface WireStepResultWithoutStatus extends Omit<StepResult, 'observation'> {
  observation: Omit<ObservationWithoutStatus, 'text'> & { text: string | OutputText };
}

/** A step without its observation (`Env.advance`): what an episode loop needs when nobody watches the steps. */
export interface StepOutcome {
  exit_code: number;
  /** The output's typed value (`Env.lastValue`). */
  value: CommandValue;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: StepInfo;
}

/** Exact, JSON-serialisable environment snapshot. */
export interface EnvSnapshot {
  format: 'ycgym-env';
  version: 1;
  sim: SimSnapshot;
  steps: number;
  max_steps: number | null;
  done: boolean;
  /** The stall rule (absent: the default) and the current count of steps without time advancing (absent: 0). */
  stall_steps?: number;
  stalled?: number;
  /** Action mode (absent: text). */
  actions?: 'text' | 'discrete';
  /** Discrete frame sizes (present when the frame is computed). */
  discrete?: { market_slots: number; task_slots: number };
  admissible_commands?: boolean;
  /** Output text off (absent: on). */
  text?: false;
}

/** Thrown when the API is misused (step before reset, step after the episode ended). */
export class EnvUsageError extends Error {
  constructor(
    readonly code: 'not_reset' | 'episode_over' | 'invalid_action',
    message: string,
  ) {
    super(message);
  }
}

/** The common interface of the in-process env and the network client (they are interchangeable). */
export interface EnvLike {
  reset(args: ResetArgs): ResetResult | Promise<ResetResult>;
  step(action: string | number): StepResult | Promise<StepResult>;
  snapshot(): EnvSnapshot | Promise<EnvSnapshot>;
  restore(snap: EnvSnapshot): ResetResult | Promise<ResetResult>;
  close(): void | Promise<void>;
}

/**
 * The wake events of a command's typed output: those of a successful `sim resume`, else none. The status block
 * carries them (`Env` and the turn protocol's `detail`).
 */
export function wakeEventsOf(r: VerbValue): WakeEvent[] {
  return isVerb(r, 'sim resume') ? r.value.wake_events : [];
}

/** What a step keeps of a command's output. */
type Output = Pick<CommandResult, 'ok' | 'exit' | 'verb' | 'value' | 'text' | 'appendText' | 'appendEscapedText'>;

/** The output of a refused (masked-out) Discrete action: the compact error object the reference prints. */
function refused(error: string): Output {
  const text = `{"error": ${JSON.stringify(error)}}`;
  return { ok: false, exit: 1, verb: null, value: null, text, appendText: (sink) => sink.string(text), appendEscapedText: (sink) => sink.string(JSON.stringify(text).slice(1, -1)) };
}

/**
 * The status block's `prestige`: each domain's prestige as a float, in `DOMAINS` order. One literal (its keys named:
 * see the `DOMAINS` check below), not keys added one by one in a loop: V8 builds the literal's object in one go, where
 * each key added by name took a map transition (most of this function's time in profiles of the in-process steps).
 */
function prestigeOf(s: Simulation['state']): Record<string, number> {
  const p = s.prestige;
  return { research: toFloat(p.research), inference: toFloat(p.inference), data_environment: toFloat(p.data_environment), training: toFloat(p.training) };
}

/**
 * The status block's `trust`: each client's trust as a float, by name, clients in `clientsByName` order; set in `trust`
 * (default a new object). An object that `trustOf` filled from the same clients with the same names has those keys in
 * that order already: filling it again sets their values in place, as a new one would have them (the last of clients
 * of one name wins, a `__proto__` is never an own key: the same assignments), without adding a key.
 */
function trustOf(clients: readonly SimClient[], trust: Record<string, number> = {}): Record<string, number> {
  // By index: the shared order is a frozen array, whose iterator V8 runs without its fast path (an object per client).
  for (let i = 0; i < clients.length; i++) {
    const c = clients[i] as SimClient;
    trust[c.name] = toFloat(c.trust);
  }
  return trust;
}

/** The figures of a status block that a trajectory row records (`statusFigures`): no times, no events. */
export type StatusFigures = Pick<Status, 'funds_cents' | 'monthly_payroll_cents' | 'runway_months' | 'prestige' | 'trust' | 'active_tasks' | 'planned_tasks' | 'completed_tasks'>;

// `prestigeOf` and `StatusObjects.update` read the four domains' prestige by name: a change of DOMAINS must change them too.
DOMAINS satisfies readonly ['research', 'inference', 'data_environment', 'training'];

/**
 * `isoformat(t)` of the last instant asked (one status field's: `isoformat`'s own few-entry memo is shared by every date
 * a step formats and misses there); NaN matches no instant, so a NaN one is formatted each time.
 */
class LastIsoformat {
  private at = NaN;
  private text = '';

  of(t: number): string {
    if (t !== this.at) {
      this.text = isoformat(t);
      this.at = t;
    }
    return this.text;
  }
}

/**
 * A status block's `prestige` and `trust` objects, kept while their values are the same: prestige and trust are
 * immutable Decimals, replaced on every change (an unchanged reference is an unchanged value), and `clientsByName`
 * returns the same array while the clients are the same. `update` replaces an object (never mutates it) when a value
 * changes, so a reader may keep one and compare references. One per environment or episode recorder; read only.
 *
 * While the clients array, its clients and their names stay the same (a time advance changes only trust values), the
 * order by name is kept and a changed trust only marks `trust` out of date: the open twin that `trustCopy` copies has
 * its values set again in place when it is next read (its keys stay), and the frozen object is copied from it when that
 * is read (so an object no reader saw is never built).
 */
export class StatusObjects {
  /** The prestige Decimals `prestige` was built from, by domain (named loads: `DOMAINS` is these four). */
  private research: unknown = null;
  private inference: unknown = null;
  private dataEnvironment: unknown = null;
  private training: unknown = null;
  /**
   * The clients array `trust` was built from, its clients then (in its own order, not by name), their names and their
   * trust Decimals: one pass over the array tells whether `trust` still holds, without `clientsByName`'s lookup.
   */
  private clients: readonly SimClient[] | null = null;
  private clientsFrom: (SimClient | undefined)[] = [];
  private namesFrom: string[] = [];
  private trustFrom: unknown[] = [];
  /** `clientsByName(clients)` as it was when those clients had those names. */
  private sorted: readonly SimClient[] = [];
  /** Counts the changes of the trust inputs (clients, names, trust Decimals) seen by `update`. */
  private version = 0;
  private frozenTrust: Readonly<Record<string, number>> = Object.freeze({});
  private frozenVersion = -1;
  /** The same keys and values as `trust` in an object that is not frozen (V8 copies it several times faster). */
  private openTrust: Record<string, number> = {};
  private openVersion = -1;
  /**
   * The order `openTrust`'s keys were taken from: while `sorted` is that array (the same clients with the same names), a
   * change of trust sets `openTrust`'s values again in place (`trustOf` into it); another order builds a new object.
   */
  private openSorted: readonly SimClient[] | null = null;
  prestige: Record<string, number> = {};
  private fresh = true;
  /**
   * The status block's two instants and runway as last given (`statusFrom`): most steps read without moving time or
   * money, so the texts and the rounding are taken again only when an input changes. NaN matches no instant (a NaN
   * instant is formatted each time); the runway compares funds with `Object.is`, so -0 keeps a result of its own.
   */
  private readonly simTimeIso = new LastIsoformat();
  private readonly horizonIso = new LastIsoformat();
  private runwayKnown = false;
  private runwayFunds = 0;
  private runwayPayroll = 0;
  private runwayValue: number | null = null;
  /** Where `tasks` counts (one object for every block: a block copies the counts, never keeps the object). */
  private readonly counts: TaskCounts = { active: 0, planned: 0, completed: 0, cancelled: 0 };

  /** Each client's trust as a float, by name (`trustOf(clientsByName(clients))` as of the last `update`); frozen. */
  get trust(): Readonly<Record<string, number>> {
    if (this.frozenVersion !== this.version) {
      // Frozen: a row builder repeats a frozen record's structs when it sees the same object again (./export/table-builder.ts).
      this.frozenTrust = Object.freeze({ ...this.open() });
      this.frozenVersion = this.version;
    }
    return this.frozenTrust;
  }

  /** `openTrust` as of the last `update`: its values set again when a trust changed, a new object when the order did. */
  private open(): Record<string, number> {
    if (this.openVersion !== this.version) {
      if (this.openSorted === this.sorted) {
        trustOf(this.sorted, this.openTrust);
      } else {
        this.openTrust = trustOf(this.sorted);
        this.openSorted = this.sorted;
      }
      this.openVersion = this.version;
    }
    return this.openTrust;
  }

  /** Bring `prestige` and `trust` up to date with `s`. */
  update(s: Simulation['state']): this {
    const p = s.prestige;
    if (this.fresh || p.research !== this.research || p.inference !== this.inference || p.data_environment !== this.dataEnvironment || p.training !== this.training) {
      this.research = p.research;
      this.inference = p.inference;
      this.dataEnvironment = p.data_environment;
      this.training = p.training;
      this.prestige = prestigeOf(s);
    }
    const all = s.clients;
    const n = all.length;
    let same = !this.fresh && this.clients === all && this.clientsFrom.length === n;
    let changed = false;
    for (let i = 0; i < n && same; i++) {
      const c = all[i];
      same = c !== undefined && c === this.clientsFrom[i] && c.name === this.namesFrom[i];
      if (same && (c as SimClient).trust !== this.trustFrom[i]) {
        // The order by name holds (the clients and names so far are the same; a later difference takes it again below).
        this.trustFrom[i] = (c as SimClient).trust;
        changed = true;
      }
    }
    if (!same) {
      this.sorted = clientsByName(all);
      this.clients = all;
      this.clientsFrom = mapPacked(all, (c) => c);
      this.namesFrom = mapPacked(all, (c) => c.name);
      this.trustFrom = mapPacked(all, (c) => c.trust);
      this.version++;
    } else if (changed) {
      this.version++;
    }
    this.fresh = false;
    return this;
  }

  /** A new object with `trust`'s keys and values, in its order, not frozen (call `update` first). */
  trustCopy(): Record<string, number> {
    return { ...this.open() };
  }

  /** A new object with `prestige`'s keys and values, in its order (call `update` first). */
  prestigeCopy(): Record<string, number> {
    return { ...this.prestige };
  }

  /** `taskCounts(s)`, in an object of this `StatusObjects` that the next call overwrites: read it at once. */
  tasks(s: Simulation['state']): Readonly<TaskCounts> {
    return countTasks(s, this.counts);
  }

  /** `isoformat(t)` of a status block's `sim_time`. */
  simTimeText(t: number): string {
    return this.simTimeIso.of(t);
  }

  /** `isoformat(t)` of a status block's `horizon_end` (one instant per episode). */
  horizonText(t: number): string {
    return this.horizonIso.of(t);
  }

  /** A status block's `runway_months` (`companyFigures`'s `runwayMonths`) of these funds and this monthly payroll. */
  runway(fundsCents: number, payrollCents: number): number | null {
    if (!this.runwayKnown || !Object.is(fundsCents, this.runwayFunds) || payrollCents !== this.runwayPayroll) {
      this.runwayValue = runwayMonths(fundsCents, payrollCents);
      this.runwayFunds = fundsCents;
      this.runwayPayroll = payrollCents;
      this.runwayKnown = true;
    }
    return this.runwayValue;
  }
}

/**
 * The fields of `statusOf(sim)` that a trajectory row records, without the times (two ISO strings) and events it
 * does not: its `prestige` and `trust` objects are those of `objects` (kept while their values are the same, as
 * `StatusWire` keeps their JSON). Read them only. As `statusFrom` takes them: `companyFigures`' fields one by one (no
 * outcome, figures or counts object a row), the runway `objects` keeps while funds and payroll are the same, the task
 * counts written into `objects`' kept object.
 */
export function statusFigures(sim: Simulation, objects: StatusObjects): StatusFigures {
  const s = sim.state;
  const o = objects.update(s);
  const funds = s.fundsCents;
  const payroll = payrollOf(s);
  const tasks = o.tasks(s);
  return {
    funds_cents: funds,
    monthly_payroll_cents: payroll,
    runway_months: o.runway(funds, payroll),
    prestige: o.prestige,
    trust: o.trust,
    active_tasks: tasks.active,
    planned_tasks: tasks.planned,
    completed_tasks: tasks.completed,
  };
}

/** Build the status block of a simulation (`StatusWire` writes the same JSON without building it). */
export function statusOf(sim: Simulation, events: unknown[] = []): Status {
  const s = sim.state;
  const f = companyFigures(s);
  return statusBlock(isoformat(f.simTime), isoformat(f.horizonEnd), f.fundsCents, f.monthlyPayrollCents, f.runwayMonths, prestigeOf(s), trustOf(clientsByName(s.clients)), f.tasks, f.bankrupt, f.horizonReached, events);
}

/**
 * `statusOf(sim, events)`, its `prestige` and `trust` new objects copied from `objects` (brought up to date here) rather
 * than built key by key: the same keys, order and values, and like `statusOf`'s, objects of this block alone (not frozen,
 * shared with nothing). `Env`'s in-process steps build their status blocks this way.
 */
export function statusFrom(sim: Simulation, objects: StatusObjects, events: unknown[] = []): Status {
  const s = sim.state;
  const o = objects.update(s);
  // `companyFigures`' fields one by one, without its objects, and the texts and runway `objects` keeps while their inputs
  // are the same (the values `statusOf` gives).
  const funds = s.fundsCents;
  const payroll = payrollOf(s);
  return statusBlock(o.simTimeText(s.simTime), o.horizonText(s.horizonEnd), funds, payroll, o.runway(funds, payroll), o.prestigeCopy(), o.trustCopy(), o.tasks(s), isBankrupt(s), isHorizonReached(s), events);
}

/** The status block (`statusOf`, `statusFrom`): its fields in the order of its JSON, its prestige and trust objects its own. */
function statusBlock(
  simTime: string,
  horizonEnd: string,
  fundsCents: number,
  payrollCents: number,
  runway: number | null,
  prestige: Status['prestige'],
  trust: Status['trust'],
  tasks: CompanyFigures['tasks'],
  bankrupt: boolean,
  horizonReached: boolean,
  events: unknown[],
): Status {
  return {
    sim_time: simTime,
    horizon_end: horizonEnd,
    funds_cents: fundsCents,
    monthly_payroll_cents: payrollCents,
    runway_months: runway,
    prestige,
    trust,
    active_tasks: tasks.active,
    planned_tasks: tasks.planned,
    completed_tasks: tasks.completed,
    bankrupt,
    horizon_reached: horizonReached,
    events,
  };
}

/** What a client needs to build fixed-size observation spaces for a preset. */
export interface PresetDescription {
  /** Client names, sorted (the order of `status.trust`). */
  clients: string[];
  num_employees: number;
  prestige_max: number;
  trust_max: number;
}

/** Describe a preset's observation-relevant facts (clients are the same for every seed). */
export function describePreset(preset: string | ExperimentConfig): PresetDescription {
  const cfg = presetConfig(preset);
  // Refused as `Simulation.create` refuses it; then the clients of every world of the preset, without generating a
  // market or the employees (a server describes every preset when it starts; `num_employees` employees are generated).
  checkWorldCounts(cfg.world);
  return {
    clients: worldClients(cfg.world).map((c) => c.name).sort(),
    num_employees: cfg.world.num_employees,
    prestige_max: cfg.world.prestige_max,
    trust_max: cfg.world.trust_max,
  };
}

/** In-process YC-Bench environment. */
export class Env implements EnvLike {
  private sim: Simulation | null = null;
  private steps = 0;
  private maxSteps: number | null = null;
  private stallSteps = DEFAULT_STALL_STEPS;
  private stalled = 0;
  private done = false;
  private mode: 'text' | 'discrete' = 'text';
  private admissible = false;
  /** Whether observations carry the output text (reset option `text`). */
  private withText = true;
  private spec: DiscreteSpec | null = null;
  private frame: DiscreteFrame | null = null;
  /** The listings `frame` was computed from (valid while `frame` is: the state has not changed since). */
  private readonly frameLists: FrameLists = { market: [], open: [] };
  private last: Output | null = null;
  /** What this environment's wire status blocks were last written from (`StatusWire`). */
  private readonly statusMemo = new StatusWireMemo();
  /** What this environment's `WireStep`s last wrote (runs of their bytes copied while their inputs are the same). */
  private readonly wireMemo = new WireStepMemo();

  /**
   * The typed value of the last step's output (Python float tags kept; null before the first step, for help text
   * and for a refused Discrete action): what the observation's text renders. In-process policies read it instead
   * of parsing the text. Read-only: parts of it may be shared and frozen (the entries of `market browse` are reused
   * while their task is unchanged), so copy it (`structuredClone`) before changing anything in it.
   */
  get lastValue(): CommandValue {
    return this.last === null ? null : this.last.value;
  }

  /**
   * The last step's output as its observation flags it (`ok`, `exit_code` as `exit`, `command` as `verb`), without
   * building the observation: null before the first step. Read only.
   */
  get lastOutput(): Pick<CommandResult, 'ok' | 'exit' | 'verb'> | null {
    return this.last;
  }

  /** The Discrete frame's spec (null unless in discrete mode or with `admissible_commands`). */
  get discreteSpec(): DiscreteSpec | null {
    return this.spec;
  }

  /** The action mode of the episode (reset option `actions`): `"discrete"` observations carry the Discrete frame. */
  get actionMode(): 'text' | 'discrete' {
    return this.mode;
  }

  /** The underlying simulation (null before `reset`). */
  get simulation(): Simulation | null {
    return this.sim;
  }

  /** Start a new episode. */
  reset(args: ResetArgs): ResetResult {
    // The seed and options as the protocol's reset request has them (one schema): a non-integer seed or horizon, an
    // unknown option, ... is a RangeError naming the field, before anything changes.
    const problem = resetRequestProblem(ResetRequest, 'reset', args);
    if (problem !== null) throw new RangeError(problem);
    const cfg = presetConfig(args.preset);
    const o = args.options ?? {};
    const sizes = discreteSizes({ ...(o.market_slots !== undefined ? { market_slots: o.market_slots } : {}), ...(o.task_slots !== undefined ? { task_slots: o.task_slots } : {}) });
    const simOpts: { seed: number; startDate?: string; companyName?: string; horizonYears?: number } = { seed: args.seed };
    if (o.start_date !== undefined) simOpts.startDate = o.start_date;
    if (o.company_name !== undefined) simOpts.companyName = o.company_name;
    if (o.horizon_years !== undefined) simOpts.horizonYears = o.horizon_years;
    this.sim = Simulation.create(cfg, simOpts);
    this.steps = 0;
    this.maxSteps = o.max_steps ?? null;
    this.stallSteps = o.stall_steps ?? DEFAULT_STALL_STEPS;
    this.stalled = 0;
    this.done = false;
    this.setMode(o.actions ?? 'text', o.admissible_commands === true, sizes);
    this.withText = o.text !== false;
    this.last = null;
    return this.initial();
  }

  private setMode(mode: 'text' | 'discrete', admissible: boolean, sizes: { market_slots: number; task_slots: number }): void {
    this.mode = mode;
    this.admissible = admissible;
    this.spec = mode === 'discrete' || admissible ? discreteSpec(this.sim as Simulation, sizes) : null;
    this.frame = null;
  }

  /** Recompute the frame after a state change; attach it to the observation and info as configured. */
  private attachFrame(observation: { discrete?: DiscreteFrame }, info: StepInfo): void {
    if (this.spec === null) return;
    const sim = this.sim as Simulation;
    this.frame ??= discreteFrame(sim, this.spec, this.frameLists);
    if (this.mode === 'discrete') observation.discrete = this.frame;
    if (this.admissible) info.admissible_commands = admissibleCommands(sim, this.spec, this.frame.mask, this.frameLists);
  }

  private initial(): ResetResult {
    const sim = this.sim as Simulation;
    const observation: Observation = { text: '', ok: true, exit_code: 0, command: null, status: statusFrom(sim, this.statusMemo.objects) };
    const info = this.info(0);
    this.attachFrame(observation, info);
    if (this.mode === 'discrete') info.discrete_spec = this.spec as DiscreteSpec;
    return { observation, info };
  }

  /** The current action mask (discrete mode or `admissible_commands`; null otherwise). */
  actionMask(): boolean[] | null {
    return this.frame ? [...this.frame.mask] : null;
  }

  /**
   * Why the episode is over now: the simulation's terminal rule (`bankruptcy`, `horizon_end`: terminated), else this
   * env's truncations (`max_steps`, then `stall`), else null. Asked once per step (its info carries it, and the step's
   * flags follow from it: `advance`).
   */
  private terminalReason(): StepInfo['terminal_reason'] {
    const reason = terminalReason((this.sim as Simulation).state);
    if (reason !== null) return reason;
    if (this.maxSteps !== null && this.steps >= this.maxSteps) return 'max_steps';
    if (this.stallSteps > 0 && this.stalled >= this.stallSteps) return 'stall';
    return null;
  }

  private info(rewardCents: number): StepInfo {
    const s = (this.sim as Simulation).state;
    return { reward_cents: rewardCents, step: this.steps, funds_cents: s.fundsCents, terminal_reason: this.terminalReason() };
  }

  /**
   * Execute one agent command. Invalid commands are ordinary steps with an error observation and zero reward.
   * In discrete mode the action is an integer index of the Discrete frame. A masked-out index is refused: an
   * ordinary step that changes nothing in the simulation (observation `ok` false, exit code 1, an error text, no
   * `action_text`, reward 0; it counts as a step, and toward the stall rule). An index out of range or not an
   * integer throws `EnvUsageError` (code `invalid_action`) and is no step at all; so does a number in text mode.
   */
  step(action: string | number): StepResult {
    return this.stepObserved(action, true, false) as StepResult;
  }

  /**
   * `step` without building the observation's status block (everything else as `step` returns it): for consumers
   * that do not send it (the binary `step_batch` reply has no status block). `wire`: the output text is an `OutputText`
   * (empty text stays `""`), as `stepForWire` has it: serialise it before the next step.
   */
  stepWithoutStatus(action: string | number): StepResultWithoutStatus;
  stepWithoutStatus(action: string | number, wire: boolean): WireStepResultWithoutStatus;
  stepWithoutStatus(action: string | number, wire = false): WireStepResultWithoutStatus {
    return this.stepObserved(action, false, wire) as WireStepResultWithoutStatus;
  }

  /**
   * `step` whose observation text is an `OutputText` (empty text stays `""`) and whose status block is a `WireValue`
   * read from the simulation when it is serialised, for servers that serialise the result at once: a byte writer renders
   * the text escaped into the reply, never as a string, and writes the status block without building it. The result
   * itself is a `WireValue` (`WireStep`): it writes its JSON with its keys in order, not walked as a plain object, so
   * read it only (a key added to it, its observation or its info afterwards is not written). Serialise it before the next step (the status
   * block is the simulation's as it is then).
   */
  stepForWire(action: string | number): WireStepResult {
    return this.stepObserved(action, true, true) as WireStepResult;
  }

  /**
   * `advance`, then the observation: text (an `OutputText` when `wire`), flags, the status block when `withStatus`, and
   * the Discrete frame.
   */
  private stepObserved(action: string | number, withStatus: boolean, wire: boolean): Omit<WireStepResult, 'observation'> & { observation: Omit<WireStepResult['observation'], 'status'> & { status?: Status | WireValue } } {
    // `advance` is the core of every kind of step (a subclass that overrides it sees them all).
    const o = this.advance(action);
    const r = this.last as Output;
    if (withStatus && wire) {
      const obs: WireObservation = { text: !this.withText ? '' : new OutputText(r), ok: r.ok, exit_code: r.exit, command: r.verb, status: new StatusWire(this.sim as Simulation, wakeEventsOf(r), this.statusMemo) };
      this.attachFrame(obs, o.info);
      return new WireStep(obs, o.reward, o.terminated, o.truncated, o.info, this.wireMemo);
    }
    const text = !this.withText ? '' : wire ? new OutputText(r) : r.text;
    // One literal each (not a status key added afterwards): the keys in their order (text, ok, exit_code, command,
    // status; the frame's `discrete` after them).
    const observation: Omit<WireStepResult['observation'], 'status'> & { status?: Status | WireValue } = withStatus
      ? { text, ok: r.ok, exit_code: r.exit, command: r.verb, status: statusFrom(this.sim as Simulation, this.statusMemo.objects, wakeEventsOf(r)) }
      : { text, ok: r.ok, exit_code: r.exit, command: r.verb };
    this.attachFrame(observation, o.info);
    return { observation, reward: o.reward, terminated: o.terminated, truncated: o.truncated, info: o.info };
  }

  /**
   * `step` without building the observation (its text, status block and Discrete frame details are the costliest
   * part of a step): the reward, the flags, the info and the output's typed value. The episode loop uses it when
   * nobody watches the steps.
   */
  advance(action: string | number): StepOutcome {
    const sim = this.sim;
    if (sim === null) throw new EnvUsageError('not_reset', 'call reset() before step()');
    // An action of the other mode's type is a malformed request whatever the episode's state (as the protocol's
    // schema refuses other types before anything runs): said before the end of the episode is.
    if (this.mode === 'discrete' ? typeof action !== 'number' : typeof action !== 'string') throw new EnvUsageError('invalid_action', actionTypeProblem(this.mode, action));
    if (this.done) throw new EnvUsageError('episode_over', 'the episode is over (terminated or truncated); call reset()');
    let text: string | null;
    let refusal: string | null = null;
    // A Discrete action's command, built parsed: run as such (its line is rendered for `info.action_text`, not parsed).
    let parsed: DiscreteCommand | null = null;
    if (this.mode === 'discrete') {
      const spec = this.spec as DiscreteSpec;
      const frame = (this.frame ??= discreteFrame(sim, spec, this.frameLists));
      const c = discreteCommand(sim, spec, frame.mask, action as number, this.frameLists); // a number: checked above
      if ('error' in c && !c.masked) throw new EnvUsageError('invalid_action', c.error);
      if ('error' in c) {
        text = null;
        refusal = c.error;
      } else {
        parsed = c;
        text = c.command;
      }
    } else {
      text = action as string; // a string: checked above
    }
    const before = sim.state.fundsCents;
    const timeBefore = sim.state.simTime;
    const r = parsed !== null ? sim.executeParsed(parsed.spec, parsed.opts, parsed.command) : text !== null ? sim.execute(text) : refused(refusal as string);
    this.last = r;
    this.steps++;
    this.stalled = sim.state.simTime > timeBefore ? 0 : this.stalled + 1;
    const rewardCents = sim.state.fundsCents - before;
    const info = this.info(rewardCents);
    // The terminal rule asked once, for the info: the simulation's reason terminates the episode, the env's own
    // (`max_steps`, `stall`) truncate it.
    const terminated = simulationReason(info.terminal_reason) !== null;
    const truncated = !terminated && info.terminal_reason !== null;
    this.done = terminated || truncated;
    if (this.mode === 'discrete' && text !== null) info.action_text = text;
    // The next step's Discrete actions index this frame (the observation shows it when it is built).
    this.frame = this.spec !== null ? discreteFrame(sim, this.spec, this.frameLists) : null;
    return { exit_code: r.exit, value: r.value, reward: rewardCents / 100, terminated, truncated, info };
  }

  /**
   * Append the last step's output text (what `observation.text` carries with the default reset option `text: true`)
   * to `sink` as UTF-8. With `text: false` the text is rendered here straight into the sink's bytes, never as a
   * string: for writers of byte buffers (the trajectory exporter). Nothing before the first step.
   */
  appendLastText(sink: TextSink): void {
    this.last?.appendText(sink);
  }

  /** Exact snapshot of the whole environment. */
  snapshot(): EnvSnapshot {
    if (this.sim === null) throw new EnvUsageError('not_reset', 'call reset() before snapshot()');
    const snap: EnvSnapshot = { format: 'ycgym-env', version: 1, sim: this.sim.snapshot(), steps: this.steps, max_steps: this.maxSteps, done: this.done };
    if (this.stallSteps !== DEFAULT_STALL_STEPS) snap.stall_steps = this.stallSteps;
    if (this.stalled > 0) snap.stalled = this.stalled;
    if (this.mode !== 'text') snap.actions = this.mode;
    if (this.spec !== null) snap.discrete = { market_slots: this.spec.market_slots, task_slots: this.spec.task_slots };
    if (this.admissible) snap.admissible_commands = true;
    if (!this.withText) snap.text = false;
    return snap;
  }

  /** Continue from a snapshot exactly. */
  restore(snap: EnvSnapshot): ResetResult {
    if (!snap || snap.format !== 'ycgym-env' || snap.version !== 1) throw new RangeError('not a ycgym env snapshot (format ycgym-env, version 1)');
    if (!Number.isSafeInteger(snap.steps) || snap.steps < 0) throw new RangeError('invalid env snapshot: steps');
    if (snap.max_steps !== null && (!Number.isSafeInteger(snap.max_steps) || snap.max_steps < 1)) throw new RangeError('invalid env snapshot: max_steps');
    if (typeof snap.done !== 'boolean') throw new RangeError('invalid env snapshot: done');
    if (snap.actions !== undefined && snap.actions !== 'text' && snap.actions !== 'discrete') throw new RangeError('invalid env snapshot: actions');
    if (snap.admissible_commands !== undefined && typeof snap.admissible_commands !== 'boolean') throw new RangeError('invalid env snapshot: admissible_commands');
    if (snap.text !== undefined && snap.text !== false) throw new RangeError('invalid env snapshot: text');
    if (snap.stall_steps !== undefined && (!Number.isSafeInteger(snap.stall_steps) || snap.stall_steps < 0)) throw new RangeError('invalid env snapshot: stall_steps');
    if (snap.stalled !== undefined && (!Number.isSafeInteger(snap.stalled) || snap.stalled < 0)) throw new RangeError('invalid env snapshot: stalled');
    const sizes = discreteSizes(snap.discrete ?? {});
    this.sim = Simulation.restore(validateSimSnapshot(snap.sim));
    this.steps = snap.steps;
    this.maxSteps = snap.max_steps;
    this.done = snap.done;
    this.stallSteps = snap.stall_steps ?? DEFAULT_STALL_STEPS;
    this.stalled = snap.stalled ?? 0;
    this.setMode(snap.actions ?? 'text', snap.admissible_commands === true, sizes);
    this.withText = snap.text !== false;
    this.last = null;
    return this.initial();
  }

  /** An independent copy of this environment. */
  clone(): Env {
    const e = new Env();
    if (this.sim !== null) e.restore(this.snapshot());
    return e;
  }

  /** Release resources (nothing to release in-process). */
  close(): void {
    this.sim = null;
  }
}
