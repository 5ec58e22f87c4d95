/**
 * `market browse` listing entries, reused between listings while the task they describe is unchanged.
 *
 * An entry is a pure function of a task's listed fields (title, client name, prestige and trust gates, reward,
 * prestige delta, skill boost, requirements). The last entry built for a task is kept with the exact field values
 * it was built from and handed out again only when every one of them is still the same (Decimals are immutable, so
 * an unchanged reference is an unchanged value): a listing equals a freshly built one whatever changed in between.
 * Entries are deep-frozen and their text is memoised by the JSON writer (`memoRendered`), so an agent that browses
 * after every task pays for the text of the tasks that are new to the listing, not for the whole listing; entries
 * also carry over to the next episode on the same seed (found through the task's template Decimal).
 */
import { toFloat, type Dec } from '../py/decimal.js';
import { F, memoRenderedShallow } from '../py/pyjson.js';
import type { Domain, Task } from '../model/types.js';
import type { MarketTaskRow } from './results.js';
import { mapPacked } from '../py/packed.js';

/** An entry with the field values it was built from (see {@link marketEntry}). */
export interface CachedEntry {
  readonly title: string;
  readonly clientName: string | null;
  readonly requiredPrestige: number;
  readonly requiredTrust: number;
  readonly rewardCents: number;
  readonly rewardPrestigeDelta: Dec;
  readonly skillBoostPct: Dec;
  /**
   * The requirements as listed (domain and required quantity, in order): their count, the first four inline (a task
   * has at most one per domain; compared without loading an array and an object per requirement), any others in `more`.
   */
  readonly nReqs: number;
  readonly d0: Domain | null;
  readonly q0: Dec | null;
  readonly d1: Domain | null;
  readonly q1: Dec | null;
  readonly d2: Domain | null;
  readonly q2: Dec | null;
  readonly d3: Domain | null;
  readonly q3: Dec | null;
  readonly more: readonly { readonly domain: Domain; readonly required: Dec }[] | null;
  readonly entry: MarketTaskRow;
}

/** Without a world (`marketEntry`'s `world` left out): the last entry of each task. */
const entries = new WeakMap<Task, CachedEntry>();
/**
 * Without a world: entries by the Decimal of their prestige delta, which a task shares with its world template: a new
 * episode on a seed already played finds the entries of the earlier episode's tasks here. A few per Decimal (several
 * tasks may share one, as in a world's index, `WorldEntries.byDelta`); a candidate is used only if `unchanged` holds.
 */
const byDelta = new WeakMap<Dec, CachedEntry[]>();
const PER_DELTA = 4;

function unchanged(c: CachedEntry, t: Task, clientName: string | null): boolean {
  if (
    c.title !== t.title ||
    c.clientName !== clientName ||
    c.requiredPrestige !== t.requiredPrestige ||
    c.requiredTrust !== t.requiredTrust ||
    c.rewardCents !== t.rewardCents ||
    c.rewardPrestigeDelta !== t.rewardPrestigeDelta ||
    c.skillBoostPct !== t.skillBoostPct ||
    c.nReqs !== t.reqs.length
  ) {
    return false;
  }
  const rs = t.reqs;
  const n = rs.length;
  if (n === 0) return true;
  let r = rs[0] as Req;
  if (r.domain !== c.d0 || r.required !== c.q0) return false;
  if (n === 1) return true;
  r = rs[1] as Req;
  if (r.domain !== c.d1 || r.required !== c.q1) return false;
  if (n === 2) return true;
  r = rs[2] as Req;
  if (r.domain !== c.d2 || r.required !== c.q2) return false;
  if (n === 3) return true;
  r = rs[3] as Req;
  if (r.domain !== c.d3 || r.required !== c.q3) return false;
  const more = c.more as NonNullable<CachedEntry['more']>;
  for (let i = 4; i < n; i++) {
    const a = more[i - 4] as (typeof more)[number];
    const b = rs[i] as Req;
    if (a.domain !== b.domain || a.required !== b.required) return false;
  }
  return true;
}

type Req = Task['reqs'][number];

/**
 * The entries listed by the simulations of one world (see {@link marketEntry}): the last entry listed at each task id,
 * and, from the first time a slot's entry did not fit the task listed at its id (episodes of the world that went
 * different ways: other replacement tasks at one id, or a task at another id), an index of the world's entries by the
 * Decimal of their prestige delta (a few per Decimal), which a task shares with the world template.
 */
export interface WorldEntries {
  readonly byId: (CachedEntry | undefined)[];
  byDelta: Map<Dec, CachedEntry[]> | null;
}

/** Entries of a world none of whose tasks was listed yet. */
export function worldEntries(): WorldEntries {
  return { byId: [], byDelta: null };
}

