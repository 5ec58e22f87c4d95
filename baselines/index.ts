/**
 * Registry of the baseline policies by name (`ycgym run --policy NAME`).
 */
import { ExpertPolicy } from './expert.js';
import { GreedyPolicy } from './greedy.js';
import type { Policy } from '../src/core.js';
import { PrestigePolicy } from './prestige.js';
import { RandomPolicy } from './random.js';
import { ThroughputPolicy } from './throughput.js';

const FACTORIES: Readonly<Record<string, () => Policy>> = {
  greedy: () => new GreedyPolicy(),
  random: () => new RandomPolicy(),
  throughput: () => new ThroughputPolicy(),
  prestige: () => new PrestigePolicy(),
  expert: () => new ExpertPolicy(),
};

/** Names accepted by `makePolicy`, in registry order. */
export const POLICY_NAMES: readonly string[] = Object.keys(FACTORIES);

/** A fresh policy by name; throws on an unknown name. */
export function makePolicy(name: string): Policy {
  const f = FACTORIES[name];
  if (!f) throw new Error(`unknown policy ${JSON.stringify(name)} (available: ${POLICY_NAMES.join(', ')})`);
  return f();
}
