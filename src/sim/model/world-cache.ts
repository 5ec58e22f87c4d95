/**
 * Memoised world generation. Generation is a pure function of (run seed, world config), so generated
 * employees, clients, markets and replacement tasks are cached in bounded LRU maps and shared read-only
 * between simulations (Decimal values are immutable). Generating a world (~200 seeded Mersenne Twister streams
 * and their draws; `node dist/bench/world-gen.js`) is a sizeable part of a short episode; repeated seeds
 * (evaluation sets, RL resets) skip it.
 */
import type { WorldConfig } from '../config/types.js';
import { D, decFromFixed, type Dec } from '../py/decimal.js';
import { DZERO } from '../py/decimal.js';
import { DOMAINS, DOMAINS_ALPHA, type Domain, type Task } from './types.js';
import { mapPacked } from '../py/packed.js';
import { FIXED_WORLD_SEED, generateClients, generateEmployees, generateReplacementTask, generateTasks, type GenClient, type GenEmployee, type GenTask } from './world.js';

/**
 * A generated task as the simulation stores it: the generator's integer columns and its quantized Decimal columns
 * (the drawn floats and the requirements in sampling order are not kept: the world cache holds tens of thousands of
 * these, and every one kept is copied by the young-generation collector). Read-only.
 */
export interface TaskTemplate {
  readonly title: string;
  readonly clientIndex: number;
  readonly requiredPrestige: number;
  readonly rewardFundsCents: number;
  readonly requiredTrust: number;
  readonly rewardPrestigeDelta: Dec;
  readonly skillBoostPct: Dec;
  /** Requirements in alphabetical domain order (the order SQLite returns them). */
  readonly reqs: readonly { readonly domain: Domain; readonly required: Dec }[];
}

/** Employees, clients and market of one (seed, config). Read-only (but for `memo`). */
export interface WorldTemplate {
  readonly employees: readonly GenEmployee[];
  readonly employeeRates: readonly Readonly<Record<Domain, Dec>>[];
  readonly clients: readonly GenClient[];
  readonly market: readonly TaskTemplate[];
  /** What the simulations created from this world share of what they memoise (as long as the world is kept). */
  readonly memo: WorldMemo;
}

/** See `WorldTemplate.memo`. */
export interface WorldMemo {
  /** The command handlers' listing entries of the world's tasks (`WorldEntries`), null until the first listing. */
  entries: object | null;
  /** The market's task ids by title (the simulation's `marketTitles`), null until a simulation is created from the world. */
  titles: ReadonlyMap<string, readonly number[]> | null;
  /**
   * Entity UUIDs by kind and id (the simulation's `uuid`), null until a simulation is created from the world: a UUID is a
   * pure function of (seed, kind, id) and every simulation of the world has its seed, so an episode on a seed already
   * played finds the UUIDs of its tasks, ledger rows and clients here instead of hashing them again.
   */
  uuids: Map<string, (string | undefined)[]> | null;
}

/**
 * A bounded map dropping its least recently used entries, approximately: a hit moves its entry to the newest end only
 * when at least half the capacity of insertions and moves came after its last one (until then no eviction can reach it),
 * so the common hit is a lookup without the delete and re-insert. Only which misses regenerate depends on it.
 */
class Lru<V> {
  private map = new Map<string, { v: V; t: number }>();
  private clock = 0;
  /** `evicted`: called with each value dropped to keep the bound (not with values replaced or cleared). */
  constructor(
    private readonly cap: number,
    private readonly evicted: ((v: V) => void) | null = null,
  ) {}
  get(k: string): V | undefined {
    const e = this.map.get(k);
    if (e === undefined) return undefined;
    if (this.clock - e.t >= this.cap >> 1) {
      this.map.delete(k);
      this.map.set(k, e);
      e.t = ++this.clock;
    }
    return e.v;
  }
  set(k: string, v: V): void {
    this.map.delete(k);
    this.map.set(k, { v, t: ++this.clock });
    if (this.map.size > this.cap) {
      const oldest = this.map.keys().next().value as string;
      const e = this.map.get(oldest) as { v: V };
      this.map.delete(oldest);
      if (this.evicted !== null) this.evicted(e.v);
    }
  }
  /** `k`'s value if held (its recency unchanged). */
  peek(k: string): V | undefined {
    return this.map.get(k)?.v;
  }
  clear(): void {
    this.map.clear();
  }
  get size(): number {
    return this.map.size;
  }
}

