/**
 * `xs.map(f)` as a packed array. V8's optimised `Array.prototype.map` allocates its result holey where the interpreter's
 * is packed, so an array built by `.map` changes elements kind once the function building it is optimised, and every
 * optimised function reading such arrays then deoptimises on the new map and is compiled again (in each worker
 * isolate of a bulk run). Arrays that outlive the call (simulation state, command results, observations) are built
 * here instead: pushing onto `[]` keeps them packed however the code runs (test/unit/packed-arrays.test.ts).
 */
export function mapPacked<T, U>(xs: readonly T[], f: (x: T, i: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < xs.length; i++) out.push(f(xs[i] as T, i));
  return out;
}
