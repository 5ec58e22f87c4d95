/**
 * Quick mode of the command-layer fuzzer (scripts/reliability/lib/cmdfuzz.ts): generated commands against
 * live simulations; no exception escapes, every rejection is a structured error, rejected commands leave the
 * state unchanged, invariants hold. The full run (1M commands) is `run.js --full --only commands`.
 */
import { describe, expect, it } from 'vitest';
import { fuzzCommands } from '../../scripts/reliability/lib/cmdfuzz.js';

describe('command-layer fuzzing (quick)', () => {
  it('5000 generated commands: no exceptions, structured rejections, unchanged state, invariants', () => {
    const r = fuzzCommands({ commands: 5000, seed: 424242, sequenceLength: 250 });
    const problems = r.examples.map((e) => `${e.kind} ${e.preset}/${e.seed} #${e.index}: ${e.detail} <- ${JSON.stringify(e.command)}`);
    expect(problems).toEqual([]);
    expect(r.commands).toBe(5000);
    expect(r.exceptions + r.structure_violations + r.state_violations + r.invariant_violations).toBe(0);
    // The mix reaches every layer: parser, handlers (accepted and rejected), help, and the state checks.
    expect(r.outcomes.accepted).toBeGreaterThan(200);
    expect(r.outcomes.rejected_exit1).toBeGreaterThan(200);
    expect(r.outcomes.rejected_parse).toBeGreaterThan(500);
    expect(r.outcomes.help).toBeGreaterThan(10);
    expect(r.state_comparisons).toBeGreaterThan(1000);
    expect(Object.keys(r.by_category).sort()).toEqual(['huge', 'near_valid', 'plain', 'progress', 'random_bytes', 'shell_meta', 'unicode']);
  });
});