/**
 * The keys asked for before, approximately (a cache's admission filter): a fixed table of 32-bit key hashes, one slot
 * per hash's low bits, so noting a key costs a hash of its text and one store, and the table never grows. A key whose
 * slot another key took since is taken for new (it is noted again); two keys of one hash pass for each other (the
 * second is taken for seen). Either only changes what is retained, never what is returned.
 */
class SeenBefore {
  private readonly slots: Int32Array;
  private readonly mask: number;
  constructor(bits: number) {
    this.slots = new Int32Array(1 << bits);
    this.mask = (1 << bits) - 1;
  }
  /** Whether `k` was noted before; notes it. */
  check(k: string): boolean {
    let h = 0x811c9dc5 | 0; // FNV-1a over the UTF-16 code units
    for (let i = 0; i < k.length; i++) h = Math.imul(h ^ k.charCodeAt(i), 0x01000193);
    h |= 1; // never 0, an empty slot's value
    const i = h & this.mask;
    if (this.slots[i] === h) return true;
    this.slots[i] = h;
    return false;
  }
  clear(): void {
    this.slots.fill(0);
  }
}

const cfgKeys = new WeakMap<WorldConfig, string>();
const interned = new Map<string, string>();
let nextConfigId = 0;
/**
 * A short key per distinct world config (structurally equal configs share it). Only a frozen config (a validated one:
 * every `Simulation` runs on one) is remembered by identity; any other is serialised on every call, so a world object
 * changed in place is keyed by its new content (identity alone gave the world cached for its old values).
 */
function cfgKey(w: WorldConfig): string {
  const frozen = Object.isFrozen(w);
  let k = frozen ? cfgKeys.get(w) : undefined;
  if (k === undefined) {
    const json = JSON.stringify(w);
    k = interned.get(json);
    if (k === undefined) {
      k = `c${nextConfigId++}`;
      // Bounded: forgetting a config only costs cache misses (ids are never reused).
      if (interned.size >= 256) interned.clear();
      interned.set(json, k);
    }
    if (frozen) cfgKeys.set(w, k);
  }
  return k;
}

/**
 * Worlds are retained from their key's second request on (`worldsAsked`): a bulk run plays every seed once, and
 * retaining each of its worlds (with their replacement tasks) only fed the old generation objects that no later
 * episode asked for (promoted, then walked by every mark-compact collection). A repeated seed (evaluation sets, RL
 * resets on a seed list, several policies on a few seeds) generates its world again on its second episode (unless it
 * is still the last one generated, `recent`) and finds it cached from its third.
 */
// (an eviction happens in `retain`, which counts the change)
const worlds = new Lru<RetainedWorld>(256, (w) => {
  retainedReplacements -= w.replacements.size;
});
/** A retained world and the replacement tasks generated for it (by counter), kept as long as it is. */
interface RetainedWorld {
  readonly t: WorldTemplate;
  readonly replacements: Map<number, Replacement>;
}
/** Replacement tasks retained, all worlds together (at most {@link REPLACEMENTS_MAX}). */
let retainedReplacements = 0;
const REPLACEMENTS_MAX = 65_536;
/** Bumped whenever the set of retained worlds changes (see `retainedFor`). */
let worldsChanged = 0;
/** World keys requested (4,096 slots: 16 KiB). */
const worldsAsked = new SeenBefore(12);
/**
 * The last world generated and not retained, until the next is generated: a request for it right after (another
 * policy on the same seed, an RL reset on the seed just played) finds it and retains it, so such a seed hits from its
 * second episode. A bulk run's world is dropped here when the next episode generates its own.
 */
