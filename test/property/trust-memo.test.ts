/**
 * The remembered trust updates of a completion (src/sim/model/engine.ts `trustMemo`, `completedTrust`,
 * `crossDecayedTrust`) give what computing them again gives (`completedTrustOf`, `crossDecayedTrustOf`): the same
 * trust Decimal (value, fields, text) and the same delta (Object.is), whatever the order of calls, repeated trusts
 * (shared and distinct instances of one value) and changes of the world's trust parameters in between.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completedTrust, completedTrustOf, crossDecayedTrust, crossDecayedTrustOf, millisDec, trustMemo } from '../../src/sim/model/engine.js';
import { D, type Dec, decFromFloat } from '../../src/sim/py/decimal.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { GreedyPolicy } from '../../baselines/greedy.js';

function fields(d: Dec): string {
  return JSON.stringify({ s: d.s, e: d.e, d: d.d });
}

const params = fc.record({
  trust_max: fc.oneof(fc.constantFrom(5, 10, 1, 0.01, 100), fc.double({ min: 0.01, max: 100, noNaN: true })),
  trust_min: fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 5, noNaN: true })),
  trust_gain_base: fc.oneof(fc.constantFrom(1.6, 0.8, 0), fc.double({ min: 0, max: 10, noNaN: true })),
  trust_gain_diminishing_power: fc.oneof(fc.constantFrom(1.5, 1, 0, 2.5), fc.double({ min: 0, max: 100, noNaN: true })),
  trust_fail_penalty: fc.oneof(fc.constantFrom(0.18, 0.6, 0), fc.double({ min: 0, max: 60, noNaN: true })),
  trust_cross_client_decay: fc.oneof(fc.constantFrom(0.018, 0.06, 0), fc.double({ min: 0, max: 6, noNaN: true })),
});
/** Stored trusts: millisDec's shared instances, fresh instances of the same values, and other Decimals. */
const trusts = fc.oneof(
  fc.integer({ min: 0, max: 10_000 }).map((m) => millisDec(m)),
  fc.integer({ min: 0, max: 10_000 }).map((m) => D(m).div(1000)),
  fc.double({ min: 0, max: 100, noNaN: true }).map((x) => decFromFloat(x)),
);

describe('remembered completion trust updates', () => {
  it('equal the computed ones over random parameters and trusts, in any order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), trusts, fc.boolean()), { minLength: 1, maxLength: 40 }), fc.array(params, { minLength: 1, maxLength: 3 }), (steps, ws) => {
        for (const [i, [which, trust, success]] of steps.entries()) {
          const w = ws[i % ws.length] as (typeof ws)[number];
          const memo = trustMemo(w);
          if (which === 2) {
            const got = crossDecayedTrust(memo, trust);
            const want = crossDecayedTrustOf(w, trust);
            expect(fields(got)).toBe(fields(want));
            expect(got.toString()).toBe(want.toString());
          } else {
            // A trust above trust_max (never stored: trust stays in [trust_min, trust_max]) makes the gain's base
            // negative, and pyPow raises as Python does: then the remembered path raises the same and keeps nothing.
            let error: unknown = null;
            try {
              completedTrustOf(w, trust, success);
            } catch (err) {
              error = err;
            }
            if (error !== null) {
              expect(() => completedTrust(memo, trust, success)).toThrow((error as Error).message);
              continue;
            }
            const got = completedTrust(memo, trust, success);
            const want = completedTrustOf(w, trust, success);
            expect(fields(got.trust)).toBe(fields(want.trust));
            expect(got.trust.toString()).toBe(want.trust.toString());
            expect(Object.is(got.delta, want.delta)).toBe(true);
          }
        }
      }),
      { numRuns: 3_000 },
    );
  });

  it('an episode played again adds no entries: its trusts are shared instances (a fresh starting trust per episode was a new key per client)', () => {
    const cfg = loadPreset('default');
    const memo = trustMemo(cfg.world);
    const sizes = () => [memo.success.size, memo.fail.size, memo.cross.size];
    const play = (seed: number) => runEpisode(new Env(), new GreedyPolicy(), { seed, preset: cfg, options: { text: false } });
    play(3);
    expect(trustMemo(cfg.world)).toBe(memo);
    const once = sizes();
    expect(once[0]).toBeGreaterThan(0); // the episode completed tasks
    play(3);
    expect(sizes()).toEqual(once);
  });

  it('starts a new memo when a parameter changes, and keeps it while none does', () => {
    const w = { trust_max: 5, trust_min: 0, trust_gain_base: 1.6, trust_gain_diminishing_power: 1.5, trust_fail_penalty: 0.18, trust_cross_client_decay: 0.018 };
    const memo = trustMemo(w);
    expect(trustMemo({ ...w })).toBe(memo);
    const t = millisDec(2500);
    const before = completedTrust(memo, t, true);
    for (const key of Object.keys(w) as (keyof typeof w)[]) {
      // from the memo of w, filled, to w with one parameter changed
      const base = trustMemo(w);
      completedTrust(base, t, true);
      crossDecayedTrust(base, t);
      const changed = { ...w, [key]: w[key] + 0.25 };
      const m2 = trustMemo(changed);
      expect(m2, key).not.toBe(base);
      const step = completedTrust(m2, t, true);
      const want = completedTrustOf(changed, t, true);
      expect(step.trust.toString(), key).toBe(want.trust.toString());
      expect(Object.is(step.delta, want.delta), key).toBe(true);
      expect(crossDecayedTrust(m2, t).toString(), key).toBe(crossDecayedTrustOf(changed, t).toString());
    }
    // the gain parameter moves the result: a stale memo would have shown the old one
    const m3 = trustMemo({ ...w, trust_gain_base: 3.2 });
    expect(completedTrust(m3, t, true).trust.toString()).not.toBe(before.trust.toString());
  });
});
