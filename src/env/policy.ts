/**
 * The policy interface every baseline implements: it sees only what an agent sees (the last command,
 * its exit code and JSON output) and answers with the next command text, or null when finished.
 */

/** What a policy observes after each command. */
export interface PolicyObservation {
  /** The previous command (null before the first). */
  readonly lastCommand: string | null;
  /** Exit code of the previous command. */
  readonly lastExit: number;
  /** Parsed JSON output of the previous command (plain numbers). */
  readonly lastOutput: unknown;
}

/** A command-level policy. */
export interface Policy {
  readonly name: string;
  /** Prepare for a new episode with the given seed. */
  reset(seed: number): void;
  /** Next command, or null to stop. */
  act(obs: PolicyObservation): string | null;
}
