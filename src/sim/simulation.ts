/**
 * A running YC-Bench company: world seeding (the reference's `sim init`), free-text command execution
 * with the reference's JSON results and errors, storage quantization at each command boundary, and
 * exact snapshot/restore to plain JSON.
 */
import { split as shlexSplit } from 'shlex';
import type { ExperimentConfig, WorldConfig } from './config/types.js';
import { runBounds } from './model/calendar.js';
import * as H from './commands/handlers.js';
import { CommandError } from './commands/handlers.js';
import { COMMANDS, parseArgv, type CommandSpec, type ParsedOptions, type ParseResult } from './commands/spec.js';
import { D, Dec } from './py/decimal.js';
import { insertEvent } from './model/engine.js';
import { pyFormatFixed } from './py/pyfloat.js';
import { type Out, pyJsonAppend, pyJsonDumps, type TextSink } from './py/pyjson.js';
import { isVerb, type CommandResults, type CommandValue, type ErrorResult, type Verb } from './commands/results.js';
import { DOMAINS, type Domain, type SimState, type Task } from './model/types.js';
import { marketTask, type TaskTemplate, type WorldMemo, worldTemplate } from './model/world-cache.js';
import { mapPacked } from './py/packed.js';

/**
 * Each world market's task ids by title (a task's id is its slot), kept in the world's memo and shared read-only by
 * the simulations created from it: held by the world, not a module-level WeakMap keyed by the market (whose values V8's
 * young-generation collector treats as reachable while the map is in the old generation: a bulk run's index of each
 * episode's new world was copied by the next scavenge, and promoted when the episode was running at the one before).
 */
function marketTitles(market: readonly TaskTemplate[], world: WorldMemo): ReadonlyMap<string, readonly number[]> {
  if (world.titles !== null) return world.titles;
  const m = new Map<string, number[]>();
  for (let slot = 0; slot < market.length; slot++) {
    const title = (market[slot] as TaskTemplate).title;
    const ids = m.get(title);
    if (ids !== undefined) ids.push(slot);
    else m.set(title, [slot]);
  }
  for (const ids of m.values()) Object.freeze(ids);
  return (world.titles = m);
}

/**
 * A simulation's task ids by title, in id order (`resolveTask` reads them): its world's market index (`marketTitles`,
 * shared: a new simulation does not index the hundreds of market titles again) and the tasks added since, whose ids
 * all come after the market's. A restored simulation indexes all its tasks itself.
 */
class TitleIndex implements H.TitleLookup {
  private readonly added = new Map<string, number[]>();
  constructor(private readonly market: ReadonlyMap<string, readonly number[]> | null) {}
  get(title: string): readonly number[] | undefined {
    const a = this.added.get(title);
    const m = this.market !== null ? this.market.get(title) : undefined;
    if (a === undefined) return m;
    return m === undefined ? a : m.concat(a);
  }
  add(title: string, id: number): void {
    const ids = this.added.get(title);
    if (ids) ids.push(id);
    else this.added.set(title, [id]);
  }
}

/** Options of a new simulation (defaults come from the preset's `[sim]` table). */
export interface SimOptions {
  seed: number;
  /** ISO date `YYYY-MM-DD`; the simulation starts at 09:00. */
  startDate?: string;
  companyName?: string;
  horizonYears?: number;
}

/** What a command prints: a fixed text (help, usage errors), or a value printed as Python JSON with this indent. */
type Printed = string | { readonly json: Out; readonly indent: number | null };

/**
 * Result of one command: exit code (0 ok, 1 rejected, 2 usage), typed value and the exact text printed.
 * `text` is computed on first access (serialising large outputs is the costliest part of a step).
 */