let recentKey = '';
let recent: WorldTemplate | null = null;
/** Worlds generated since the process started (`worldsGenerated`: benchmarks and tests check what a run generated). */
let generatedWorlds = 0;
interface People {
  employees: GenEmployee[];
  clients: GenClient[];
  rates: Record<Domain, Dec>[];
}
const people = new Lru<People>(64);
const clientLists = new Lru<GenClient[]>(64);
/** A cached replacement task with the arguments besides (seed, counter, config) it was generated for. */
interface Replacement {
  readonly prestige: number;
  readonly clientIndex: number;
  readonly specialties: readonly Domain[] | null;
  readonly tt: TaskTemplate;
}
/**
 * Replacement tasks are retained with the world of their seed (`RetainedWorld.replacements`, by counter): a seed's first
 * episode keeps none. When {@link REPLACEMENTS_MAX} are retained, a world makes room among its own (its oldest first).
 */

/**
 * `D(pyFormatFixed(x, digits))` (built by decFromFixed) memoised by (digits, x): the stored column of a generated float. Drawn values repeat
 * (4-dp skill boosts and rates, integer quantities), so most lookups skip the formatting and the Decimal parse.
 * Instances are shared, which is safe because Decimals are immutable (and a market listing compares them by identity
 * only as a proxy for their value).
 *
 * The common keys go through arrays instead of a Map keyed by float (hashing a heap number per lookup): an integer
 * quantity 0 < x < {@link SMALL} is its own index; a 4-dp value x with k = round(x * 10^4) in (0, SMALL) is kept at
 * index k with x itself, and a lookup hits only for that very x (a different double with the same k, which the
 * generator's rounded draws never give, is served by the Map). test/unit/decimal-memo.test.ts compares both with the
 * unmemoised construction.
 */
const SMALL = 65_536;
const quantizedInt: (Dec | null)[] = new Array<Dec | null>(SMALL).fill(null);
const quantized4Key = new Float64Array(SMALL);
const quantized4: (Dec | null)[] = new Array<Dec | null>(SMALL).fill(null);
const quantizedMemo = new Map<number, Dec>();
const quantizedMemo4 = new Map<number, Dec>();
export function quantized(x: number, digits: 4 | 0): Dec {
  if (digits === 0) {
    if (x > 0 && x < SMALL && Number.isInteger(x)) return quantizedInt[x] ?? (quantizedInt[x] = D(x));
  } else {
    const k = Math.round(x * 10000);
    if (k > 0 && k < SMALL) {
      const d = quantized4[k] as Dec | null;
      if (d !== null && quantized4Key[k] === x) return d;
      if (d === null) {
        const e = decFromFixed(x, 4);
        quantized4Key[k] = x;
        quantized4[k] = e;
        return e;
      }
    }
  }
  return quantizedMapped(x, digits);
}

/** {@link quantized} for the keys the arrays do not take: a Map by value (zeros are never memoised). */
function quantizedMapped(x: number, digits: 4 | 0): Dec {
  // Map keys cannot tell -0 from 0 (their Decimals differ): zeros are not memoised.
  if (x === 0) return digits === 4 ? decFromFixed(x, 4) : D(x);
  const memo = digits === 4 ? quantizedMemo4 : quantizedMemo;
  let d = memo.get(x);
  if (d === undefined) {
    d = digits === 4 ? decFromFixed(x, 4) : D(x);
    // Bounded: forgetting only costs a parse.
    if (memo.size >= 65_536) memo.clear();
    memo.set(x, d);
  }
  return d;
}

