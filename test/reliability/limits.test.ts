/**
 * The limits documented in docs/reliability.md, at and around each boundary, in-process and over the wire.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Env } from '../../src/env/env.js';
import { simulationLimits, snapshotSizes, wireLimits } from '../../scripts/reliability/lib/limits.js';
import { ensureBuilt } from './build.js';

describe('limits', () => {
  beforeAll(() => ensureBuilt());

  it('command length and scratchpad size: exact boundaries and errors', () => {
    const failed = simulationLimits().filter((c) => !c.ok);
    expect(failed).toEqual([]);
  });

  it('over the wire: action length, message size, batch size, ids, names, batch reply cap', async () => {
    const failed = (await wireLimits()).filter((c) => !c.ok);
    expect(failed).toEqual([]);
  });

  it('snapshot sizes: fresh ~85 KB; even a full scratchpad of escaped characters fits the default 8 MiB message limit', () => {
    const s = snapshotSizes();
    expect(s.fresh_bytes).toBeLessThan(150_000);
    expect(s.full_ascii_scratchpad_bytes).toBeLessThan(1 << 20);
    // Escaping makes this one the largest snapshot a session can produce in a one-year episode (~1.7 MB).
    expect(s.full_control_char_scratchpad_bytes).toBeGreaterThan(1 << 20);
    expect(s.full_control_char_scratchpad_bytes).toBeLessThan(8 << 20);
  });

  // Found by this suite and fixed: instants before 1970 are valid in snapshots, and a horizon past year 9999
  // is refused at reset (like Python's datetime), so every session restores from its own snapshot.
  it('a session started on 0001-01-01 (or ending after 9999) restores from its own snapshot', () => {
    for (const options of [{ start_date: '0001-01-01' }, { start_date: '9999-12-31', horizon_years: 1 }]) {
      const env = new Env();
      let ok = true;
      try {
        env.reset({ seed: 1, options });
      } catch {
        ok = false; // refusing the reset is a fine fix too
      }
      if (ok) new Env().restore(JSON.parse(JSON.stringify(env.snapshot())));
    }
  });
});
