/**
 * bot_runner's `throughput` strategy: the browsable task with the highest reward per estimated hour
 * (first maximum wins; one task at a time, every employee).
 */
import { firstMax, higherThroughput, MarketBot, type Candidate } from './bot.js';

/** Throughput: max reward / estimated hours. */
export class ThroughputPolicy extends MarketBot {
  readonly name = 'throughput';
  protected pick(cands: Candidate[]): Candidate | null {
    return firstMax(cands, higherThroughput);
  }
}
