/**
 * Seed splits: which run seeds are for training, which for model selection and which for evaluation, so that
 * nobody trains on the seeds the paper evaluates on (1-3) by accident. This table is the one source: `ycgym
 * splits`, `ycgym run --split`, the server's `hello` (and through it the Python env and the LLM runner) read it.
 *
 * The ranges are inclusive and disjoint. `test` holds the paper's seeds 1-3 and every seed the README reports;
 * `train` runs to 2^31 - 1, the largest seed every front-end accepts.
 */

/** Name of a split. */
export type SplitName = 'test' | 'validation' | 'train';

/** An inclusive seed range. */
export interface SeedRange {
  first: number;
  last: number;
}

/** The splits, in the order they are listed. Stable: changing a range changes what published numbers mean. */
export const SPLITS: Readonly<Record<SplitName, Readonly<SeedRange>>> = Object.freeze({
  test: Object.freeze({ first: 1, last: 100 }),
  validation: Object.freeze({ first: 101, last: 1000 }),
  train: Object.freeze({ first: 1001, last: 2 ** 31 - 1 }),
});

/** One line per split, for help texts and listings. */
export const SPLIT_PURPOSE: Readonly<Record<SplitName, string>> = Object.freeze({
  test: "evaluation: report results on these (includes the paper's seeds 1-3)",
  validation: 'model selection, hyper-parameters, early stopping',
  train: 'training (RL rollouts, fine-tuning data)',
});

/** The split names. */
export const SPLIT_NAMES = Object.keys(SPLITS) as SplitName[];

/** Whether `name` names a split. */
export function isSplitName(name: string): name is SplitName {
  return Object.hasOwn(SPLITS, name);
}

/** Number of seeds in a split. */
export function splitSize(name: SplitName): number {
  const r = SPLITS[name];
  return r.last - r.first + 1;
}

/**
 * The `index`-th seed of a split (index >= 0, wrapping around at the split's size): `first + index mod size`.
 * Consecutive indexes give distinct seeds, so a vector of environments reset with seeds s, s+1, ... plays distinct
 * worlds. The Python env draws `options={"split": ...}` seeds with the same rule from the reset seed.
 */
export function splitSeed(name: SplitName, index: number): number {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`split index must be a non-negative integer, got ${index}`);
  return SPLITS[name].first + (index % splitSize(name));
}

/** `count` consecutive seeds of a split starting at its `offset`-th (for `ycgym run --split NAME --count N`). */
export function splitSeeds(name: SplitName, count: number, offset = 0): number[] {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, got ${count}`);
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`offset must be a non-negative integer, got ${offset}`);
  if (offset + count > splitSize(name)) {
    throw new RangeError(`split ${name} has ${splitSize(name)} seeds (${SPLITS[name].first}-${SPLITS[name].last}); offset ${offset} + count ${count} is more`);
  }
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(SPLITS[name].first + offset + i);
  return out;
}

/** The split a seed belongs to (null: outside every split, e.g. 0 or negative). */
export function splitOf(seed: number): SplitName | null {
  for (const name of SPLIT_NAMES) if (seed >= SPLITS[name].first && seed <= SPLITS[name].last) return name;
  return null;
}
