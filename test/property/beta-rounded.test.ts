/**
 * `PyRandom.betavariateRounded4` (world generation's `beta` draw with V8's log/exp and exact fallbacks) against the
 * expression it replaces, `pyRound(max(low, min(high, scale * betavariate(alpha, beta))), 4)` on a twin generator:
 * the same value and the same words drawn (the twins' next outputs agree).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pyRound } from '../../src/sim/py/pyfloat.js';
import { FAST_REL, PyRandom, stream } from '../../src/sim/py/rng.js';

function exact(rng: PyRandom, alpha: number, beta: number, scale: number, low: number, high: number): number {
  return pyRound(Math.max(low, Math.min(high, scale * rng.betavariate(alpha, beta))), 4);
}

/** Draw `n` values both ways from twins of `rng`; the first mismatch (value or stream position), or null. */
function compare(rng: PyRandom, n: number, alpha: number, beta: number, scale: number, low: number, high: number, tolerance = FAST_REL): string | null {
  const twin = rng.clone();
  for (let i = 0; i < n; i++) {
    const a = rng.betavariateRounded4(alpha, beta, scale, low, high, tolerance);
    const b = exact(twin, alpha, beta, scale, low, high);
    if (!Object.is(a, b)) return `draw ${i}: ${a} vs ${b} (alpha ${alpha}, beta ${beta}, scale ${scale}, [${low}, ${high}])`;
    const x = rng.nextUint32();
    const y = twin.nextUint32();
    if (x !== y) return `draw ${i}: stream positions differ`;
  }
  return null;
}

describe('betavariateRounded4', () => {
  it('equals the exact draw for the default preset over many task streams', () => {
    // reward_prestige_delta of presets/default.toml: beta(1.2, 2.8) * 0.35 clamped to [0, 0.35].
    for (let i = 1; i <= 3000; i++) expect(compare(stream(i, `task_${i}`), 3, 1.2, 2.8, 0.35, 0.0, 0.35)).toBeNull();
  });

  it('equals the exact draw for any alpha, beta > 1, scale and clamp range', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.double({ min: 1.0000001, max: 20, noNaN: true }),
        fc.double({ min: 1.0000001, max: 20, noNaN: true }),
        fc.double({ min: -3, max: 3, noNaN: true }),
        fc.double({ min: -1, max: 1, noNaN: true }),
        fc.double({ min: -1, max: 2, noNaN: true }),
        (seed, alpha, beta, scale, low, high) => compare(new PyRandom(seed), 20, alpha, beta, scale, low, high) === null,
      ),
      { numRuns: 300 },
    );
  });

  it('takes the exact path for every decision within its margin (tolerance 1: all of them) and still agrees', () => {
    for (const tol of [1, 2 ** -8, 2 ** -20]) {
      for (let i = 0; i < 200; i++) expect(compare(new PyRandom(i), 5, 1.2, 2.8, 0.35, 0.0, 0.35, tol)).toBeNull();
      // Clamps that bind on either side, and a degenerate range (low > high: always low).
      for (let i = 0; i < 50; i++) expect(compare(new PyRandom(1000 + i), 5, 2, 2, 1, 0.3, 0.6, tol)).toBeNull();
      for (let i = 0; i < 50; i++) expect(compare(new PyRandom(2000 + i), 5, 2, 2, 1, 0.6, 0.3, tol)).toBeNull();
    }
  });

  it('alpha or beta <= 1 (not Cheng) is the exact expression', () => {
    for (let i = 0; i < 100; i++) {
      expect(compare(new PyRandom(i), 5, 0.5, 2.8, 0.35, 0, 0.35)).toBeNull();
      expect(compare(new PyRandom(i), 5, 1.0, 1.0, 1, 0, 1)).toBeNull();
    }
  });
});
