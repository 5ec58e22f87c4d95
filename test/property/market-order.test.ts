/**
 * The market's listing order kept up to date (`marketOrder` with a previous order) equals filtering and sorting
 * every task, over random histories of tasks leaving the market and replacements appended (rewards with ties).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { marketOrder } from '../../src/sim/commands/market-order.js';
import type { Task } from '../../src/sim/model/types.js';

function task(id: number, rewardCents: number): Task {
  return { id, rewardCents, status: 'market' } as unknown as Task;
}

describe('marketOrder', () => {
  it('incremental order (written into a reused array) equals a full sort after any history', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 0, maxLength: 30 }),
        fc.array(fc.tuple(fc.array(fc.nat(), { maxLength: 3 }), fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 3 })), { maxLength: 15 }),
        (initial, history) => {
          const tasks: Task[] = initial.map((r, i) => task(i, r * 1000));
          let order = marketOrder(tasks, null, 0);
          // two arrays swapped (as the market cache does), or a fresh one: `out` is overwritten whatever it held
          const spares: Task[][] = [[task(99, 0), task(98, 0), task(97, 0)]];
          let len = tasks.length;
          for (const [leave, add] of history) {
            for (const k of leave) if (tasks.length > 0) (tasks[k % tasks.length] as { status: string }).status = 'planned';
            for (const r of add) tasks.push(task(tasks.length, r * 1000));
            const spare = spares.pop() ?? [];
            const next = marketOrder(tasks, order, len, spare);
            expect(next).toBe(spare);
            spares.push(order);
            order = next;
            len = tasks.length;
            expect(order.map((t) => t.id)).toEqual(marketOrder(tasks, null, 0).map((t) => t.id));
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
