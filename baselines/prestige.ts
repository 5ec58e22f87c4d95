/**
 * bot_runner's `prestige` strategy: while the highest prestige level is below 5, the task with the most
 * prestige gain per estimated hour (among tasks that give any); then, or when none does, throughput.
 */
import { firstMax, higherThroughput, MarketBot, type Candidate, type PickContext } from './bot.js';

/** Prestige first (below level 5), then throughput. */
export class PrestigePolicy extends MarketBot {
  readonly name = 'prestige';
  protected override readonly needsPrestige = true;
  protected pick(cands: Candidate[], ctx: PickContext): Candidate | null {
    if (cands.length === 0) return null;
    if (ctx.maxPrestige < 5) {
      const gain = cands.filter((c) => c.task.prestigeDelta > 0);
      if (gain.length > 0) return firstMax(gain, (a, b) => a.task.prestigeDelta * b.hours > b.task.prestigeDelta * a.hours);
    }
    return firstMax(cands, higherThroughput);
  }
}