/**
 * The `market browse` entry of task `t` (frozen; shared with earlier listings while the task is unchanged).
 * `world`, when given, is the caller's record of the entries listed by its world's simulations (an array slot by id is
 * cheaper to reach than a WeakMap by task). A slot's entry is used for whatever task now has that id when `unchanged`
 * holds, which compares every field the entry is made of: the slots can be shared by the episodes of one world, whose
 * tasks of one id are other objects with the same fields. Any other entry of the world that fits is found through its
 * index by prestige delta, kept from the first slot that did not fit: a world whose episodes list the same tasks at the
 * same ids (a bulk run's one episode per world, a policy replayed) pays for no index.
 */
export function marketEntry(t: Task, clientName: string | null, world?: WorldEntries): MarketTaskRow {
  if (world !== undefined) {
    const byId = world.byId;
    const b = byId[t.id];
    if (b !== undefined && unchanged(b, t, clientName)) return b.entry;
    let index = world.byDelta;
    if (index === null && b !== undefined) index = world.byDelta = indexOf(byId);
    let e = index !== null ? fitting(index.get(t.rewardPrestigeDelta), t, clientName) : undefined;
    if (e === undefined) {
      e = buildEntry(t, clientName);
      if (index !== null) share(index, e);
    }
    // filled in id order up to t.id: a packed array (a store far past the end would make it a dictionary)
    while (byId.length <= t.id) byId.push(undefined);
    byId[t.id] = e;
    return e.entry;
  }
  return entryOf(t, clientName).entry;
}

/** The first of `shared` that is `t`'s entry (`unchanged`). */
function fitting(shared: readonly CachedEntry[] | undefined, t: Task, clientName: string | null): CachedEntry | undefined {
  if (shared !== undefined) for (const s of shared) if (unchanged(s, t, clientName)) return s;
  return undefined;
}

/** Add `e` to `index` (a world's, or the one without a world) under its prestige delta (the oldest of a full list dropped). */
function share(index: { get(k: Dec): CachedEntry[] | undefined; set(k: Dec, v: CachedEntry[]): unknown }, e: CachedEntry): void {
  const shared = index.get(e.rewardPrestigeDelta);
  if (shared === undefined) index.set(e.rewardPrestigeDelta, [e]);
  else if (!shared.includes(e)) {
    if (shared.length >= PER_DELTA) shared.shift();
    shared.push(e);
  }
}

/** A world's index by prestige delta of the entries in its slots (in id order). */
function indexOf(byId: readonly (CachedEntry | undefined)[]): Map<Dec, CachedEntry[]> {
  const index = new Map<Dec, CachedEntry[]>();
  for (const e of byId) if (e !== undefined) share(index, e);
  return index;
}

/** The entry of `t` without a world: reused (by task, else by prestige delta) or built. */
function entryOf(t: Task, clientName: string | null): CachedEntry {
  const c = entries.get(t);
  if (c !== undefined && unchanged(c, t, clientName)) return c;
  const shared = byDelta.get(t.rewardPrestigeDelta);
  const s = fitting(shared, t, clientName);
  if (s !== undefined) {
    entries.set(t, s);
    return s;
  }
  const made = buildEntry(t, clientName);
  entries.set(t, made);
  share(byDelta, made);
  return made;
}

/** `t`'s entry, built. */
function buildEntry(t: Task, clientName: string | null): CachedEntry {
  // Frozen here, innermost first, and the top by memoRenderedShallow: memoRendered's generic walk (for-in over every
  // object, an isFrozen test per value) is not needed.
  const requirements = mapPacked(t.reqs, (r) => Object.freeze({ domain: r.domain, required_qty: F(toFloat(r.required)) }));
  const entry = memoRenderedShallow<MarketTaskRow>(
    ({
      task_id: t.title,
      client_name: clientName,
      required_prestige: t.requiredPrestige,
      required_trust: t.requiredTrust,
      reward_funds_cents: t.rewardCents,
      reward_prestige_delta: F(toFloat(t.rewardPrestigeDelta)),
      skill_boost_pct: F(toFloat(t.skillBoostPct)),
      requirements: Object.freeze(requirements) as MarketTaskRow['requirements'],
    }) as MarketTaskRow,
  );
  const rs = t.reqs;
  const made: CachedEntry = {
    title: t.title,
    clientName,
    requiredPrestige: t.requiredPrestige,
    requiredTrust: t.requiredTrust,
    rewardCents: t.rewardCents,
    rewardPrestigeDelta: t.rewardPrestigeDelta,
    skillBoostPct: t.skillBoostPct,
    nReqs: rs.length,
    d0: rs.length > 0 ? (rs[0] as Req).domain : null,
    q0: rs.length > 0 ? (rs[0] as Req).required : null,
    d1: rs.length > 1 ? (rs[1] as Req).domain : null,
    q1: rs.length > 1 ? (rs[1] as Req).required : null,
    d2: rs.length > 2 ? (rs[2] as Req).domain : null,
    q2: rs.length > 2 ? (rs[2] as Req).required : null,
    d3: rs.length > 3 ? (rs[3] as Req).domain : null,
    q3: rs.length > 3 ? (rs[3] as Req).required : null,
    more: rs.length > 4 ? mapPacked(rs.slice(4), (r) => ({ domain: r.domain, required: r.required })) : null,
    entry,
  };
  return made;
}