export class CommandResult {
  private textCache: string | undefined;
  constructor(
    /** Exit code: 0 ok, 1 rejected by the command, 2 usage error. */
    readonly exit: number,
    /** The verb's typed result (src/sim/commands/results.ts) when accepted, `{error}` when not, `null` for `--help`. */
    readonly value: CommandValue,
    /** True when the command was accepted and applied. */
    readonly ok: boolean,
    /** Verb (`group name`) that was recognised, or null. */
    readonly verb: Verb | null,
    private readonly printed: Printed,
  ) {}
  /** True when this is an accepted command of `verb`: `value` is then that verb's result (`isVerb`). */
  is<V extends Verb>(verb: V): this is CommandResult & { readonly verb: V; readonly value: CommandResults[V] } {
    return isVerb(this, verb);
  }
  /** What the reference CLI prints on stdout (JSON with `indent=2`, or the compact error object). */
  get text(): string {
    if (this.textCache === undefined) {
      const p = this.printed;
      this.textCache = typeof p === 'string' ? p : pyJsonDumps(p.json, p.indent);
    }
    return this.textCache;
  }
  /**
   * Append `text` to `sink` as UTF-8, rendered straight into its bytes when the string was not built yet: for writers
   * of byte buffers (the trajectory exporter).
   */
  appendText(sink: TextSink): void {
    const p = this.printed;
    if (this.textCache === undefined && typeof p !== 'string') pyJsonAppend(p.json, p.indent, sink);
    else sink.string(this.text);
  }
  /**
   * Append `text` as the contents of a JSON string (`JSON.stringify(text).slice(1, -1)`) to `sink`, rendered escaped
   * straight into its bytes when the text was not built: for replies carrying it.
   */
  appendEscapedText(sink: TextSink): void {
    const p = this.printed;
    if (this.textCache === undefined && typeof p !== 'string') pyJsonAppend(p.json, p.indent, sink, true);
    else sink.string(JSON.stringify(this.text).slice(1, -1));
  }
}

/** A verb's handler in the dispatch table. */
type Handler<V extends Verb> = (sim: Simulation, ctx: H.HandlerCtx, opts: ParsedOptions) => CommandResults[V];

/** Each command's verb text, built once per command spec (the dispatch table is looked up by it every step). */
const verbs = new WeakMap<CommandSpec, Verb>();
function verbOf(spec: CommandSpec): Verb {
  let v = verbs.get(spec);
  if (v === undefined) {
    v = `${spec.group} ${spec.name}` as Verb;
    verbs.set(spec, v);
  }
  return v;
}

/** The command table's entries (`executeParsed` runs only these). */
const TABLE: ReadonlySet<CommandSpec> = new Set(COMMANDS);

/**
 * Command lines already parsed into a command (options frozen): a line's parse is a pure function of its text, and
 * agents send the same few lines again and again (`sim resume`, `market browse --limit 200`, one task's accept,
 * assign and dispatch, every episode). Bounded in count; only short lines are kept.
 */
const parsedLines = new Map<string, ParseResult & { kind: 'command' }>();
const PARSED_LINES_MAX = 4096;
const PARSED_LINE_MAX_CHARS = 256;

/**
 * A command line split as POSIX `shlex.split` splits it (`unsplit` when it cannot be), the `yc-bench` prefix dropped,
 * and parsed (`parseArgv`). A command's parse is remembered by its line (see `parsedLines`) and its options frozen.
 */
