/**
 * The deterministic entity UUIDs (`uuidHex`) keep their text: equal to the first implementation (four words'
 * `toString(16).padStart(8, '0')` joined, then cut into the v4 layout) for random seeds, kinds and ids.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Simulation, uuidHex } from '../../src/sim/simulation.js';

function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function reference(seed: number, kind: string, id: number): string {
  let k = 0x9e3779b9;
  for (let i = 0; i < kind.length; i++) k = mix32(k ^ Math.imul(kind.charCodeAt(i), 0x27d4eb2d));
  const words: string[] = [];
  for (let w = 0; w < 4; w++) {
    const h = mix32(mix32(mix32(k ^ Math.imul(w + 1, 0x165667b1)) ^ (seed >>> 0) ^ Math.imul(Math.floor(seed / 4294967296), 0x1b873593)) ^ id ^ Math.imul(Math.floor(id / 4294967296), 0xcc9e2d51));
    words.push(h.toString(16).padStart(8, '0'));
  }
  const h = words.join('');
  const v = ((parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${v}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

describe('uuidHex', () => {
  it('equals the reference construction', () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(), fc.maxSafeNat()), fc.oneof(fc.constantFrom('task', 'employee', 'ledger', 'company', 'client'), fc.string()), fc.oneof(fc.nat({ max: 5000 }), fc.maxSafeNat()), (seed, kind, id) => {
        expect(uuidHex(seed, kind, id)).toBe(reference(seed, kind, id));
      }),
      { numRuns: 20_000 },
    );
    expect(uuidHex(1, 'task', 0)).toBe(reference(1, 'task', 0));
  });

  it("a simulation's remembered UUIDs (by kind and index, or by text) are uuidHex of its seed, in any order of calls", () => {
    const id = fc.oneof(fc.nat({ max: 300 }), fc.constantFrom(-1, -0, 0.5, 65_535, 65_536, 2 ** 40, Number.MAX_SAFE_INTEGER));
    fc.assert(
      fc.property(fc.nat({ max: 1000 }), fc.array(fc.tuple(fc.constantFrom('task', 'employee', 'ledger', 'company', 'x:1'), id), { maxLength: 40 }), (seed, calls) => {
        const sim = Simulation.create(loadPreset('default'), { seed });
        for (const [kind, i] of [...calls, ...calls]) expect(sim.uuid(kind, i)).toBe(reference(seed, kind, i));
      }),
      { numRuns: 200 },
    );
  });

  it('the simulations of one world share its UUIDs (WorldMemo.uuids), each the uuidHex of its own seed', () => {
    const cfg = loadPreset('default');
    const calls: [string, number][] = [['task', 0], ['task', 199], ['ledger', 7], ['client', 3], ['company', 0], ['task', 250]];
    for (const seed of [41, 42, 41, 42, 41]) {
      // (the world cache keeps a world from its second request on: later simulations of a seed share its memo)
      const sim = Simulation.create(cfg, { seed });
      for (const [kind, i] of calls) expect(sim.uuid(kind, i)).toBe(reference(seed, kind, i));
    }
    const a = Simulation.create(cfg, { seed: 41 });
    const b = Simulation.create(cfg, { seed: 41 });
    expect(b.memos.world).toBe(a.memos.world);
    expect(b.memos.world?.uuids?.get('task')?.[199]).toBe(reference(41, 'task', 199));
    const restored = Simulation.restore(a.snapshot());
    for (const [kind, i] of calls) expect(restored.uuid(kind, i)).toBe(reference(41, kind, i));
  });
});
