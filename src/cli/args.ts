/**
 * Parsers of the CLI's numeric options: each accepts exactly the integers (or seconds) in its range and refuses
 * anything else with a message that names the accepted range, so that `99999999999999999999` or `1e20` is never
 * rounded silently and a seed list cannot ask for more memory than Node has.
 */
import { InvalidArgumentError } from 'commander';

/** Seeds are safe integers, as in the protocol (`schema/protocol.schema.json`, Seed) and in snapshots. */
export const SEED_MIN = -Number.MAX_SAFE_INTEGER;
export const SEED_MAX = Number.MAX_SAFE_INTEGER;
/** Most seeds one list may name (`1-1000000` is a million episodes). */
export const MAX_SEED_LIST = 1_000_000;
/** Most worker threads of `run`/`main`. */
export const MAX_WORKERS = 1024;

/** Parse a decimal integer (optional sign) in [min, max]; otherwise a commander error naming `what` and the range. */
export function integerIn(v: string, min: number, max: number, what: string): number {
  const s = v.trim();
  if (!/^[-+]?\d+$/.test(s)) throw new InvalidArgumentError(`${what} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  // Compare as BigInt: Number('99999999999999999999') would round to an in-range-looking 1e20.
  const b = BigInt(s);
  if (b < BigInt(min) || b > BigInt(max)) throw new InvalidArgumentError(`${what} must be an integer in [${min}, ${max}], got ${s}`);
  return Number(b);
}

/** An option parser for integers in [min, max]. */
export function intOption(min: number, max: number, what = 'value'): (v: string) => number {
  return (v) => integerIn(v, min, max, what);
}

/** A run seed: a safe integer. */
export function seedArg(v: string): number {
  return integerIn(v, SEED_MIN, SEED_MAX, 'seed');
}

/** Parse `1-5`, `1,3,7` or `2` into a list of seeds (safe integers, at most `MAX_SEED_LIST` of them). */
export function parseSeedList(v: string): number[] {
  const ranges: [number, number][] = [];
  let count = 0;
  for (const part of v.split(',')) {
    const m = /^\s*([-+]?\d+)\s*(?:-\s*([-+]?\d+)\s*)?$/.exec(part);
    if (!m) throw new InvalidArgumentError(`bad seed list: ${v} (expected e.g. 1-5 or 1,3,7)`);
    const a = seedArg(m[1] as string);
    const b = m[2] !== undefined ? seedArg(m[2]) : a;
    if (b < a) throw new InvalidArgumentError(`bad seed range: ${part.trim()} (the end is below the start)`);
    count += b - a + 1;
    if (count > MAX_SEED_LIST) throw new InvalidArgumentError(`seed list too long: ${v} names more than ${MAX_SEED_LIST} seeds`);
    ranges.push([a, b]);
  }
  const out: number[] = [];
  for (const [a, b] of ranges) for (let s = a; s <= b; s++) out.push(s);
  return out;
}

/** A number of seconds in [0, max] (decimals allowed). */
export function secondsIn(max: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > max) throw new InvalidArgumentError(`not a number of seconds in [0, ${max}]: ${v}`);
    return n;
  };
}
