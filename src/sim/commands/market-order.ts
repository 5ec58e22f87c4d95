/**
 * The market in listing order (reward descending, ties by rowid), kept up to date instead of re-sorted.
 */
import type { Task } from '../model/types.js';

/** Whether `a` is listed before `b`: reward descending, ties by rowid. */
export function before(a: Task, b: Task): boolean {
  return a.rewardCents > b.rewardCents || (a.rewardCents === b.rewardCents && a.id < b.id);
}

/** The listing order as a sort comparator (`before`'s order: reward descending, ties by rowid). */
export function listingOrder(a: Task, b: Task): number {
  return b.rewardCents - a.rewardCents || a.id - b.id;
}

/**
 * Market tasks of `tasks` in listing order, from `prev` (that order over `tasks[0..from)`) and the tasks appended
 * since (`tasks[from..]`): `prev` less the tasks that left the market, merged with the appended market tasks. Equal
 * to filtering and sorting all of `tasks` because a task never returns to the market and its reward never changes
 * (the order is total: ids are unique). `prev` null: filter and sort everything.
 *
 * The result is written into `out` (another array than `prev`; its old contents are overwritten) and returned: a
 * caller that keeps two arrays and swaps them allocates nothing per listing (the market keeps its size: one task
 * accepted, one replacement appended).
 */
export function marketOrder(tasks: readonly Task[], prev: readonly Task[] | null, from: number, out: Task[] = []): Task[] {
  if (prev === null) return tasks.filter((t) => t.status === 'market').sort(listingOrder);
  if (out === prev) throw new Error('marketOrder: out must not be prev');
  let added: Task[] | null = null;
  for (let i = from; i < tasks.length; i++) {
    const t = tasks[i] as Task;
    if (t.status === 'market') (added ??= []).push(t);
  }
  if (added !== null && added.length > 1) added.sort(listingOrder);
  const na = added === null ? 0 : added.length;
  let k = 0;
  let j = 0;
  for (let i = 0; i < prev.length; i++) {
    const t = prev[i] as Task;
    if (t.status !== 'market') continue;
    while (j < na && before((added as Task[])[j] as Task, t)) {
      const a = (added as Task[])[j++] as Task;
      if (k < out.length) out[k] = a;
      else out.push(a);
      k++;
    }
    if (k < out.length) out[k] = t;
    else out.push(t);
    k++;
  }
  while (j < na) {
    const a = (added as Task[])[j++] as Task;
    if (k < out.length) out[k] = a;
    else out.push(a);
    k++;
  }
  if (out.length !== k) out.length = k;
  return out;
}
