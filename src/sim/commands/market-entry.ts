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
import { F, memoRendered } from '../py/pyjson.js';
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
  /** The requirements as listed: domain and required quantity, in order. */
  readonly reqs: readonly { readonly domain: Domain; readonly required: Dec }[];
  readonly entry: MarketTaskRow;
  /** The task it was built for (in a caller's `byId` array: the task the slot was filled for). */
  readonly task: Task;
}

const entries = new WeakMap<Task, CachedEntry>();
/**
 * Entries by the Decimal of their prestige delta, which a task shares with its world template: a new episode on a
 * seed already played (evaluation sets, RL resets, a warm world cache) finds the entries of the earlier episode's
 * tasks here. A few per Decimal (several tasks may share one); a candidate is used only if `unchanged` holds.
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
    c.reqs.length !== t.reqs.length
  ) {
    return false;
  }
  for (let i = 0; i < c.reqs.length; i++) {
    const a = c.reqs[i] as CachedEntry['reqs'][number];
    const b = t.reqs[i] as Task['reqs'][number];
    if (a.domain !== b.domain || a.required !== b.required) return false;
  }
  return true;
}

/**
 * The `market browse` entry of task `t` (frozen; shared with earlier listings while the task is unchanged).
 * `byId`, when given, is the caller's array of the last entries of one company's tasks by task id (each company's
 * listing keeps one: an array slot is cheaper to reach than the WeakMap by task); a slot is used only for the very
 * task object it was filled for, and only if `unchanged` holds.
 */
export function marketEntry(t: Task, clientName: string | null, byId?: (CachedEntry | undefined)[]): MarketTaskRow {
  if (byId !== undefined) {
    const b = byId[t.id];
    if (b !== undefined && b.task === t && unchanged(b, t, clientName)) return b.entry;
    const e = entryOf(t, clientName, false);
    // filled in id order up to t.id: a packed array (a store far past the end would make it a dictionary)
    while (byId.length <= t.id) byId.push(undefined);
    byId[t.id] = e.task === t ? e : withTask(e, t);
    return e.entry;
  }
  return entryOf(t, clientName, true).entry;
}

function withTask(e: CachedEntry, t: Task): CachedEntry {
  return {
    title: e.title,
    clientName: e.clientName,
    requiredPrestige: e.requiredPrestige,
    requiredTrust: e.requiredTrust,
    rewardCents: e.rewardCents,
    rewardPrestigeDelta: e.rewardPrestigeDelta,
    skillBoostPct: e.skillBoostPct,
    reqs: e.reqs,
    entry: e.entry,
    task: t,
  };
}

/** The entry of `t`: reused (by task when `byTask`, else only by prestige delta) or built. */
function entryOf(t: Task, clientName: string | null, byTask: boolean): CachedEntry {
  if (byTask) {
    const c = entries.get(t);
    if (c !== undefined && unchanged(c, t, clientName)) return c;
  }
  const shared = byDelta.get(t.rewardPrestigeDelta);
  if (shared !== undefined) {
    for (const s of shared) {
      if (unchanged(s, t, clientName)) {
        if (byTask) entries.set(t, s);
        return s;
      }
    }
  }
  // Frozen here, innermost first, as memoRendered would deep-freeze it: its generic walk (for-in over every object,
  // an isFrozen test per value) then stops at the frozen top.
  const requirements = mapPacked(t.reqs, (r) => Object.freeze({ domain: r.domain, required_qty: F(toFloat(r.required)) }));
  const entry = memoRendered<MarketTaskRow>(
    Object.freeze({
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
  const made: CachedEntry = {
    title: t.title,
    clientName,
    requiredPrestige: t.requiredPrestige,
    requiredTrust: t.requiredTrust,
    rewardCents: t.rewardCents,
    rewardPrestigeDelta: t.rewardPrestigeDelta,
    skillBoostPct: t.skillBoostPct,
    reqs: mapPacked(t.reqs, (r) => ({ domain: r.domain, required: r.required })),
    entry,
    task: t,
  };
  if (byTask) entries.set(t, made);
  if (shared === undefined) byDelta.set(t.rewardPrestigeDelta, [made]);
  else {
    if (shared.length >= PER_DELTA) shared.shift();
    shared.push(made);
  }
  return made;
}
