/**
 * The replacement-task cache (`replacementTemplate`) is keyed on (seed, counter, config) alone and compares the other
 * arguments (prestige, client index, client specialties) on a hit: whatever sequence of calls, with repeats and with
 * the same counter asked for under other arguments, it returns what generating the task afresh gives. It retains a
 * replacement only while its seed's world is retained (test/unit/world-cache-admission.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { clearWorldCache, replacementTemplate, taskTemplate, worldCacheSizes, worldTemplate, type TaskTemplate } from '../../src/sim/model/world-cache.js';
import { generateReplacementTask } from '../../src/sim/model/world.js';
import { DOMAINS, type Domain } from '../../src/sim/model/types.js';
import { Simulation } from '../../src/sim/index.js';

function plain(t: TaskTemplate): unknown {
  return {
    title: t.title,
    clientIndex: t.clientIndex,
    requiredPrestige: t.requiredPrestige,
    rewardFundsCents: t.rewardFundsCents,
    requiredTrust: t.requiredTrust,
    delta: [t.rewardPrestigeDelta.toString(), t.rewardPrestigeDelta.isNegative()],
    boost: [t.skillBoostPct.toString(), t.skillBoostPct.isNegative()],
    reqs: t.reqs.map((r) => [r.domain, r.required.toString()]),
  };
}

describe('replacementTemplate cache', () => {
  it('equals taskTemplate(generateReplacementTask(...)) for any sequence of calls (same counters under other arguments too)', () => {
    // As loaded, and validated (deep-frozen, as every simulation's: replacementTemplate remembers its last world for those).
    const presets = [loadPreset('default').world, loadPreset('multi').world, Simulation.create(loadPreset('default'), { seed: 1 }).cfg.world, Simulation.create(loadPreset('multi'), { seed: 1 }).cfg.world];
    const specs = fc.oneof(fc.constant(null), fc.subarray([...DOMAINS] as Domain[], { minLength: 0, maxLength: 3 }), fc.shuffledSubarray([...DOMAINS] as Domain[], { minLength: 1, maxLength: 2 }));
    const call = fc.record({
      seed: fc.integer({ min: 1, max: 3 }),
      counter: fc.integer({ min: 0, max: 4 }),
      prestige: fc.integer({ min: 1, max: 3 }),
      clientIndex: fc.integer({ min: 0, max: 2 }),
      specialties: specs,
      preset: fc.integer({ min: 0, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(call, { minLength: 1, maxLength: 40 }), (calls) => {
        clearWorldCache();
        // Replacements are retained while their seed's world is, from its second request (a seed's later episodes).
        for (const pw of presets) for (const seed of [1, 2, 3]) for (let i = 0; i < 2; i++) worldTemplate(seed, pw);
        for (const c of calls) {
          const w = presets[c.preset] as (typeof presets)[number];
          const got = replacementTemplate(c.seed, c.counter, c.prestige, c.clientIndex, w, c.specialties);
          const want = taskTemplate(generateReplacementTask(c.seed, c.counter, c.prestige, c.clientIndex, w, c.specialties));
          expect(plain(got)).toEqual(plain(want));
          // a hit is the same object
          expect(replacementTemplate(c.seed, c.counter, c.prestige, c.clientIndex, w, c.specialties)).toBe(got);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('equals taskTemplate(generateReplacementTask(...)) and retains nothing while the seed\'s world is not retained (its first episode)', () => {
    const w = loadPreset('default').world;
    const call = fc.record({ seed: fc.integer({ min: 1, max: 3 }), counter: fc.integer({ min: 0, max: 4 }), prestige: fc.integer({ min: 1, max: 3 }), clientIndex: fc.integer({ min: 0, max: 2 }) });
    fc.assert(
      fc.property(fc.array(call, { minLength: 1, maxLength: 20 }), (calls) => {
        clearWorldCache();
        for (const seed of [1, 2, 3]) worldTemplate(seed, w); // asked for once: not retained
        for (const c of calls) {
          const got = replacementTemplate(c.seed, c.counter, c.prestige, c.clientIndex, w, null);
          expect(plain(got)).toEqual(plain(taskTemplate(generateReplacementTask(c.seed, c.counter, c.prestige, c.clientIndex, w, null))));
        }
        expect(worldCacheSizes().replacements).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it('keeps its own copy of the specialties (a caller changing its array afterwards does not change a hit)', () => {
    const w = loadPreset('default').world;
    // a counter whose task differs between the two specialty lists
    let counter = 0;
    const gen = (c: number, s: Domain[]) => plain(taskTemplate(generateReplacementTask(5, c, 2, 1, w, s)));
    while (JSON.stringify(gen(counter, ['research'])) === JSON.stringify(gen(counter, ['training']))) counter++;
    clearWorldCache();
    worldTemplate(5, w);
    worldTemplate(5, w); // retained: so are its replacements
    const spec: Domain[] = ['research'];
    const first = replacementTemplate(5, counter, 2, 1, w, spec);
    expect(plain(first)).toEqual(gen(counter, ['research']));
    spec[0] = 'training';
    const again = replacementTemplate(5, counter, 2, 1, w, spec);
    expect(plain(again)).toEqual(gen(counter, ['training']));
    expect(again).not.toBe(first);
  });
});
