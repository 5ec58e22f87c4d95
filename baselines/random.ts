/**
 * bot_runner's `random` strategy: a uniformly random browsable task, drawn from the project's seeded
 * stream `bot_random_select:{turn}` of the episode seed (one task at a time, every employee).
 */
import { stream } from '../src/core.js';
import { MarketBot, type Candidate, type PickContext } from './bot.js';

/** Random: seeded choice among the browsable market. */
export class RandomPolicy extends MarketBot {
  readonly name = 'random';
  protected pick(cands: Candidate[], ctx: PickContext): Candidate | null {
    if (cands.length === 0) return null;
    return stream(ctx.seed, `bot_random_select:${ctx.turn}`).choice(cands);
  }
}
