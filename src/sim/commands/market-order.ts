/**
 * The market in listing order (reward descending, ties by rowid), kept up to date instead of re-sorted.
 */
import type { Task } from '../model/types.js';

function before(a: Task, b: Task): boolean {
  return a.rewardCents > b.rewardCents || (a.rewardCents === b.rewardCents && a.id < b.id);
}

/**
 * Market tasks of `tasks` in listing order, from `prev` (that order over `tasks[0..from)`) and the tasks appended
 * since (`tasks[from..]`): `prev` less the tasks that left the market, merged with the appended market tasks. Equal
 * to filtering and sorting all of `tasks` because a task never returns to the market and its reward never changes
 * (the order is total: ids are unique). `prev` null: filter and sort everything.
 */
export function marketOrder(tasks: readonly Task[], prev: readonly Task[] | null, from: number): Task[] {
  if (prev === null) return tasks.filter((t) => t.status === 'market').sort((a, b) => b.rewardCents - a.rewardCents || a.id - b.id);
  const added: Task[] = [];
  for (let i = from; i < tasks.length; i++) {
    const t = tasks[i] as Task;
    if (t.status === 'market') added.push(t);
  }
  if (added.length > 1) added.sort((a, b) => b.rewardCents - a.rewardCents || a.id - b.id);
  const out: Task[] = [];
  let j = 0;
  for (const t of prev) {
    if (t.status !== 'market') continue;
    while (j < added.length && before(added[j] as Task, t)) out.push(added[j++] as Task);
    out.push(t);
  }
  while (j < added.length) out.push(added[j++] as Task);
  return out;
}