export function parseLine(line: string): ParseResult | { kind: 'unsplit'; message: string } {
  const known = parsedLines.get(line);
  if (known !== undefined) return known;
  let argv: string[];
  if (!/["'\\]/.test(line)) {
    // Without quotes or backslashes, POSIX shlex.split is whitespace splitting on [ \t\r\n].
    argv = line.split(/[ \t\r\n]+/).filter((t) => t.length > 0);
  } else {
    try {
      argv = shlexSplit(line);
    } catch (e) {
      return { kind: 'unsplit', message: `Could not parse command: ${(e as Error).message}` };
    }
  }
  if (argv[0] === 'yc-bench') argv = argv.slice(1);
  const parsed = parseArgv(argv);
  if (parsed.kind === 'command') {
    Object.freeze(parsed.opts);
    if (line.length <= PARSED_LINE_MAX_CHARS) {
      if (parsedLines.size >= PARSED_LINES_MAX) parsedLines.clear();
      parsedLines.set(line, parsed);
    }
  }
  return parsed;
}

/** Limits protecting a long-running environment (not part of the reference). */
export interface SimLimits {
  /** Maximum command line length in characters. */
  maxCommandChars: number;
  /** Maximum scratchpad size in characters. */
  maxScratchpadChars: number;
}

/** Default limits: far above anything the benchmark needs. */
export const DEFAULT_LIMITS: SimLimits = { maxCommandChars: 65_536, maxScratchpadChars: 262_144 };

/** 32-bit murmur3 finalizer-style mix. */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Hash of an entity kind (the first step of {@link uuidHex}), remembered per kind. */
const kindHashes = new Map<string, number>();
function kindHash(kind: string): number {
  let k = kindHashes.get(kind);
  if (k === undefined) {
    k = 0x9e3779b9;
    for (let i = 0; i < kind.length; i++) k = mix32(k ^ Math.imul(kind.charCodeAt(i), 0x27d4eb2d));
    if (kindHashes.size < 64) kindHashes.set(kind, k);
  }
  return k;
}

/** Two lowercase hex digits of each byte value. */
const HEX2: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** `n.toString(16).padStart(8, '0')` for a uint32. */
function hex8(n: number): string {
  return (HEX2[n >>> 24] as string) + (HEX2[(n >>> 16) & 255] as string) + (HEX2[(n >>> 8) & 255] as string) + (HEX2[n & 255] as string);
}

/**
 * Deterministic UUID (v4 layout) of an entity: a 128-bit non-cryptographic hash of (seed, kind, id).
 * The reference uses random uuid4s; goldens replace them by `<uuid>`, so only stability matters here.
 * (The same text as joining the four words' 8-digit hex and cutting it: test/unit/uuid.test.ts.)
 */
export function uuidHex(seed: number, kind: string, id: number): string {
  const k = kindHash(kind);
  const sm = (seed >>> 0) ^ Math.imul(Math.floor(seed / 4294967296), 0x1b873593);
  const im = id ^ Math.imul(Math.floor(id / 4294967296), 0xcc9e2d51);
  const w = (i: number): string => hex8(mix32(mix32(mix32(k ^ Math.imul(i + 1, 0x165667b1)) ^ sm) ^ im));
  const h0 = w(0);
  const h1 = w(1);
  const h2 = w(2);
  const h3 = w(3);
  // h = h0 h1 h2 h3; v is the variant nibble from h[16], the first digit of h2
  const v = ((parseInt(h2[0] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h0}-${h1.slice(0, 4)}-4${h1.slice(5, 8)}-${v}${h2.slice(1, 4)}-${h2.slice(4, 8)}${h3}`;
}

/** The counts a world needs (the reference's `sim init` refuses the others): checked by `Simulation.create`. */
export function checkWorldCounts(w: WorldConfig): void {
  if (w.num_employees <= 0) throw new Error('employee_count must be positive');
  if (w.num_market_tasks <= 0) throw new Error('market_task_count must be positive');
}

/**
 * Every client's trust when a world is seeded, one instance for all (Decimals are immutable): the completion trust
 * memo (`trustMemo`) is keyed by the Decimal instance, and a new one per episode was a new key per client and episode
 * there, kept until the memo's bound cleared it.
 */
const START_TRUST = D('0.000');

/**
 * The one config validator, `presetConfig` of src/config/load.ts (the loader's schema, rules between fields, defaults and
 * derived fields; a `PresetError` naming the problems), which installs itself here when it is loaded (src/sim imports
 * nothing outside itself; every public entry, `ycgym/core` and `ycgym`, loads it). It returns a deep-frozen validated
 * config: the same object for a config it validated (a WeakSet lookup: the hot path of a bulk run), a copy for a
 * caller's object, validated again when that object was changed in place.
 */
let configValidator: ((cfg: ExperimentConfig) => ExperimentConfig) | null = null;

/** Install the config validator `Simulation.create` and `Simulation.restore` pass every config through. */
export function installConfigValidator(validate: (cfg: ExperimentConfig) => ExperimentConfig): void {
  configValidator = validate;
}

/** `cfg` as validated by the installed validator. */
function validatedConfig(cfg: ExperimentConfig): ExperimentConfig {
  if (configValidator === null) throw new Error('no config validator installed: load the simulation through ycgym/core (or src/config/load.js)');
  return configValidator(cfg);
}

/** A simulated company driven by agent commands. */
export class Simulation {
  readonly cfg: ExperimentConfig;
  readonly state: SimState;
  readonly limits: SimLimits;
  private readonly byTitle: TitleIndex;
  private uuidCache = new Map<string, string>();
  /** UUIDs by kind and id below 65536 (`uuid`): its world's (`WorldMemo.uuids`, the same seed), else the simulation's own. */
  private readonly uuidByKind: Map<string, (string | undefined)[]>;
  /** @internal What the command handlers keep of this simulation's state between commands (`H.StateMemos`). */
  readonly memos: H.StateMemos = H.stateMemos();

  /** `market`: the world's market when `state.tasks` is exactly the tasks created from it (`create`), with its world's memo; else null. */
  private constructor(cfg: ExperimentConfig, state: SimState, limits: SimLimits, market: readonly TaskTemplate[] | null = null, world: WorldMemo | null = null) {
    this.cfg = cfg;
    this.state = state;
    this.limits = limits;
    this.memos.world = world;
    this.uuidByKind = world !== null ? (world.uuids ??= new Map()) : new Map();
    this.byTitle = new TitleIndex(market !== null && world !== null ? marketTitles(market, world) : null);
    for (let i = market !== null ? market.length : 0; i < state.tasks.length; i++) this.indexTitle(state.tasks[i] as Task);
  }

  /**
   * Seed a new world exactly as the reference's `sim init` does. `cfg` is validated as the loader validates a preset
   * (a `PresetError` when it is not a config the loader accepts) and the simulation keeps the validated, deep-frozen
   * config: a config object changed in place later runs its new values on the next `create`.
   */
  static create(config: ExperimentConfig, opts: SimOptions, limits: SimLimits = DEFAULT_LIMITS): Simulation {
    const cfg = validatedConfig(config);
    const w = cfg.world;
    const { start, horizonEnd } = runBounds(opts.startDate ?? cfg.sim.start_date, opts.horizonYears ?? cfg.sim.horizon_years);
    checkWorldCounts(w);
    const world = worldTemplate(opts.seed, w);
    const genClients = world.clients;
    const p0 = D(pyFormatFixed(w.initial_prestige_level, 3));
    const prestige = {} as Record<Domain, Dec>;
    for (const d of DOMAINS) prestige[d] = p0;
    const tasks: Task[] = mapPacked(world.market, (tt, slot) =>
      marketTask(tt, { id: slot, title: tt.title, clientId: genClients.length > 0 ? tt.clientIndex % genClients.length : null, rewardCents: tt.rewardFundsCents, marketSlot: slot }),
    );
    const state: SimState = {
      seed: opts.seed,
      companyName: opts.companyName ?? cfg.sim.company_name,
      startTime: start,
      horizonEnd,
      simTime: start,
      fundsCents: w.initial_funds_cents,
      initialFundsCents: w.initial_funds_cents,
      prestige,
      employees: mapPacked(world.employees, (e, i) => ({ id: i, name: e.name, tier: e.tier, salaryCents: e.salary_cents, rates: { ...(world.employeeRates[i] as Record<Domain, Dec>) } })),
      clients: mapPacked(genClients, (c, i) => ({
        id: i,
        name: c.name,
        rewardMultiplier: c.reward_multiplier,
        tier: c.tier,
        specialties: [...c.specialty_domains],
        loyalty: c.loyalty,
        trust: START_TRUST,
      })),
      tasks,
      events: [],
      nextEventSeq: 0,
      ledger: [],
      scratchpad: '',
      replacementSerial: 0,
    };
    insertEvent(state, 'horizon_end', horizonEnd, null, null, 'horizon_end');
    return new Simulation(cfg, state, limits, world.market, world.memo);
  }

  private indexTitle(t: Task): void {
    this.byTitle.add(t.title, t.id);
  }

  /** Deterministic UUID of an entity (stable for a seed; the reference's are random uuid4s). */
  uuid(kind: string, id: number): string {
    // Ids 0 <= id < 65536 by kind and index, without building a key text per call; others by text.
    if (Number.isInteger(id) && id >= 0 && id < 65_536) {
      let byId = this.uuidByKind.get(kind);
      if (byId === undefined) this.uuidByKind.set(kind, (byId = []));
      let u = byId[id];
      if (u === undefined) {
        u = uuidHex(this.state.seed, kind, id);
        // filled up to id: a packed array (a store far past the end would make it a dictionary)
        while (byId.length < id) byId.push(undefined);
        byId[id] = u;
      }
      return u;
    }
    const key = `${kind}:${id}`;
    let u = this.uuidCache.get(key);
    if (u === undefined) {
      u = uuidHex(this.state.seed, kind, id);
      this.uuidCache.set(key, u);
    }
    return u;
  }

  private fromUuid(kind: 'task' | 'employee', hex: string): number | null {
    const n = kind === 'task' ? this.state.tasks.length : this.state.employees.length;
    for (let i = 0; i < n; i++) if (this.uuid(kind, i).replace(/-/g, '') === hex) return i;
    return null;
  }

  /**
   * The shortest command reference to task `id` that resolves to exactly that task: its title when the
   * title resolves to it (titles can repeat; resolution prefers market < planned < active), else its UUID.
   */
  taskRef(id: number): string {
    const t = this.state.tasks[id];
    if (t === undefined) throw new RangeError(`no task ${id}`);
    const byTitle = H.resolveTask(this.handlerCtx(), t.title, this.byTitle);
    return byTitle !== null && byTitle.id === id && /^[A-Za-z0-9_.:+-]+$/.test(t.title) ? t.title : this.uuid('task', id);
  }

  /** The handlers' context: one per simulation (its fields never change), not an object and two closures per command. */
  private ctx: H.HandlerCtx | null = null;
  private handlerCtx(): H.HandlerCtx {
    return (this.ctx ??= Object.freeze({ state: this.state, cfg: this.cfg, uuid: (k: string, i: number) => this.uuid(k, i), fromUuid: (k: 'task' | 'employee', h: string) => this.fromUuid(k, h), memos: this.memos }));
  }

  /** Run one command line (with or without the `yc-bench` prefix). Never throws for bad input. */
  execute(line: string): CommandResult {
    if (typeof line !== 'string') return this.usage('Command must be a string.', null);
    if (line.length > this.limits.maxCommandChars) {
      return this.usage(`Command too long: ${line.length} characters (limit ${this.limits.maxCommandChars}).`, null);
    }
    const parsed = parseLine(line);
    if (parsed.kind === 'help') return new CommandResult(0, null, true, null, parsed.text);
    if (parsed.kind === 'usage') return this.usage(parsed.message, null, parsed.usage);
    if (parsed.kind === 'unsplit') return this.usage(parsed.message, null);
    return this.run(parsed.spec, parsed.opts);
  }

  /**
   * Run a command the program built already parsed: `spec` one of `COMMANDS`, `opts` as `parseLine` gives them, `line`
   * its rendered command line (`commandLine(spec, opts)`, which parses back to them). The result of `execute(line)`,
   * without splitting and parsing again the line that was rendered from them (the Discrete actions run this way);
   * `line`'s length is held to `maxCommandChars` as `execute` holds it. A `spec` outside the table is a programming error.
   */
  executeParsed(spec: CommandSpec, opts: ParsedOptions, line: string): CommandResult {
    if (!TABLE.has(spec)) throw new RangeError(`not a command of the table: ${spec.group} ${spec.name}`);
    if (line.length > this.limits.maxCommandChars) {
      return this.usage(`Command too long: ${line.length} characters (limit ${this.limits.maxCommandChars}).`, null);
    }
    return this.run(spec, opts);
  }

  private usage(message: string, verb: Verb | null, usage?: string): CommandResult {
    const value: ErrorResult = { error: message };
    return new CommandResult(2, value, false, verb, usage ? `${usage}\n\nError: ${message}` : `Error: ${message}`);
  }

  private run(spec: CommandSpec, opts: ParsedOptions): CommandResult {
    // Every command of the grammar has a handler (test/unit/command-results.test.ts runs them all).
    const verb = verbOf(spec);
    const ctx = this.handlerCtx();
    try {
      const value = this.dispatch(ctx, verb, spec, opts);
      return new CommandResult(0, value, true, verb, { json: value, indent: 2 });
    } catch (e) {
      if (e instanceof CommandError) {
        const value: ErrorResult = { error: e.message };
        return new CommandResult(e.exit, value, false, verb, { json: value, indent: null });
      }
      throw e;
    }
  }

  private dispatch(ctx: H.HandlerCtx, verb: Verb, spec: CommandSpec, opts: ParsedOptions): CommandResults[Verb] {
    const handler: Handler<Verb> | undefined = Simulation.HANDLERS[verb];
    if (handler === undefined) throw new CommandError(`Unknown command: ${spec.group} ${spec.name}`, 2);
    return handler(this, ctx, opts);
  }

  /** Each verb's handler; the compiler checks each against the verb's result type. */
  private static readonly HANDLERS: { readonly [V in Verb]: Handler<V> } = {
    'sim init': (_sim, _ctx, opts) => H.simInit(opts),
    'sim resume': (_sim, ctx) => H.simResume(ctx),
    'company status': (_sim, ctx) => H.companyStatus(ctx),
    'employee list': (_sim, ctx) => H.employeeList(ctx),
    'market browse': (_sim, ctx, opts) => H.marketBrowse(ctx, opts),
    'task accept': (sim, ctx, opts) => H.taskAccept(ctx, opts, sim.byTitle, (t) => sim.addTask(t)),
    'task assign': (sim, ctx, opts) => H.taskAssign(ctx, opts, sim.byTitle),
    'task assign-all': () => H.taskAssignAll(),
    'task dispatch': (sim, ctx, opts) => H.taskDispatch(ctx, opts, sim.byTitle),
    'task list': (_sim, ctx, opts) => H.taskList(ctx, opts),
    'task inspect': (sim, ctx, opts) => H.taskInspect(ctx, opts, sim.byTitle),
    'task cancel': (sim, ctx, opts) => H.taskCancel(ctx, opts, sim.byTitle),
    'finance ledger': (_sim, ctx, opts) => H.financeLedger(ctx, opts),
    'report monthly': (_sim, ctx, opts) => H.reportMonthly(ctx, opts),
    'client list': (_sim, ctx) => H.clientList(ctx),
    'client history': (_sim, ctx) => H.clientHistory(ctx),
    'scratchpad read': (_sim, ctx) => H.scratchpadRead(ctx),
    'scratchpad write': (sim, ctx, opts) => {
      sim.checkScratchpad(false, opts);
      return H.scratchpadWrite(ctx, opts);
    },
    'scratchpad append': (sim, ctx, opts) => {
      sim.checkScratchpad(true, opts);
      return H.scratchpadAppend(ctx, opts);
    },
    'scratchpad clear': (_sim, ctx) => H.scratchpadClear(ctx),
  };

  /** Refuse a scratchpad command whose content would make the scratchpad exceed its limit. */
  private checkScratchpad(append: boolean, opts: ParsedOptions): void {
    const content = opts['content'];
    if (typeof content !== 'string') return;
    const size = append && this.state.scratchpad ? this.state.scratchpad.length + 1 + content.length : content.length;
    if (size > this.limits.maxScratchpadChars) {
      throw new CommandError(`Scratchpad would exceed ${this.limits.maxScratchpadChars} characters (${size}); nothing was changed.`);
    }
  }

  /** Add a task created by a command (`task accept`'s replacement) and index its title. */
  private addTask(t: Task): void {
    this.state.tasks.push(t);
    this.indexTitle(t);
  }

  /** Plain-JSON snapshot of the whole simulation (config included); `restore` continues it exactly. */
  snapshot(): SimSnapshot {
    const s = this.state;
    const dec = (d: Dec) => d.toString();
    return {
      format: 'ycgym-sim',
      version: 1,
      config: this.cfg,
      state: {
        seed: s.seed,
        companyName: s.companyName,
        startTime: s.startTime,
        horizonEnd: s.horizonEnd,
        simTime: s.simTime,
        fundsCents: s.fundsCents,
        initialFundsCents: s.initialFundsCents,
        prestige: Object.fromEntries(DOMAINS.map((d) => [d, dec(s.prestige[d])])),
        employees: mapPacked(s.employees, (e) => ({ ...e, rates: Object.fromEntries(DOMAINS.map((d) => [d, dec(e.rates[d])])) })),
        clients: mapPacked(s.clients, (c) => ({ ...c, specialties: [...c.specialties], trust: dec(c.trust) })),
        tasks: mapPacked(s.tasks, (t) => ({
          ...t,
          rewardPrestigeDelta: dec(t.rewardPrestigeDelta),
          skillBoostPct: dec(t.skillBoostPct),
          reqs: mapPacked(t.reqs, (r) => ({ domain: r.domain, required: dec(r.required), completed: dec(r.completed) })),
          assignments: mapPacked(t.assignments, (a) => ({ ...a })),
        })),
        events: mapPacked(s.events, (e) => ({ ...e })),
        nextEventSeq: s.nextEventSeq,
        ledger: mapPacked(s.ledger, (l) => ({ ...l })),
        scratchpad: s.scratchpad,
        replacementSerial: s.replacementSerial,
      },
    };
  }

  /**
   * Rebuild a simulation from `snapshot()` output (also after a JSON round trip). Its config is validated as
   * `create` validates one; the state is trusted (a snapshot from outside the process goes through Env's checks first).
   */
  static restore(snap: SimSnapshot, limits: SimLimits = DEFAULT_LIMITS): Simulation {
    if (snap.format !== 'ycgym-sim' || snap.version !== 1) throw new Error('not a ycgym simulation snapshot (format ycgym-sim, version 1)');
    const cfg = validatedConfig(snap.config);
    const s = snap.state;
    const rec = (o: Record<string, string>) => {
      const r = {} as Record<Domain, Dec>;
      for (const d of DOMAINS) r[d] = D(o[d] as string);
      return r;
    };
    const state: SimState = {
      seed: s.seed,
      companyName: s.companyName,
      startTime: s.startTime,
      horizonEnd: s.horizonEnd,
      simTime: s.simTime,
      fundsCents: s.fundsCents,
      initialFundsCents: s.initialFundsCents,
      prestige: rec(s.prestige),
      employees: mapPacked(s.employees, (e) => ({ ...e, rates: rec(e.rates) })),
      clients: mapPacked(s.clients, (c) => ({ ...c, specialties: [...c.specialties] as Domain[], trust: D(c.trust) })),
      tasks: mapPacked(s.tasks, (t) => ({
        ...t,
        rewardPrestigeDelta: D(t.rewardPrestigeDelta),
        skillBoostPct: D(t.skillBoostPct),
        reqs: mapPacked(t.reqs, (r) => ({ domain: r.domain as Domain, required: D(r.required), completed: D(r.completed) })),
        assignments: mapPacked(t.assignments, (a) => ({ ...a })),
      })) as Task[],
      events: mapPacked(s.events, (e) => ({ ...e })) as SimState['events'],
      nextEventSeq: s.nextEventSeq,
      ledger: mapPacked(s.ledger, (l) => ({ ...l })) as SimState['ledger'],
      scratchpad: s.scratchpad,
      replacementSerial: s.replacementSerial,
    };
    return new Simulation(cfg, state, limits);
  }

  /** An independent copy continuing identically. */
  clone(): Simulation {
    return Simulation.restore(this.snapshot(), this.limits);
  }
}

/** JSON snapshot of a simulation. Decimals are strings; instants are µs since epoch. */
export interface SimSnapshot {
  format: 'ycgym-sim';
  version: 1;
  config: ExperimentConfig;
  state: {
    seed: number;
    companyName: string;
    startTime: number;
    horizonEnd: number;
    simTime: number;
    fundsCents: number;
    initialFundsCents: number;
    prestige: Record<string, string>;
    employees: { id: number; name: string; tier: string; salaryCents: number; rates: Record<string, string> }[];
    clients: { id: number; name: string; rewardMultiplier: number; tier: string; specialties: string[]; loyalty: number; trust: string }[];
    tasks: (Omit<Task, 'rewardPrestigeDelta' | 'skillBoostPct' | 'reqs'> & {
      rewardPrestigeDelta: string;
      skillBoostPct: string;
      reqs: { domain: string; required: string; completed: string }[];
    })[];
    events: SimState['events'];
    nextEventSeq: number;
    ledger: SimState['ledger'];
    scratchpad: string;
    replacementSerial: number;
  };
}


