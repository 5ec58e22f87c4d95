/**
 * Issue 12, F6: a recording held every row of an episode in memory until the episode ended, so a session stepping
 * forever grew the server without bound. Rows are now written as record batches every `flushRows` rows; the file
 * holds the same rows as an unstreamed recording.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { TrajectoryRecorder } from '../../src/server/recorder.js';
import { SessionManager } from '../../src/server/sessions.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-stream-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ACTIONS = ['market browse --limit 3', 'company status', 'employee list', 'task list'];

function record(name: string, flushRows: number | undefined, steps: number): { table: Table; episodes: Table; maxBuffered: number } {
  const rec = new TrajectoryRecorder({ path: join(dir, `${name}.arrow`), ...(flushRows !== undefined ? { flushRows } : {}) });
  const m = new SessionManager({ presets: listPresets(), hooks: rec });
  const s = m.reset({ seed: 5, options: { stall_steps: 0 } }).session;
  let maxBuffered = 0;
  for (let i = 0; i < steps; i++) {
    m.step(s, ACTIONS[i % ACTIONS.length] as string);
    maxBuffered = Math.max(maxBuffered, rec.bufferedRows);
  }
  m.close(s);
  rec.close();
  return { table: tableFromIPC(readFileSync(join(dir, `${name}.arrow`))), episodes: tableFromIPC(readFileSync(join(dir, `${name}.episodes.arrow`))), maxBuffered };
}

function rows(t: Table): unknown[] {
  return t.toArray().map((r) => JSON.stringify(r.toJSON(), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
}

describe('recordings stream their rows (F6)', () => {
  it('holds at most flushRows rows of a long episode, and writes the same rows as an unstreamed recording', () => {
    const streamed = record('streamed', 8, 300);
    const whole = record('whole', 100_000, 300);
    expect(whole.maxBuffered).toBe(301); // before: the whole episode in memory
    expect(streamed.maxBuffered).toBeLessThanOrEqual(9);
    expect(streamed.table.numRows).toBe(301);
    expect(streamed.table.batches.length).toBeGreaterThan(30);
    expect(rows(streamed.table)).toEqual(rows(whole.table));
    expect(rows(streamed.episodes)).toEqual(rows(whole.episodes));
    expect(Number(streamed.episodes.getChild('steps')?.get(0))).toBe(300);
  });

  it('refuses a bad flushRows', () => {
    expect(() => new TrajectoryRecorder({ path: join(dir, 'bad.arrow'), flushRows: 0 })).toThrow(RangeError);
  });
});
