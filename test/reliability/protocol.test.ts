/**
 * Quick mode of the protocol fuzzer (scripts/reliability/lib/protofuzz.ts): malformed frames of every kind
 * against a server child while a control session steps a scripted episode. The full run (100k frames) is
 * `run.js --full --only protocol`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { fuzzProtocol } from '../../scripts/reliability/lib/protofuzz.js';
import { ensureBuilt } from './build.js';

describe('protocol fuzzing (quick)', () => {
  beforeAll(() => ensureBuilt());

  it('2000 frames: every answer right, the server up, the control session byte-identical', async () => {
    const r = await fuzzProtocol({ frames: 2000, seed: 31, controlSteps: 200 });
    expect(r.examples).toEqual([]);
    expect(r.violations).toBe(0);
    expect(r.internal_errors).toBe(0);
    expect(r.server.alive).toBe(true);
    expect(r.server.hello_after).toBe(true);
    expect(r.server.sessions_after).toBe(0);
    expect(r.control).toMatchObject({ identical_to_in_process: true, errors: [] });
    expect(r.answered + r.unanswered_by_design.hit_and_run + r.unanswered_by_design.oversize_dropped).toBe(2000);
    // Every family of malformed input was sent.
    for (const cat of ['valid', 'bad_version', 'bad_op', 'extra_field', 'bad_id', 'wrong_type', 'unknown_session', 'bad_preset', 'bad_snapshot', 'mutated_snapshot', 'corrupted', 'random_bytes', 'random_json', 'framing']) {
      expect(r.by_category[cat] ?? 0, cat).toBeGreaterThan(0);
    }
  });
});
