/**
 * Issue 12, F6: a recording held every row of an episode in memory until the episode ended, so a session stepping
 * forever grew the server without bound. Rows are now written as record batches every `flushRows` rows; the file
 * holds the same rows as an unstreamed recording.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { tableFromIPC, type Table } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { DEFAULT_MAX_BUFFERED_BYTES, RecordMemory, TrajectoryRecorder } from '../../src/server/recorder.js';
import { SessionManager } from '../../src/server/sessions.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

/**
 * `arrayBuffers` once collections stop changing it: V8 frees a collected ArrayBuffer's backing store on a background
 * sweeper, so right after gc() it may still be counted, and garbage an earlier test left may be freed later (each made
 * a single gc() reading wrong, one in a few runs, either way).
 */
async function settledBuffers(): Promise<number> {
  let last = Number.NaN;
  for (let i = 0; i < 50; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 5));
    const now = process.memoryUsage().arrayBuffers;
    if (now === last) return now;
    last = now;
  }
  return last;
}

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

  it('holds a bounded number of bytes, not only of rows: rows with large outputs are written before flushRows', () => {
    // Before: only rows were bounded (1,024 per open episode). A session that records and reads a full scratchpad
    // (~240K characters) at each step buffered 1,024 of them, ~250 MB, before the first flush: here 301 rows, 73M
    // characters, stayed in memory.
    const rec = new TrajectoryRecorder({ path: join(dir, 'large.arrow') });
    const m = new SessionManager({ presets: listPresets(), hooks: rec });
    const s = m.reset({ seed: 5, options: { stall_steps: 0 } }).session;
    for (let i = 0; i < 4; i++) m.step(s, `scratchpad append --content ${'y'.repeat(59_999)}`);
    const read = m.step(s, 'scratchpad read').observation.text.length;
    expect(read).toBeGreaterThan(239_000);
    let maxHeld = 0;
    for (let i = 0; i < 300; i++) {
      m.step(s, 'scratchpad read');
      maxHeld = Math.max(maxHeld, rec.bufferedRows * read);
    }
    // The bound counts two bytes a character (and a fixed cost a row): at most the bound and the newest row (the five
    // rows before the reads, counted for less, are among the first batch's rows).
    expect(maxHeld).toBeLessThanOrEqual(DEFAULT_MAX_BUFFERED_BYTES / 2 + 6 * read);
    m.close(s);
    rec.close();
    expect(tableFromIPC(readFileSync(join(dir, 'large.arrow'))).numRows).toBe(306);
  });

  it('does not keep the capacity of a large batch after writing it (a recording in progress holds only its rows)', async () => {
    // Before: a recording's row builder kept the buffers of its largest batch (a bulk run reuses them for episodes of
    // similar sizes) while the recording stayed open: after one batch of ~140 full-scratchpad reads, ~34 MB of
    // buffers per recording in progress, and a server has as many recordings in progress as sessions.
    const rec = new TrajectoryRecorder({ path: join(dir, 'kept.arrow'), compression: 'none' });
    const m = new SessionManager({ presets: listPresets(), hooks: rec });
    const s = m.reset({ seed: 5, options: { stall_steps: 0 } }).session;
    for (let i = 0; i < 4; i++) m.step(s, `scratchpad append --content ${'y'.repeat(59_999)}`);
    const before = await settledBuffers();
    for (let i = 0; i < 150; i++) m.step(s, 'scratchpad read');
    expect(rec.bufferedRows).toBeLessThan(100); // a batch was written
    const kept = (await settledBuffers()) - before;
    expect(kept).toBeLessThan(4 << 20);
    m.close(s);
    rec.close();
  });

  it('bounds the bytes of every recording sharing a RecordMemory together (a server: every open episode), keeping each newest row', () => {
    const memory = new RecordMemory(1 << 20);
    const recs = ['m1', 'm2'].map((n) => new TrajectoryRecorder({ path: join(dir, `${n}.arrow`), memory }));
    const streamed = recs.map((rec) => {
      const m = new SessionManager({ presets: listPresets(), hooks: rec });
      return { m, s: [1, 2, 3].map((seed) => m.reset({ seed, options: { stall_steps: 0 } }).session) };
    });
    let maxHeld = 0;
    for (let i = 0; i < 200; i++) {
      for (const { m, s } of streamed) for (const id of s) m.step(id, ACTIONS[i % ACTIONS.length] as string);
      maxHeld = Math.max(maxHeld, memory.heldBytes);
    }
    // The bound, and the newest row of each of the 6 open episodes (a few kB each here).
    expect(maxHeld).toBeGreaterThan(1 << 19);
    expect(maxHeld).toBeLessThanOrEqual((1 << 20) + 6 * (64 << 10));
    for (const { m, s } of streamed) for (const id of s) m.close(id);
    for (const rec of recs) rec.close();
    expect(memory.heldBytes).toBe(0);
    // The same rows as a recording without a byte bound.
    const whole = new TrajectoryRecorder({ path: join(dir, 'm-whole.arrow'), memory: new RecordMemory(Number.MAX_SAFE_INTEGER) });
    const m = new SessionManager({ presets: listPresets(), hooks: whole });
    const ids = [1, 2, 3].map((seed) => m.reset({ seed, options: { stall_steps: 0 } }).session);
    for (let i = 0; i < 200; i++) for (const id of ids) m.step(id, ACTIONS[i % ACTIONS.length] as string);
    for (const id of ids) m.close(id);
    whole.close();
    const bounded = tableFromIPC(readFileSync(join(dir, 'm1.arrow')));
    expect(bounded.batches.length).toBeGreaterThan(3);
    // (Written in another order: the episodes' batches interleave.)
    expect(rows(bounded).sort()).toEqual(rows(tableFromIPC(readFileSync(join(dir, 'm-whole.arrow')))).sort());
  });

  it('refuses a bad flushRows', () => {
    expect(() => new TrajectoryRecorder({ path: join(dir, 'bad.arrow'), flushRows: 0 })).toThrow(RangeError);
  });
});
