/**
 * `rollout` records a step row from the env's last output and the simulation (`Env.lastOutput`, `statusFigures` with
 * its memo of prestige and trust) through the episode loop's `onAdvance` hook, without the observation `Env.step`
 * builds: its rows must be those `stepRow` makes of the full observations (their status blocks and texts), byte for
 * byte, over whole episodes of several policies (trust and prestige change as tasks complete and fail).
 */
import { describe, expect, it } from 'vitest';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../../src/config/load.js';
import { Env, statusFigures, StatusObjects, statusOf } from '../../src/env/env.js';
import { runEpisode } from '../../src/env/episode.js';
import { rollout, stepRow, type EpisodeMeta } from '../../src/export/rollout.js';
import { stepBuilder, type TableBuffers } from '../../src/export/table-builder.js';
import { DOMAINS, type Simulation } from '../../src/sim/index.js';

const cfg = loadPreset('default');

/** The rows of an episode built the plain way: `Env.step` (text on), `stepRow` of each full observation. */
function plainRows(policy: string, meta: EpisodeMeta, maxSteps: number): TableBuffers {
  const b = stepBuilder();
  const env = new Env();
  let last = -1;
  let lastTerminated = false;
  runEpisode(env, makePolicy(policy), { seed: meta.seed, preset: cfg, options: { max_steps: maxSteps, stall_steps: 0 } }, {
    onReset: (first) => {
      const s = (env.simulation as Simulation).state;
      b.append(stepRow(meta, 0, null, first.observation, s.simTime, 0, false, false, s.startTime));
    },
    onStep: ({ step, action, result: r }) => {
      const s = (env.simulation as Simulation).state;
      b.append(stepRow(meta, step, action, r.observation, s.simTime, r.info.reward_cents, r.terminated, r.truncated, s.startTime));
      last = b.length - 1;
      lastTerminated = r.terminated;
    },
  });
  b.setBool(last, 'is_last', true);
  if (!lastTerminated) b.setBool(last, 'truncated', true);
  return b.finish();
}

function bytesOfTable(t: TableBuffers): Buffer[] {
  const out: Buffer[] = [];
  for (const c of t.columns) {
    out.push(Buffer.from(c.values), Buffer.from(c.offsets === null ? new Uint8Array(0) : new Uint8Array(c.offsets.buffer, c.offsets.byteOffset, c.offsets.byteLength)));
    out.push(Buffer.from(c.validity ?? new Uint8Array(0)), Buffer.from([c.nullCount]));
    if (c.items) out.push(...bytesOfTable(c.items));
  }
  return out;
}

describe('rollout rows from the env without observations', () => {
  it.each([
    ['greedy', 2, 100_000],
    ['expert', 1, 400],
    ['random', 4, 150],
    ['throughput', 3, 300],
  ] as const)('%s seed %i: the same bytes as stepRow of every full observation', (policy, seed, maxSteps) => {
    const meta: EpisodeMeta = { runId: 'r', episodeId: 7, policy, preset: 'default', seed };
    const b = stepBuilder();
    rollout(cfg, makePolicy(policy), meta, { maxSteps, steps: b });
    const fast = b.finish();
    const plain = plainRows(policy, meta, maxSteps);
    expect(fast.length).toBe(plain.length);
    const [a, p] = [bytesOfTable(fast), bytesOfTable(plain)];
    expect(a.length).toBe(p.length);
    // The first buffer that differs (Buffer.equals: toEqual walks megabytes of text byte by byte).
    expect(a.findIndex((x, i) => !x.equals(p[i] as Buffer))).toBe(-1);
  });

  it('statusFigures equals statusOf field by field at every step, and keeps its objects while their values hold', () => {
    const env = new Env();
    const memo = new StatusObjects();
    let reused = 0;
    let rebuilt = 0;
    let prev: ReturnType<typeof statusFigures> | null = null;
    runEpisode(env, makePolicy('expert'), { seed: 1, preset: cfg, options: { max_steps: 400 } }, {
      onStep: () => {
        const sim = env.simulation as Simulation;
        const full = statusOf(sim);
        const f = statusFigures(sim, memo);
        expect(f).toEqual({
          funds_cents: full.funds_cents,
          monthly_payroll_cents: full.monthly_payroll_cents,
          runway_months: full.runway_months,
          prestige: full.prestige,
          trust: full.trust,
          active_tasks: full.active_tasks,
          planned_tasks: full.planned_tasks,
          completed_tasks: full.completed_tasks,
        });
        // Key order too: a row's trust is written in its record's key order.
        expect(Object.keys(f.trust)).toEqual(Object.keys(full.trust));
        if (prev !== null) {
          if (f.trust === prev.trust) reused++;
          else rebuilt++;
        }
        prev = f;
      },
    });
    // The memo is used (most steps change no trust) and refreshed (some do).
    expect(reused).toBeGreaterThan(10);
    expect(rebuilt).toBeGreaterThan(0);
  });

  it("StatusObjects' prestige follows a change of each domain's prestige, and is the same object while none changes", () => {
    const env = new Env();
    env.reset({ seed: 4, preset: cfg });
    const s = (env.simulation as Simulation).state;
    const memo = new StatusObjects();
    let last = memo.update(s).prestige;
    expect(last).toEqual(statusOf(env.simulation as Simulation).prestige);
    expect(memo.update(s).prestige).toBe(last);
    for (const d of DOMAINS) {
      // A new Decimal for one domain (prestige is replaced, never mutated).
      s.prestige[d] = s.prestige[d].plus(0.5);
      const next = memo.update(s).prestige;
      expect(next).not.toBe(last);
      expect(next).toEqual(statusOf(env.simulation as Simulation).prestige);
      expect(Object.keys(next)).toEqual(Object.keys(statusOf(env.simulation as Simulation).prestige));
      expect(memo.update(s).prestige).toBe(next);
      last = next;
    }
  });

  it("StatusObjects' trust follows every change of the clients: a trust, a name, a client object, the array, its length", () => {
    const env = new Env();
    env.reset({ seed: 3, preset: cfg });
    const s = (env.simulation as Simulation).state;
    const memo = new StatusObjects();
    const check = (): Readonly<Record<string, number>> => {
      const t = memo.update(s).trust;
      expect(Object.isFrozen(t)).toBe(true);
      expect(t).toEqual(statusOf(env.simulation as Simulation).trust);
      expect(Object.keys(t)).toEqual(Object.keys(statusOf(env.simulation as Simulation).trust));
      return t;
    };
    const first = check();
    expect(check()).toBe(first);
    const clients = s.clients as Simulation['state']['clients'][number][];
    const c0 = clients[0] as (typeof clients)[number];
    // A trust changed in place (a new Decimal).
    c0.trust = c0.trust.plus(1);
    const second = check();
    expect(second).not.toBe(first);
    expect(check()).toBe(second);
    // A client replaced by a renamed copy (the name order changes), then the same client object renamed in place.
    clients[0] = { ...c0, name: 'zzz last' };
    const third = check();
    expect(Object.keys(third).at(-1)).toBe('zzz last');
    (clients[0] as { name: string }).name = 'AAA first';
    expect(Object.keys(check())[0]).toBe('AAA first');
    // A new array of the same clients, then one client more.
    const again = [...clients];
    (s as { clients: typeof clients }).clients = again;
    check();
    again.push({ ...c0, id: clients.length, name: 'mmm new' });
    expect(Object.keys(check())).toContain('mmm new');
  });
});
