import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSplitName, SPLIT_NAMES, splitOf, splitSeed, splitSeeds, SPLITS, splitSize } from '../../src/config/splits.js';
import { splitTable } from '../../src/cli/splits.js';
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';

const CLI = 'dist/src/cli/main.js';

describe('seed splits', () => {
  it('are stable: these exact ranges (published results depend on them)', () => {
    expect(SPLITS).toEqual({ test: { first: 1, last: 100 }, validation: { first: 101, last: 1000 }, train: { first: 1001, last: 2147483647 } });
    expect(SPLIT_NAMES).toEqual(['test', 'validation', 'train']);
  });

  it("are disjoint, contiguous, and test holds the paper's seeds 1-3", () => {
    const ranges = SPLIT_NAMES.map((n) => SPLITS[n]).sort((a, b) => a.first - b.first);
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i]!;
      expect(r.first).toBeLessThanOrEqual(r.last);
      if (i > 0) expect(r.first).toBe(ranges[i - 1]!.last + 1);
    }
    for (const s of [1, 2, 3]) expect(splitOf(s)).toBe('test');
    expect(splitOf(0)).toBeNull();
    expect(splitOf(2 ** 31)).toBeNull();
    expect(isSplitName('train')).toBe(true);
    expect(isSplitName('toString')).toBe(false);
  });

  it('splitSeed stays in its split, consecutive indexes give distinct seeds, and it wraps at the size', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SPLIT_NAMES), fc.nat({ max: 2 ** 40 }), (name, i) => {
        const s = splitSeed(name, i);
        expect(splitOf(s)).toBe(name);
        expect(splitSeed(name, i + splitSize(name))).toBe(s);
        if (splitSize(name) > 1) expect(splitSeed(name, i + 1)).not.toBe(s);
      }),
    );
    expect(splitSeed('train', 0)).toBe(1001);
    expect(splitSeed('test', 100)).toBe(1);
    expect(() => splitSeed('test', -1)).toThrow(RangeError);
  });

  it('splitSeeds takes consecutive seeds and refuses to run past the split', () => {
    expect(splitSeeds('test', 3)).toEqual([1, 2, 3]);
    expect(splitSeeds('validation', 2, 5)).toEqual([106, 107]);
    expect(() => splitSeeds('test', 101)).toThrow(/100 seeds/);
    expect(splitTable()).toContain('| train | 1001-2147483647 | 2147482647 |');
  });

  it('hello reports them (schema-checked reply)', () => {
    const presets = listPresets();
    const h = new ProtocolHandler(new SessionManager({ presets, maxSessions: 2 }), { version: '9.9.9', presets, maxMessageBytes: 1000 }, { validateReplies: true });
    const r = h.handleValue({ v: 1, id: 1, op: 'hello' }).reply;
    expect(r.ok).toBe(true);
    expect((r as { result: { splits: unknown } }).result.splits).toEqual(SPLITS);
  });

  it('`ycgym splits --json` prints the table; run/shard --split pick its seeds; hello reports them', () => {
    expect(JSON.parse(execFileSync('node', [CLI, 'splits', '--json'], { encoding: 'utf8' }))).toEqual(SPLITS);
    const plan = (...args: string[]) => JSON.parse(execFileSync('node', [CLI, 'shard', 'plan', '--policy', 'greedy', ...args], { encoding: 'utf8' })) as { jobs: number; run_id: string };
    const viaSplit = plan('--split', 'validation', '--count', '3');
    expect(viaSplit.jobs).toBe(3);
    expect(viaSplit.run_id).toBe(plan('--seeds', '101-103').run_id);
    expect(plan('--split', 'test').jobs).toBe(100);
    expect(plan('--split', 'test', '--count', '2', '--offset', '2').run_id).toBe(plan('--seeds', '3-4').run_id);
    const fails = (...args: string[]) => () => execFileSync('node', [CLI, 'shard', 'plan', '--policy', 'greedy', ...args], { stdio: 'pipe' });
    expect(fails('--split', 'train')).toThrow(/give --count/);
    expect(fails('--split', 'test', '--seeds', '1-3')).toThrow(/cannot be used with/);
    expect(fails('--count', '3')).toThrow(/go with --split/);
    expect(fails('--split', 'nope')).toThrow(/unknown split/);
  });
});