/** Wrap a generated task with its quantized Decimal columns. */
export function taskTemplate(g: GenTask): TaskTemplate {
  const reqs: { domain: Domain; required: Dec }[] = [];
  // alphabetical domain order (SQLite's); a domain appears at most once in a generated task's requirements
  for (const d of DOMAINS_ALPHA) {
    for (const [dd, qty] of g.requirements) {
      if (dd === d) {
        reqs.push({ domain: d, required: quantized(qty, 0) });
        break;
      }
    }
  }
  return {
    title: g.title,
    clientIndex: g.client_index,
    requiredPrestige: g.required_prestige,
    rewardFundsCents: g.reward_funds_cents,
    requiredTrust: g.required_trust,
    reqs: reqs.slice(), // of its exact length (templates are kept; an array grown by push keeps room for 17)
    // Not memoised: market listings find an earlier episode's entries through this task's own delta instance.
    rewardPrestigeDelta: decFromFixed(g.reward_prestige_delta, 3),
    skillBoostPct: quantized(g.skill_boost_pct, 4),
  };
}

/**
 * The clients of every world of config `w` (cached): generated from a fixed seed, the same for every run seed (only
 * the market depends on it), without generating the employees (a server describes every preset's clients when it
 * starts; a preset's employees are generated with its first world).
 */
export function worldClients(w: WorldConfig): readonly GenClient[] {
  return clientsOf(w, cfgKey(w));
}

function clientsOf(w: WorldConfig, ck: string): GenClient[] {
  let c = clientLists.get(ck);
  if (!c) {
    // From their own stream: the same clients whether a world or a description asks for them first.
    c = generateClients(FIXED_WORLD_SEED, w.num_clients, w);
    clientLists.set(ck, c);
  }
  return c;
}

function peopleOf(w: WorldConfig, ck: string): People {
  let pc = people.get(ck);
  if (!pc) {
    const employees = generateEmployees(FIXED_WORLD_SEED, w.num_employees, w);
    const clients = clientsOf(w, ck);
    const rates = employees.map((e) => {
      const r = {} as Record<Domain, Dec>;
      for (const d of DOMAINS) r[d] = quantized(e.rates[d], 4);
      return r;
    });
    pc = { employees, clients, rates };
    people.set(ck, pc);
  }
  return pc;
}

/** The generated world of a run seed (cached). */
export function worldTemplate(seed: number, w: WorldConfig): WorldTemplate {
  const ck = cfgKey(w);
  const key = `${seed}|${ck}`;
  const hit = worlds.get(key);
  if (hit) return hit.t;
  if (recent !== null && recentKey === key) {
    const t = recent;
    retain(key, t);
    recent = null;
    recentKey = '';
    return t;
  }
  const pc = peopleOf(w, ck);
  const market = generateTasks(
    seed,
    w.num_market_tasks,
    w,
    pc.clients.length > 0 ? pc.clients.map((c) => c.specialty_domains) : null,
    pc.clients.length > 0 ? pc.clients.map((c) => c.reward_multiplier) : null,
  ).map(taskTemplate);
  const t: WorldTemplate = { employees: pc.employees, employeeRates: pc.rates, clients: pc.clients, market, memo: { entries: null, titles: null, uuids: null } };
  generatedWorlds++;
  if (worldsAsked.check(key)) retain(key, t);
  else {
    recent = t;
    recentKey = key;
  }
  return t;
}

function retain(key: string, t: WorldTemplate): void {
  worlds.set(key, { t, replacements: new Map() });
  worldsChanged++;
}

/**
 * The last (seed, config) whose retained world `retainedFor` looked up, and its answer, valid while `worldsChanged`
 * is unchanged: the accepts of an episode ask for one world, without building its key text and hashing it per accept.
 * Kept only for a frozen config (a validated one: its values cannot change; any other is keyed by content per call).
 */
let lastSeed = NaN;
let lastConfig: WorldConfig | null = null;
let lastChanged = -1;
let lastRetained: RetainedWorld | undefined;

