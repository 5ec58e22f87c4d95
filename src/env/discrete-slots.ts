/**
 * The Discrete action space's slot counts: what the reset options `market_slots` (K) and `task_slots` (T) default to
 * and may be at most. A leaf module: re-exported by src/protocol/limits.ts (so generated into the Python bindings and
 * docs/protocol.md with the other limits) and read by the Discrete frame.
 */

/** Default K of a Discrete session: the visible market tasks offered for accept (reset option `market_slots`). */
export const DEFAULT_MARKET_SLOTS = 10;

/** Default T of a Discrete session: the open owned tasks the task actions address (reset option `task_slots`). */
export const DEFAULT_TASK_SLOTS = 4;

/** Largest `market_slots` and `task_slots` (schema: their `maximum`; keeps frames bounded). */
export const MAX_SLOTS = 256;
