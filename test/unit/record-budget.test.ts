/**
 * A recording's byte budget (`TrajectoryWriter`, `RecorderOptions.budget`): bytes are taken before a batch is written,
 * so a recording's files never exceed what it took, and once complete they are exactly what it kept (the bound taken
 * for the closing footers is given back). A recording the budget stops holds a prefix of the rows an unbounded one
 * holds, in complete files; below the budget the files are byte-identical to an unbounded recording's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { readArrowFile } from '../../src/export/arrow.js';
import { zstdEncoder } from '../../src/export/zstd.js';
import { emptyRecordingBytes, TrajectoryRecorder, type RecordBudget } from '../../src/server/recorder.js';
import { SessionManager } from '../../src/server/sessions.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-budget-'));
beforeAll(async () => {
  await zstdEncoder();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const size = (name: string): number => {
  let n = 0;
  for (const f of [`${name}.arrow`, `${name}.episodes.arrow`]) if (existsSync(join(dir, f))) n += statSync(join(dir, f)).size;
  return n;
};

/** A budget of `limit` bytes that checks, at every take, that the files on disk are within what was taken. */
function budgetOf(limit: number, name: string): RecordBudget & { used: number; refused: number } {
  const b = {
    used: 0,
    refused: 0,
    take(bytes: number) {
      expect(size(name)).toBeLessThanOrEqual(b.used);
      if (b.used + bytes > limit) {
        b.refused++;
        return { reason: 'client_budget' as const, message: 'spent' };
      }
      b.used += bytes;
      return null;
    },
    give(bytes: number) {
      expect(bytes).toBeGreaterThan(0);
      b.used -= bytes;
    },
  };
  return b;
}

const ACTIONS = ['market browse --limit 5', 'company status', 'employee list', 'task list', 'not a command'];

/** One session: episodes of varied lengths (some longer than flushRows, so rows stream), recorded into `name`. */
function play(name: string, opts: { budget?: RecordBudget; compression: 'none' | 'zstd' }): TrajectoryRecorder {
  const rec = new TrajectoryRecorder({ path: join(dir, `${name}.arrow`), flushRows: 8, compression: opts.compression, ...(opts.budget !== undefined ? { budget: opts.budget } : {}) });
  const m = new SessionManager({ presets: listPresets(), hooks: rec });
  const LENS = [3, 20, 1, 9];
  let s: string | undefined;
  for (let e = 0; e < 12; e++) {
    const len = LENS[e % LENS.length] as number;
    s = m.reset({ seed: 11 + e, ...(s !== undefined ? { session: s } : {}), options: { max_steps: len, stall_steps: 0 } }).session;
    for (let i = 0; i < len; i++) expect(m.step(s, ACTIONS[(e + i) % ACTIONS.length] as string).truncated).toBe(i === len - 1);
  }
  // One more episode left open: written (truncated) when the session closes.
  s = m.reset({ seed: 99, session: s as string, options: { stall_steps: 0 } }).session;
  for (let i = 0; i < 5; i++) m.step(s, 'company status');
  m.close(s);
  rec.close();
  return rec;
}

const rows = (path: string): string[] =>
  readArrowFile(path)
    .toArray()
    .map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));

describe('recording byte budget', () => {
  for (const compression of ['none', 'zstd'] as const) {
    it(`takes bytes before writing, never exceeds the budget, and keeps exactly the files' size (${compression})`, () => {
      play(`full-${compression}`, { compression });
      const full = size(`full-${compression}`);
      const fullRows = rows(join(dir, `full-${compression}.arrow`));
      const fullEps = rows(join(dir, `full-${compression}.episodes.arrow`));
      // Budgets from an empty recording's to more than the whole: each stops (or not) with complete files.
      for (const limit of [emptyRecordingBytes(), Math.floor(full / 5), Math.floor(full / 2), full - 1, full + 64]) {
        const name = `b${limit}-${compression}`;
        const b = budgetOf(limit, name);
        const rec = play(name, { budget: b, compression });
        expect(size(name)).toBe(b.used);
        expect(rec.bytes).toBe(b.used);
        expect(b.used).toBeLessThanOrEqual(limit);
        const stepRows = rows(join(dir, `${name}.arrow`));
        const epRows = rows(join(dir, `${name}.episodes.arrow`));
        if (limit > full + 32) {
          expect(rec.stopped).toBeNull();
          // Below the budget: byte for byte the unbounded recording.
          for (const f of ['.arrow', '.episodes.arrow']) expect(readFileSync(join(dir, `${name}${f}`)).equals(readFileSync(join(dir, `full-${compression}${f}`)))).toBe(true);
        } else {
          expect(rec.stopped).toMatchObject({ reason: 'client_budget' });
          expect(b.refused).toBe(1); // nothing is asked after the stop
          // A prefix of the unbounded recording's rows (the ids of run and episodes are the same).
          expect(stepRows).toEqual(fullRows.slice(0, stepRows.length));
          expect(epRows).toEqual(fullEps.slice(0, epRows.length));
          expect(epRows.length).toBeLessThan(fullEps.length);
        }
      }
    });
  }

  it('counts an empty recording as its two files', () => {
    const b = budgetOf(1 << 20, 'empty');
    const rec = new TrajectoryRecorder({ path: join(dir, 'empty.arrow'), budget: b });
    expect(b.used).toBeGreaterThanOrEqual(emptyRecordingBytes());
    rec.close();
    expect(size('empty')).toBe(b.used);
    expect(emptyRecordingBytes()).toBeGreaterThanOrEqual(b.used);
    expect(emptyRecordingBytes() - b.used).toBeLessThanOrEqual(16);
  });
});
