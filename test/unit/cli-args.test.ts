/**
 * Numeric CLI options (issue 12, item 5): every number is checked for integer-ness and range before use, with
 * a message naming the range; nothing is rounded silently and no list can outgrow memory.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { integerIn, MAX_SEED_LIST, parseSeedList, secondsIn, seedArg } from '../../src/cli/args.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

describe('numeric CLI arguments', () => {
  it('seeds: safe integers only, never rounded', () => {
    expect(seedArg('9007199254740991')).toBe(9007199254740991);
    expect(seedArg('-9007199254740991')).toBe(-9007199254740991);
    expect(seedArg(' 7 ')).toBe(7);
    for (const bad of ['9007199254740992', '99999999999999999999', '1e20', '1.5', '', 'x', '0x10', 'Infinity']) {
      expect(() => seedArg(bad), bad).toThrow(InvalidArgumentError);
      expect(() => seedArg(bad), bad).toThrow(/seed must be an integer in \[-9007199254740991, 9007199254740991\]/);
    }
  });
  it('seed lists: ranges, lists, negatives; bounded length checked before expanding', () => {
    expect(parseSeedList('1-3,7,-2--1')).toEqual([1, 2, 3, 7, -2, -1]);
    expect(parseSeedList(`1-${MAX_SEED_LIST}`)).toHaveLength(MAX_SEED_LIST);
    const t0 = performance.now();
    expect(() => parseSeedList('1-100000000')).toThrow(/seed list too long: 1-100000000 names more than 1000000 seeds/);
    expect(() => parseSeedList(`1-${MAX_SEED_LIST},0`)).toThrow(/seed list too long/);
    expect(() => parseSeedList('-9007199254740991-9007199254740991')).toThrow(/seed list too long/);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(() => parseSeedList('99999999999999999999')).toThrow(/seed must be an integer/);
    expect(() => parseSeedList('5-1')).toThrow(/bad seed range: 5-1/);
    expect(() => parseSeedList('1-x')).toThrow(/bad seed list/);
  });
  it('integers in a range; seconds in a range', () => {
    expect(integerIn('+5', 1, 10, '--n')).toBe(5);
    expect(() => integerIn('0', 1, 10, '--workers')).toThrow('--workers must be an integer in [1, 10], got 0');
    expect(() => integerIn('-5', 1, 10, '--workers')).toThrow(/got -5/);
    expect(() => integerIn('11', 1, 10, '--workers')).toThrow(/got 11/);
    expect(secondsIn(100)('0.5')).toBe(0.5);
    for (const bad of ['-1', '101', 'NaN', '1e400', '']) expect(() => secondsIn(100)(bad), bad).toThrow(/not a number of seconds in \[0, 100\]/);
  });
  it.skipIf(!existsSync(CLI))('the built CLI exits 2 with the message for the inputs that used to crash or round', () => {
    const cases: [string[], RegExp][] = [
      [['run', '--policy', 'greedy', '--seeds', '99999999999999999999', '--out', '/nonexistent/x'], /seed must be an integer/],
      [['run', '--policy', 'greedy', '--seeds', '1-100000000', '--out', '/nonexistent/x'], /seed list too long/],
      [['run', '--policy', 'greedy', '--seeds', '1', '--max-steps', '99999999999999999999', '--out', '/nonexistent/x'], /--max-steps must be an integer/],
      [['run', '--policy', 'greedy', '--seeds', '1', '--workers', '0', '--out', '/nonexistent/x'], /--workers must be an integer in \[1, 1024\]/],
      [['run', '--policy', 'greedy', '--split', 'train', '--count', '99999999999999999999', '--out', '/nonexistent/x'], /--count must be an integer in \[1, 1000000\]/],
      [['run', '--policy', 'greedy', '--split', 'train', '--count', '5', '--offset', '-100', '--out', '/nonexistent/x'], /--offset must be an integer in \[0, 9007199254740991\], got -100/],
      [['world', '--seed', '1e20'], /seed must be an integer/],
      [['world', '--seed', '99999999999999999999'], /seed must be an integer/],
      [['serve', '--max-sessions', '-5'], /--max-sessions must be an integer/],
      [['serve', '--idle-timeout', '1e300'], /not a number of seconds/],
    ];
    for (const [args, msg] of cases) {
      let status = 0;
      let stderr = '';
      try {
        execFileSync(process.execPath, [CLI, ...args], { stdio: 'pipe', timeout: 30_000 });
      } catch (e) {
        status = (e as { status: number }).status;
        stderr = String((e as { stderr: Buffer }).stderr);
      }
      expect(status, args.join(' ')).not.toBe(0);
      expect(stderr, args.join(' ')).toMatch(msg);
      expect(stderr).not.toMatch(/FATAL|Invalid string length|at .*\.js:\d+/);
    }
  });
});