/** The retained world of (seed, config), if it is retained (its recency unchanged). */
function retainedFor(seed: number, w: WorldConfig): RetainedWorld | undefined {
  if (seed === lastSeed && w === lastConfig && lastChanged === worldsChanged) return lastRetained;
  const r = worlds.peek(`${seed}|${cfgKey(w)}`);
  if (Object.isFrozen(w)) {
    lastSeed = seed;
    lastConfig = w;
    lastChanged = worldsChanged;
    lastRetained = r;
  }
  return r;
}

/** A replacement task (cached); see `generateReplacementTask`. */
export function replacementTemplate(seed: number, counter: number, prestige: number, clientIndex: number, w: WorldConfig, specialties: readonly Domain[] | null): TaskTemplate {
  // Kept by counter with the world of (seed, config) while it is retained; the other arguments are compared on a hit
  // (within a world they are the same for a counter) and a different one regenerates the entry.
  const world = retainedFor(seed, w);
  const hit = world !== undefined ? world.replacements.get(counter) : undefined;
  if (hit && hit.prestige === prestige && hit.clientIndex === clientIndex && sameDomains(hit.specialties, specialties)) return hit.tt;
  const tt = taskTemplate(generateReplacementTask(seed, counter, prestige, clientIndex, w, specialties));
  if (world !== undefined) keepReplacement(world.replacements, counter, { prestige, clientIndex, specialties: specialties ? specialties.slice() : null, tt });
  return tt;
}

/** Retain `r` in a world's replacements (in place of its counter's entry, else within REPLACEMENTS_MAX: see `replacementTemplate`). */
function keepReplacement(reps: Map<number, Replacement>, counter: number, r: Replacement): void {
  if (reps.has(counter)) reps.delete(counter); // the newest again
  else if (retainedReplacements >= REPLACEMENTS_MAX) {
    if (reps.size === 0) return;
    reps.delete(reps.keys().next().value as number);
  } else retainedReplacements++;
  reps.set(counter, r);
}

/** The same domains in the same order (or both null). */
function sameDomains(a: readonly Domain[] | null, b: readonly Domain[] | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Drop every cached world (for memory measurements and tests). */
export function clearWorldCache(): void {
  worlds.clear();
  people.clear();
  clientLists.clear();
  retainedReplacements = 0;
  worldsChanged++;
  worldsAsked.clear();
  recent = null;
  recentKey = '';
}

/** How many worlds (markets) were generated in this thread so far, cache misses of `worldTemplate` (never reset). */
export function worldsGenerated(): number {
  return generatedWorlds;
}

/** How many entries each cache holds (tests: what a call generated). */
export function worldCacheSizes(): { worlds: number; people: number; clients: number; replacements: number } {
  return { worlds: worlds.size, people: people.size, clients: clientLists.size, replacements: retainedReplacements };
}

/** A fresh market task row from a template (the row the reference inserts; Decimals are shared, they are immutable). */
export function marketTask(tt: TaskTemplate, f: { id: number; title: string; clientId: number | null; rewardCents: number; marketSlot: number }): Task {
  return {
    id: f.id,
    title: f.title,
    clientId: f.clientId,
    status: 'market',
    requiredPrestige: tt.requiredPrestige,
    rewardCents: f.rewardCents,
    rewardPrestigeDelta: tt.rewardPrestigeDelta,
    skillBoostPct: tt.skillBoostPct,
    acceptedAt: null,
    deadline: null,
    completedAt: null,
    success: null,
    milestonePct: 0,
    requiredTrust: tt.requiredTrust,
    advertisedRewardCents: null,
    marketSlot: f.marketSlot,
    owned: false,
    reqs: mapPacked(tt.reqs, (r) => ({ domain: r.domain, required: r.required, completed: DZERO })),
    assignments: [],
  };
}
