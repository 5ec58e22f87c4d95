/**
 * Typed readers for command outputs (the plain JSON a policy observes). Baselines see nothing else.
 *
 * A policy may play a remote env, whose outputs arrive as text and are decoded, so the readers check every value;
 * the field names are those of the commands' result types (`fields<T>`), so a misspelt or renamed field does not
 * compile.
 */
import type { EmployeeListResult, EmployeeRow, MarketBrowseResult, MarketRequirementRow, MarketTaskRow, SimResumeResult } from '../src/core.js';

/** A JSON object, or null when `x` is not one. */
export function rec(x: unknown): Record<string, unknown> | null {
  return x !== null && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : null;
}

/** The fields of an output of result type `T`, by name, with unchecked values (outputs may come decoded from text). */
export type Fields<T> = { readonly [K in keyof T]?: unknown };

/** `x` read as an output of result type `T` when it is a JSON object, else null. */
export function fields<T>(x: unknown): Fields<T> | null {
  return rec(x);
}

/** A JSON array (empty when `x` is not one). */
export function arr(x: unknown): unknown[] {
  return Array.isArray(x) ? x : [];
}

/** A number, or `dflt`. */
export function num(x: unknown, dflt = 0): number {
  return typeof x === 'number' && Number.isFinite(x) ? x : dflt;
}

/** A string, or `dflt`. */
export function str(x: unknown, dflt = ''): string {
  return typeof x === 'string' ? x : dflt;
}

/** One task of `market browse`. */
export interface MarketTask {
  id: string;
  client: string | null;
  requiredPrestige: number;
  requiredTrust: number;
  rewardCents: number;
  prestigeDelta: number;
  skillBoost: number;
  reqs: { domain: string; qty: number }[];
  /** Position in the listing (reward descending). */
  rank: number;
}

/** Tasks of a `market browse` output, in listing order. */
export function marketTasks(out: unknown): MarketTask[] {
  const o = fields<MarketBrowseResult>(out);
  if (!o) return [];
  return arr(o.tasks).flatMap((t, rank) => {
    const r = fields<MarketTaskRow>(t);
    if (!r) return [];
    const client = r.client_name;
    return [
      {
        id: str(r.task_id),
        client: typeof client === 'string' ? client : null,
        requiredPrestige: num(r.required_prestige),
        requiredTrust: num(r.required_trust),
        rewardCents: num(r.reward_funds_cents),
        prestigeDelta: num(r.reward_prestige_delta),
        skillBoost: num(r.skill_boost_pct),
        reqs: arr(r.requirements).flatMap((q) => {
          const qq = fields<MarketRequirementRow>(q);
          return qq ? [{ domain: str(qq.domain), qty: num(qq.required_qty) }] : [];
        }),
        rank,
      },
    ];
  });
}

/** One employee of `employee list`. */
export interface EmployeeInfo {
  name: string;
  tier: string;
  salaryCents: number;
  rates: Record<string, number>;
  activeTasks: string[];
}

/** Employees of an `employee list` output. */
export function employees(out: unknown): EmployeeInfo[] {
  const o = fields<EmployeeListResult>(out);
  if (!o) return [];
  return arr(o.employees).flatMap((e) => {
    const r = fields<EmployeeRow>(e);
    if (!r) return [];
    const rates: Record<string, number> = {};
    const sr = rec(r.skill_rates);
    if (sr) for (const [k, v] of Object.entries(sr)) rates[k] = num(v);
    return [{ name: str(r.name), tier: str(r.tier), salaryCents: num(r.salary_cents), rates, activeTasks: arr(r.active_tasks).map((t) => str(t)) }];
  });
}

/** True when a `sim resume` output ends the episode (bankruptcy or horizon). */
export function episodeOver(out: unknown): boolean {
  const o = fields<SimResumeResult>(out);
  return o !== null && (o.bankrupt === true || o.horizon_reached === true);
}
