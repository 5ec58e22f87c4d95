/**
 * Many episodes at once over one connection: the vector driver of the one episode loop. Each episode is its own
 * server session and its own `EpisodeLoop` (the same bookkeeping as `runEpisode`); every round one `step_batch`
 * carries the next action of every episode still running, so N episodes cost about one round trip per step of the
 * longest, not N. Results are those of `runEpisode` on the same seeds, policies and options (the server's env is
 * the same stepper; the policy sees the output decoded from its text, as over `RemoteEnv`).
 */
import type { ResetArgs } from '../env/env.js';
import { type EpisodeLoop, type EpisodeResult, type EpisodeStep, recordCommandStep, startCommandEpisode } from '../env/episode.js';
import type { Policy, PolicyObservation } from '../env/policy.js';
import { type Client, ProtocolError, type SessionResetResult } from './client.js';

/** One episode to play: its policy and reset arguments (a preset by name: configs are not sent to servers). */
export interface BatchedEpisode {
  readonly policy: Policy;
  readonly args: ResetArgs;
}

/** Watchers of a batched run. */
export interface BatchedHooks {
  /** After each step of episode `index` (in request order within a round). */
  onStep?(index: number, s: EpisodeStep): void;
  /** After each round: episodes still running. */
  onRound?(running: number): void;
}

/**
 * Play `episodes` on the server behind `client`, all at once; returns their results in order. The resets go out
 * together, as do the closes of the sessions at the end (also on error). A reset or step the server refuses (e.g.
 * `session_limit`, `busy`) fails the whole run with its `ProtocolError`.
 */
export async function runEpisodesBatched(client: Client, episodes: readonly BatchedEpisode[], hooks: BatchedHooks = {}): Promise<EpisodeResult[]> {
  const resetArgs = episodes.map((e) => {
    const preset = e.args.preset;
    if (preset !== undefined && typeof preset !== 'string') throw new TypeError('runEpisodesBatched: preset must be the name of a built-in preset');
    return { seed: e.args.seed, ...(preset !== undefined ? { preset } : {}), ...(e.args.options !== undefined ? { options: e.args.options } : {}) };
  });
  const sessions: string[] = [];
  try {
    // Every reset in flight at once (one round trip for all, not one per episode); a refused one fails the run
    // with its error once all are answered, and the sessions the others opened are closed below.
    const resets = await Promise.allSettled(resetArgs.map((a) => client.reset(a)));
    for (const r of resets) if (r.status === 'fulfilled') sessions.push(r.value.session);
    const refused = resets.find((r) => r.status === 'rejected');
    if (refused !== undefined) throw refused.reason;
    const loops: EpisodeLoop<PolicyObservation, string>[] = resets.map((r, i) => {
      const e = episodes[i] as BatchedEpisode;
      return startCommandEpisode(e.policy, e.args.seed, (r as PromiseFulfilledResult<SessionResetResult>).value);
    });
    let live = loops.map((_, i) => i);
    while (live.length > 0) {
      const round: { i: number; action: string }[] = [];
      for (const i of live) {
        const a = loops[i]?.next() ?? null;
        if (a !== null) round.push({ i, action: a });
      }
      if (round.length === 0) break;
      const items = await client.stepBatch(round.map((x) => ({ session: sessions[x.i] as string, action: x.action })));
      const next: number[] = [];
      round.forEach((x, k) => {
        const item = items[k];
        if (item === undefined) throw new ProtocolError('bad_reply', `step_batch answered ${items.length} of ${round.length} steps`);
        if (!item.ok) throw new ProtocolError(item.error.code, `episode ${x.i} (seed ${episodes[x.i]?.args.seed}): ${item.error.message}`);
        const loop = loops[x.i];
        if (loop === undefined) return;
        recordCommandStep(loop, x.action, item.result);
        hooks.onStep?.(x.i, { step: loop.stepCount, action: x.action, result: item.result });
        if (!item.result.terminated && !item.result.truncated) next.push(x.i);
      });
      live = next;
      hooks.onRound?.(live.length);
    }
    return loops.map((l) => l.result());
  } finally {
    await Promise.allSettled(sessions.map((s) => client.closeSession(s)));
  }
}
