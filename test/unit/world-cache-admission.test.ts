/**
 * The world cache's admission: a world (and the replacement tasks of its seed) is retained only from its key's second
 * request on, so a bulk run's fresh seeds leave nothing behind, while a repeated seed still finds its world cached from
 * its third episode (from its second while its world is the last one generated). Whatever is retained, an episode's
 * outputs are the same.
 */
import { describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { loadPreset } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { Simulation } from '../../src/sim/index.js';
import { clearWorldCache, worldCacheSizes, worldTemplate, replacementTemplate } from '../../src/sim/model/world-cache.js';

const w = loadPreset('default').world;

/** Every step's observation text, reward and flags of a greedy episode on `seed`. */
function play(seed: number, preset: string): string[] {
  const env = new Env();
  const out: string[] = [];
  runEpisode(env, new GreedyPolicy(), { seed, preset, options: { max_steps: 400 } }, {
    onReset: (r) => out.push(r.observation.text),
    onStep: ({ result }) => out.push(JSON.stringify([result.observation.text, result.reward, result.terminated, result.truncated])),
  });
  return out;
}

describe('world cache admission (retained from the second request of a key)', () => {
  it('a world asked for once is not retained; asked for again it is, and a third request is a hit', () => {
    clearWorldCache();
    const first = worldTemplate(7, w);
    expect(worldCacheSizes().worlds).toBe(0);
    worldTemplate(9, w); // the last world generated is now another
    const second = worldTemplate(7, w);
    expect(worldCacheSizes().worlds).toBe(1);
    expect(second).not.toBe(first); // generated again (the first was not kept) ...
    expect(second).toEqual(first); // ... the same world
    expect(worldTemplate(7, w)).toBe(second);
    // another seed and another config are other keys
    worldTemplate(8, w);
    worldTemplate(7, loadPreset('multi').world);
    expect(worldCacheSizes().worlds).toBe(1);
    // asked for again while still the last world generated: that one, and retained
    const last = worldTemplate(7, loadPreset('multi').world);
    const multi = worldTemplate(7, loadPreset('multi').world);
    expect(multi).toBe(last);
    expect(worldCacheSizes().worlds).toBe(2);
    expect(worldTemplate(7, loadPreset('multi').world)).toBe(multi);
    const ten = worldTemplate(10, w);
    const again = worldTemplate(10, w);
    expect(again).toBe(ten);
    expect(worldCacheSizes().worlds).toBe(3);
    worldTemplate(11, w);
    expect(worldTemplate(10, w)).toBe(again);
    clearWorldCache();
    worldTemplate(7, w); // cleared: taken for new again
    expect(worldCacheSizes().worlds).toBe(0);
  });

  it('replacement tasks are retained only while their seed\'s world is', () => {
    clearWorldCache();
    worldTemplate(3, w);
    const a = replacementTemplate(3, 0, 1, 0, w, null);
    expect(worldCacheSizes().replacements).toBe(0);
    expect(replacementTemplate(3, 0, 1, 0, w, null)).not.toBe(a);
    worldTemplate(3, w); // the second request: the world is retained, and from now on its replacements
    const b = replacementTemplate(3, 0, 1, 0, w, null);
    expect(b).toEqual(a);
    expect(worldCacheSizes().replacements).toBe(1);
    expect(replacementTemplate(3, 0, 1, 0, w, null)).toBe(b);
    replacementTemplate(4, 0, 1, 0, w, null); // a seed whose world is not retained
    expect(worldCacheSizes().replacements).toBe(1);
    clearWorldCache();
  });

  it('keeps its bound: 600 seeds asked for twice each retain at most 256 worlds', () => {
    clearWorldCache();
    for (let s = 1; s <= 600; s++) {
      worldTemplate(s, w);
      worldTemplate(s, w);
    }
    expect(worldCacheSizes().worlds).toBe(256);
    clearWorldCache();
  });

  it('fresh seeds retain nothing: episodes on seeds played once leave the world and replacement caches empty', () => {
    clearWorldCache();
    for (let s = 1; s <= 4; s++) play(100 + s, 'default');
    expect(worldCacheSizes()).toMatchObject({ worlds: 0, replacements: 0 });
    clearWorldCache();
  });

  it.each(['default', 'multi'])('%s: a seed\'s episode is the same whether its world is generated and dropped, generated and kept, or a hit', (preset) => {
    clearWorldCache();
    const generatedDropped = play(11, preset);
    expect(worldCacheSizes()).toMatchObject({ worlds: 0, replacements: 0 });
    play(12, preset); // the last world generated is now another
    const generatedKept = play(11, preset);
    const kept = worldCacheSizes();
    expect(kept.worlds).toBe(1);
    expect(kept.replacements).toBeGreaterThan(0); // the episode accepts tasks: their replacements are kept
    const hit = play(11, preset);
    expect(worldCacheSizes()).toEqual(kept); // every request was a hit
    expect(generatedKept).toEqual(generatedDropped);
    expect(hit).toEqual(generatedDropped);
    clearWorldCache();
  });

  it('a seed played again right after its first episode finds its world (the last one generated) and retains it', () => {
    clearWorldCache();
    const market = (seed: number) => Simulation.create(loadPreset('default'), { seed }).state.tasks.map((t) => t.rewardPrestigeDelta);
    const firstMarket = market(13); // the world's Decimals are shared with the simulations created from it
    expect(market(13)).toEqual(firstMarket);
    expect(market(13).every((d, i) => d === firstMarket[i])).toBe(true); // the same world: found, not generated again
    clearWorldCache();
    const first = play(13, 'default');
    expect(worldCacheSizes()).toMatchObject({ worlds: 0, replacements: 0 });
    const second = play(13, 'default'); // a hit on the world; its replacement tasks are generated and now kept
    const kept = worldCacheSizes();
    expect(kept.worlds).toBe(1);
    expect(kept.replacements).toBeGreaterThan(0);
    expect(play(13, 'default')).toEqual(first);
    expect(worldCacheSizes()).toEqual(kept);
    expect(second).toEqual(first);
    clearWorldCache();
  });
});

describe('retained replacement tasks with a validated (frozen) config, as every simulation has', () => {
  // Its world is looked up once per (seed, config) while the retained worlds do not change: that memo must follow them.
  const fw = Simulation.create(loadPreset('default'), { seed: 1 }).cfg.world;

  it('follow their world: retained from its second request, dropped when it is evicted or the cache is cleared', () => {
    expect(Object.isFrozen(fw)).toBe(true);
    clearWorldCache();
    worldTemplate(3, fw);
    const a = replacementTemplate(3, 0, 1, 0, fw, null);
    expect(replacementTemplate(3, 0, 1, 0, fw, null)).not.toBe(a); // not retained
    expect(worldCacheSizes().replacements).toBe(0);
    worldTemplate(3, fw); // retained from now on, and so are its replacements
    const b = replacementTemplate(3, 0, 1, 0, fw, null);
    expect(b).toEqual(a);
    expect(replacementTemplate(3, 0, 1, 0, fw, null)).toBe(b);
    expect(replacementTemplate(3, 1, 1, 0, fw, null)).toBe(replacementTemplate(3, 1, 1, 0, fw, null));
    expect(worldCacheSizes().replacements).toBe(2);
    // 256 more worlds retained: seed 3's, the oldest, is evicted with its replacements.
    for (let s = 1000; s < 1256; s++) {
      worldTemplate(s, fw);
      worldTemplate(s, fw);
    }
    expect(worldCacheSizes()).toMatchObject({ worlds: 256, replacements: 0 });
    expect(replacementTemplate(3, 0, 1, 0, fw, null)).not.toBe(b);
    expect(worldCacheSizes().replacements).toBe(0);
    replacementTemplate(1255, 0, 1, 0, fw, null); // the newest world's
    expect(worldCacheSizes().replacements).toBe(1);
    clearWorldCache();
    expect(worldCacheSizes().replacements).toBe(0);
    replacementTemplate(1255, 0, 1, 0, fw, null); // its world is gone: not retained
    expect(worldCacheSizes().replacements).toBe(0);
    clearWorldCache();
  });

  it('are at most 65,536, all worlds together: a world then makes room among its own, oldest first', () => {
    clearWorldCache();
    worldTemplate(7, fw);
    worldTemplate(7, fw);
    const first = replacementTemplate(7, 0, 1, 0, fw, null);
    for (let c = 1; c < 65_546; c++) replacementTemplate(7, c, 1, 0, fw, null);
    expect(worldCacheSizes().replacements).toBe(65_536);
    const last = replacementTemplate(7, 65_545, 1, 0, fw, null);
    expect(replacementTemplate(7, 65_545, 1, 0, fw, null)).toBe(last); // the newest: kept
    const again = replacementTemplate(7, 0, 1, 0, fw, null); // the oldest: made room for others, generated again
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(worldCacheSizes().replacements).toBe(65_536);
    worldTemplate(8, fw);
    worldTemplate(8, fw);
    replacementTemplate(8, 0, 1, 0, fw, null); // a world without any while all are taken keeps none
    expect(worldCacheSizes().replacements).toBe(65_536);
    clearWorldCache();
  });
});
