/**
 * Small shared helpers of the reliability suite: percentiles, hashing, bounded waits, paths.
 * Every wait here is bounded in time; nothing loops without a limit.
 */
import { createHash, type Hash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../../src/config/load.js';

/** The repository root (where package.json lives). */
export const ROOT = packageRoot();

/**
 * Path of a compiled reliability entry point, e.g. `distEntry('server-child')`: under dist/, or under the
 * directory named by YCGYM_RELIABILITY_DIST (the tests build a private copy there when dist/ is stale).
 */
export function distEntry(name: string): string {
  const base = process.env['YCGYM_RELIABILITY_DIST'] ?? join(ROOT, 'dist');
  const p = join(base, 'scripts', 'reliability', `${name}.js`);
  if (!existsSync(p)) throw new Error(`${p} is missing: build with \`npx tsc -p scripts/reliability/tsconfig.json\``);
  return p;
}

/** Summary of a latency sample (same unit as the input). */
export interface Percentiles {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles of a sample (zeros for an empty sample). */
export function percentiles(xs: readonly number[] | Float64Array): Percentiles {
  const s = Float64Array.from(xs).sort();
  const n = s.length;
  if (n === 0) return { n: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
  const at = (q: number): number => s[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] as number;
  let sum = 0;
  for (const x of s) sum += x;
  return { n, p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), max: round(s[n - 1] as number), mean: round(sum / n) };
}

/** Round to `digits` decimals. */
export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Incremental SHA-256 of a trajectory (strings are hashed as UTF-8, each followed by a newline). */
export class TrajectoryHash {
  private readonly h: Hash = createHash('sha256');
  private n = 0;
  add(line: string): void {
    this.h.update(line);
    this.h.update('\n');
    this.n++;
  }
  /** Number of lines hashed so far. */
  get lines(): number {
    return this.n;
  }
  digest(): string {
    return this.h.digest('hex');
  }
}

/** SHA-256 hex of a string. */
export function sha256(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Resolve after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Reject with a clear message when `p` does not settle within `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms)))]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** Poll `cond` every `everyMs` until it holds or `ms` elapse; returns its last value. */
export async function waitFor(cond: () => boolean | Promise<boolean>, ms: number, everyMs = 25): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await sleep(everyMs);
  }
  return cond();
}

/** Memory of this process in MiB (after a full GC when the process runs with --expose-gc). */
export interface MemoryFigures {
  rss_mib: number;
  heap_used_mib: number;
  heap_total_mib: number;
  external_mib: number;
  gc: boolean;
}

/** Run a full garbage collection when available (`--expose-gc`); returns whether it ran. */
export function fullGc(): boolean {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g === undefined) return false;
  g();
  g();
  return true;
}

/** Current memory figures (collecting garbage first when possible). */
export function memoryFigures(): MemoryFigures {
  const gc = fullGc();
  const m = process.memoryUsage();
  const mib = (x: number): number => round(x / 2 ** 20, 2);
  return { rss_mib: mib(m.rss), heap_used_mib: mib(m.heapUsed), heap_total_mib: mib(m.heapTotal), external_mib: mib(m.external + m.arrayBuffers), gc };
}

/** A deterministic 32-bit PRNG (mulberry32): the policies and the fuzzers' own choices. */
export class Prng {
  private s: number;
  constructor(seed: number) {
    this.s = (seed ^ 0x9e3779b9) >>> 0;
  }
  /** Uniform in [0, 2^32). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  /** Uniform integer in [0, n). */
  int(n: number): number {
    return this.next() % n;
  }
  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() / 4294967296 < p;
  }
  /** A uniformly chosen element. */
  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new RangeError('pick from an empty list');
    return xs[this.int(xs.length)] as T;
  }
}
