import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GreedyPolicy } from '../../baselines/greedy.js';
import { readArrowFile } from '../../src/export/arrow.js';
import { TrajectoryRecorder } from '../../src/server/recorder.js';
import { rollout } from '../../src/export/rollout.js';
import { STEP_COLUMNS } from '../../src/export/schema.js';
import { SessionManager } from '../../src/server/sessions.js';
import { Simulation } from '../../src/sim/simulation.js';
import { loadPreset } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'ycgym-rec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Greedy's commands for a seed (played on a plain simulation). */
function greedyCommands(seed: number, max: number): string[] {
  const sim = Simulation.create(loadPreset('default'), { seed });
  const p = new GreedyPolicy();
  p.reset();
  const out: string[] = [];
  let lastCommand: string | null = null;
  let lastExit = 0;
  let lastOutput: unknown = null;
  while (out.length < max) {
    const c = p.act({ lastCommand, lastExit, lastOutput });
    if (c === null) break;
    const r = sim.execute(c);
    out.push(c);
    [lastCommand, lastExit, lastOutput] = [c, r.exit, r.value];
    if (sim.state.fundsCents < 0 || sim.state.simTime >= sim.state.horizonEnd) break;
  }
  return out;
}

describe('server-side TrajectoryRecorder (SessionHooks)', () => {
  it('records sessions of a SessionManager: terminated, truncated and closed episodes', () => {
    const path = join(dir, 'rec.arrow');
    const rec = new TrajectoryRecorder({ path, runId: 'test-run' });
    const sm = new SessionManager({ presets: ['default'], hooks: rec });
    // Session 1: greedy seed 3 to bankruptcy.
    const a = sm.reset({ seed: 3 });
    const cmds = greedyCommands(3, 10_000);
    let last = null;
    for (const c of cmds) last = sm.step(a.session, c);
    expect(last?.terminated).toBe(true);
    // Session 2: max_steps truncation; session 3: closed mid-episode.
    const b = sm.reset({ seed: 4, options: { max_steps: 3 } });
    for (const c of ['employee list', 'no such command', 'market browse']) sm.step(b.session, c);
    const c = sm.reset({ seed: 5 });
    sm.step(c.session, 'company status');
    sm.close(c.session);
    rec.close();
    expect(rec.episodesWritten).toBe(3);

    const t = readArrowFile(path);
    expect(t.schema.fields.map((f) => f.name)).toEqual(STEP_COLUMNS.map((x) => x.name));
    expect(t.numRows).toBe(cmds.length + 1 + 4 + 2);
    const rows = t.toArray().map((r) => r as Record<string, unknown>);
    expect(rows.filter((r) => r['is_first'] === true).length).toBe(3);
    expect(rows.filter((r) => r['is_last'] === true).length).toBe(3);
    expect(Number(rows[cmds.length]?.['funds_cents'])).toBe(-1630305);
    expect(rows[cmds.length]?.['terminated']).toBe(true);
    expect(rows[cmds.length + 4]?.['truncated']).toBe(true);
    expect(rows[rows.length - 1]?.['truncated']).toBe(true);
    expect(rows[0]?.['run_id']).toBe('test-run');

    const eps = readArrowFile(join(dir, 'rec.episodes.arrow')).toArray().map((r) => r as Record<string, unknown>);
    expect(eps.map((e) => e['outcome'])).toEqual(['bankruptcy', 'truncated', 'truncated']);
    expect(eps.map((e) => Number(e['steps']))).toEqual([cmds.length, 3, 1]);
    expect(Number(eps[0]?.['final_funds_cents'])).toBe(-1630305);
    expect(Number(eps[0]?.['accepted_total'])).toBeGreaterThan(0);
    expect(Number(eps[0]?.['tasks_succeeded']) + Number(eps[0]?.['tasks_failed'])).toBeGreaterThan(0);
    // The statistics read from the live world equal the bulk runner's for the same greedy episode.
    const ref = rollout(loadPreset('default'), new GreedyPolicy(), { runId: 'x', episodeId: 0, policy: 'greedy', preset: 'default', seed: 3 }).episode;
    for (const k of ['final_funds_cents', 'outcome', 'steps', 'tasks_succeeded', 'tasks_failed', 'accepted_from_adversarial', 'accepted_total'] as const) {
      expect(String(eps[0]?.[k]), k).toBe(String(ref[k]));
    }
  });
});
