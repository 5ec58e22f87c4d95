import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { Env, EnvUsageError, type ResetResult, type StepResult } from '../../src/env/env.js';
import { admissibleCommands, discreteCommand, discreteFrame, discreteSpec, openTasks, type FrameLists } from '../../src/env/discrete.js';
import { Simulation } from '../../src/sim/index.js';
import { readGoldenFile } from '../../src/cli/parity.js';
import { DiscreteGreedy } from '../../baselines/discrete-greedy.js';

/** Whether the episode of `r` is over (a reset's result never is). */
const over = (r: ResetResult | StepResult): boolean => 'terminated' in r && (r.terminated || r.truncated);

/** A small deterministic generator for test policies (never used by the simulation). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pickMasked(mask: readonly boolean[], r: () => number): number {
  const ok = mask.flatMap((m, i) => (m ? [i] : []));
  return ok[Math.floor(r() * ok.length)] as number;
}

/** The documented reason a masked-in action may fail: the fallback `resume` with no active task. */
function fallbackResume(env: Env, a: number): boolean {
  return a === 0 && !openTasks(env.simulation as Simulation).some((t) => t.status === 'active');
}

function expectFrameShape(env: Env, obs: number[], mask: boolean[]): void {
  const spec = env.discreteSpec!;
  expect(obs).toHaveLength(spec.obs_size);
  expect(mask).toHaveLength(spec.n_actions);
  expect(mask.some((m) => m)).toBe(true);
  obs.forEach((v, i) => {
    expect(Number.isFinite(v)).toBe(true);
    expect(v).toBeGreaterThanOrEqual(spec.obs_low[i] as number);
    expect(v).toBeLessThanOrEqual(spec.obs_high[i] as number);
  });
}

describe('Discrete frame: spec', () => {
  it('sizes, names and bounds agree; N = 1 + K + T(3 + E)', () => {
    const env = new Env();
    const r = env.reset({ seed: 1, options: { actions: 'discrete', market_slots: 7, task_slots: 3 } });
    const spec = r.info.discrete_spec!;
    expect(spec.n_actions).toBe(1 + 7 + 3 * (3 + 8));
    expect(spec.action_names).toHaveLength(spec.n_actions);
    expect(new Set(spec.action_names).size).toBe(spec.n_actions);
    expect(spec.feature_names).toHaveLength(spec.obs_size);
    expect(new Set(spec.feature_names).size).toBe(spec.obs_size);
    expect(spec.obs_low).toHaveLength(spec.obs_size);
    spec.obs_low.forEach((lo, i) => expect(lo).toBeLessThan(spec.obs_high[i] as number));
    expect(spec.action_names.slice(0, 3)).toEqual(['resume', 'accept[0]', 'accept[1]']);
    expect(spec.action_names[8]).toBe('task[0].assign_all');
    expect(spec.action_names[11]).toBe('task[0].assign[0]');
    expectFrameShape(env, r.observation.discrete!.obs, r.observation.discrete!.mask);
    // The spec is the same for every seed of a preset.
    const r2 = new Env().reset({ seed: 99, options: { actions: 'discrete', market_slots: 7, task_slots: 3 } });
    expect(r2.info.discrete_spec).toEqual(spec);
  });

  it('text mode carries no frame; bad options are refused', () => {
    const env = new Env();
    const r = env.reset({ seed: 1 });
    expect(r.observation.discrete).toBeUndefined();
    expect(r.info.discrete_spec).toBeUndefined();
    expect(() => env.reset({ seed: 1, options: { actions: 'bogus' as never } })).toThrow(RangeError);
    expect(() => env.reset({ seed: 1, options: { actions: 'discrete', market_slots: 0 } })).toThrow(RangeError);
    expect(() => env.reset({ seed: 1, options: { actions: 'discrete', task_slots: 1.5 } })).toThrow(RangeError);
  });

  it('at reset only accepts are valid (no task is open)', () => {
    const env = new Env();
    const r = env.reset({ seed: 3, options: { actions: 'discrete' } });
    const { mask } = r.observation.discrete!;
    expect(mask[0]).toBe(false);
    expect(mask.slice(1, 11).every((m) => m)).toBe(true);
    expect(mask.slice(11).some((m) => m)).toBe(false);
  });
});

describe('Discrete frame: masks', () => {
  it('masked-out actions are refused (a step that changes nothing); masked-in ones succeed (or are the documented fallback)', () => {
    for (const seed of [1, 2]) {
      const env = new Env();
      let r = env.reset({ seed, preset: 'corrected', options: { actions: 'discrete', task_slots: 3 } });
      const rand = rng(seed);
      let frame = r.observation.discrete!;
      for (let step = 0; step < 90; step++) {
        if (step % 30 === 0) {
          const before = JSON.stringify(env.snapshot());
          frame.mask.forEach((m, a) => {
            if (m) {
              const c = env.clone();
              const res = c.step(a);
              if (!fallbackResume(env, a)) expect(res.observation.ok, `${res.info.action_text}: ${res.observation.text}`).toBe(true);
            } else {
              // Refused: an ordinary step that changes nothing in the simulation.
              const c = env.clone();
              const res = c.step(a);
              expect(res.observation.ok).toBe(false);
              expect(res.observation.exit_code).toBe(1);
              expect(res.observation.text).toBe(`{"error": "action ${a} (${env.discreteSpec!.action_names[a]}) is masked out (not valid now)"}`);
              expect(res.reward).toBe(0);
              expect(res.info.action_text).toBeUndefined();
              expect(res.info.step).toBe(env.snapshot().steps + 1);
              expect(JSON.stringify(c.snapshot().sim)).toBe(JSON.stringify(env.snapshot().sim));
            }
          });
          expect(() => env.step(frame.mask.length)).toThrow(/integer in/);
          expect(() => env.step(-1)).toThrow(EnvUsageError);
          expect(() => env.step(0.5)).toThrow(EnvUsageError);
          expect(() => env.step('sim resume')).toThrow(/integer index/);
          expect(JSON.stringify(env.snapshot())).toBe(before);
        }
        const s = env.step(pickMasked(frame.mask, rand));
        frame = s.observation.discrete!;
        if (s.terminated || s.truncated) break;
      }
      void r;
      r = env.reset({ seed, options: { actions: 'discrete' } });
    }
  });

  it('property: random masked policies only take valid steps, observations stay in bounds', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 12 }), (seed, T, K) => {
        const env = new Env();
        const r = env.reset({ seed: (seed % 4) + 1, options: { actions: 'discrete', task_slots: T, market_slots: K, admissible_commands: true } });
        const rand = rng(seed);
        let { obs, mask } = r.observation.discrete!;
        expectFrameShape(env, obs, mask);
        for (let i = 0; i < 30; i++) {
          const admissible = r.info.admissible_commands;
          expect(admissible).toBeDefined();
          const a = pickMasked(mask, rand);
          const fallback = fallbackResume(env, a);
          const s = env.step(a);
          if (!fallback) expect(s.observation.ok, s.observation.text).toBe(true);
          expect(s.info.admissible_commands).toHaveLength(s.observation.discrete!.mask.filter((m) => m).length);
          ({ obs, mask } = s.observation.discrete!);
          expectFrameShape(env, obs, mask);
          if (s.terminated || s.truncated) break;
        }
      }),
      { numRuns: 12 },
    );
  });

  it('property: the listings a frame keeps give the commands (and the frame) that fresh listings give', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 12 }), (seed, T, K) => {
        const env = new Env();
        let r: ResetResult | StepResult = env.reset({ seed: (seed % 4) + 1, options: { actions: 'discrete', task_slots: T, market_slots: K } });
        const sim = env.simulation as Simulation;
        const spec = env.discreteSpec!;
        const rand = rng(seed);
        for (let i = 0; i < 30; i++) {
          const lists: FrameLists = { market: [], open: [] };
          const kept = discreteFrame(sim, spec, lists);
          expect(kept).toEqual(discreteFrame(sim, spec));
          expect(kept).toEqual(r.observation.discrete);
          for (let a = 0; a < spec.n_actions; a++) expect(discreteCommand(sim, spec, kept.mask, a, lists)).toEqual(discreteCommand(sim, spec, kept.mask, a));
          expect(admissibleCommands(sim, spec, kept.mask, lists)).toEqual(admissibleCommands(sim, spec, kept.mask));
          r = env.step(pickMasked(kept.mask, rand));
          if (over(r)) break;
        }
      }),
      { numRuns: 12 },
    );
  });

  it('admissible_commands in text mode: each command is accepted', () => {
    const env = new Env();
    const r = env.reset({ seed: 5, options: { admissible_commands: true } });
    expect(r.observation.discrete).toBeUndefined();
    const cmds = r.info.admissible_commands!;
    expect(cmds.length).toBe(10);
    expect(cmds[0]).toMatch(/^task accept --task-id /);
    const s = env.step(cmds[0] as string);
    expect(s.observation.ok).toBe(true);
    expect(s.info.admissible_commands!.some((c) => c.startsWith('task assign --task-id '))).toBe(true);
  });
});

describe('Discrete frame: nothing hidden leaks', () => {
  it('skill rates, client loyalty and the event queue do not change the frame', () => {
    const env = new Env();
    const r = env.reset({ seed: 4, options: { actions: 'discrete' } });
    const spec = r.info.discrete_spec!;
    const rand = rng(4);
    let mask = r.observation.discrete!.mask;
    for (let i = 0; i < 80; i++) {
      if (i % 10 === 0) {
        const sim = env.simulation as Simulation;
        const snap = JSON.parse(JSON.stringify(sim.snapshot()));
        for (const e of snap.state.employees) for (const d of Object.keys(e.rates)) e.rates[d] = '9.1234';
        for (const c of snap.state.clients) c.loyalty = -c.loyalty - 0.5;
        for (const ev of snap.state.events) if (ev.type === 'task_completed') ev.at += 1;
        const changed = Simulation.restore(snap);
        expect(discreteFrame(changed, spec)).toEqual(discreteFrame(sim, spec));
        expect(discreteSpec(changed, { market_slots: spec.market_slots, task_slots: spec.task_slots })).toEqual(spec);
      }
      const s = env.step(pickMasked(mask, rand));
      mask = s.observation.discrete!.mask;
      if (s.terminated || s.truncated) break;
    }
  });
});

describe('Discrete frame: snapshots', () => {
  it('restore continues the same frame and mode', () => {
    const env = new Env();
    env.reset({ seed: 2, options: { actions: 'discrete', task_slots: 2, market_slots: 5 } });
    env.step(1);
    const snap = env.snapshot();
    expect(snap.actions).toBe('discrete');
    expect(snap.discrete).toEqual({ market_slots: 5, task_slots: 2 });
    const other = new Env();
    const rr = other.restore(JSON.parse(JSON.stringify(snap)));
    expect(rr.info.discrete_spec!.n_actions).toBe(1 + 5 + 2 * 11);
    const a = env.step(rr.observation.discrete!.mask.indexOf(true));
    const b = other.step(rr.observation.discrete!.mask.indexOf(true));
    expect(b).toEqual(a);
    expect(() => new Env().restore({ ...snap, actions: 'nope' as never })).toThrow(RangeError);
    expect(() => new Env().restore({ ...snap, discrete: { market_slots: 0, task_slots: 1 } })).toThrow(RangeError);
  });

  it("an employee name that is not a plain word (a restored snapshot's) is assigned as masked in, its line quoted", () => {
    const env = new Env();
    env.reset({ seed: 2, options: { actions: 'discrete', task_slots: 1, market_slots: 1 } });
    env.step(1); // accept[0]: task slot 0 holds it
    const snap = env.snapshot();
    snap.sim.state.employees[0]!.name = "Ann O'Neil";
    const other = new Env();
    const rr = other.restore(snap);
    const E = rr.info.discrete_spec!.employees.length;
    const assign0 = 1 + 1 + 3; // task[0].assign[0]
    expect(rr.info.discrete_spec!.action_names[assign0]).toBe('task[0].assign[0]');
    expect(rr.observation.discrete!.mask[assign0]).toBe(true);
    const r = other.step(assign0);
    expect(r.info.action_text).toMatch(/^task assign --task-id \S+ --employees 'Ann O'"'"'Neil'$/);
    expect([r.observation.ok, r.observation.exit_code]).toEqual([true, 0]);
    expect(r.observation.discrete!.mask[assign0]).toBe(false); // assigned now
    expect(E).toBeGreaterThan(1);
  });
});

describe('Discrete greedy reproduces the golden greedy trajectories', () => {
  const DIR = 'test/fixtures/parity/trajectories';
  const STATEFUL = new Set(['task accept', 'task assign', 'task dispatch', 'sim resume', 'task cancel']);
  const files = readdirSync(DIR).filter((f) => f.includes('-greedy-')).sort();
  it('has greedy goldens', () => expect(files.length).toBeGreaterThanOrEqual(3));
  for (const f of files) {
    it(f, () => {
      for (const ep of readGoldenFile(`${DIR}/${f}`)) {
        const expected = ep.steps.filter((s) => STATEFUL.has(s.cmd.split(' ').slice(0, 2).join(' '))).map((s) => ({ cmd: s.cmd, exit: s.exit }));
        const env = new Env();
        const r = env.reset({ seed: ep.seed, preset: ep.preset, options: { actions: 'discrete', start_date: '2025-01-01', company_name: 'BenchCo', horizon_years: 1 } });
        const policy = new DiscreteGreedy(r.info.discrete_spec!);
        let { obs, mask } = r.observation.discrete!;
        const got: { cmd: string; exit: number }[] = [];
        for (let i = 0; i < expected.length + 5; i++) {
          const s = env.step(policy.act(obs, mask));
          got.push({ cmd: s.info.action_text!, exit: s.observation.exit_code });
          ({ obs, mask } = s.observation.discrete!);
          if (s.terminated || s.truncated) break;
        }
        expect(got).toEqual(expected);
        const last = ep.steps.find((s) => s.cmd === 'company status')?.out as { funds_cents: number } | undefined;
        expect(env.simulation!.state.fundsCents).toBe(last!.funds_cents);
      }
    });
  }
});

describe('episodes end by default (the stall rule)', () => {
  it('steps that do not advance time truncate after stall_steps; time advancing resets the count', () => {
    const env = new Env();
    env.reset({ seed: 1, options: { stall_steps: 3 } });
    expect(env.step('company status').truncated).toBe(false);
    expect(env.step('sim resume').truncated).toBe(false); // fails: no active task, time stands still
    const last = env.step('market browse');
    expect(last.truncated).toBe(true);
    expect(last.terminated).toBe(false);
    expect(last.info.terminal_reason).toBe('stall');
    expect(() => env.step('company status')).toThrow(EnvUsageError);
  });

  it('the default (200) ends a degenerate policy that never advances time', () => {
    for (const actions of ['text', 'discrete'] as const) {
      const env = new Env();
      const r = env.reset({ seed: 1, options: { actions, task_slots: 256 } });
      let mask = r.observation.discrete?.mask;
      let n = 0;
      for (;;) {
        // Text: browse forever. Discrete: accept the best task forever (never dispatch, so time stands still).
        expect(mask?.[1] ?? true).toBe(true);
        const s = env.step(actions === 'text' ? 'market browse' : 1);
        n++;
        mask = s.observation.discrete?.mask;
        if (s.terminated || s.truncated) {
          expect(s.truncated).toBe(true);
          expect(s.info.terminal_reason).toBe('stall');
          break;
        }
      }
      expect(n).toBe(200);
    }
  });

  it('stall_steps 0 disables it; the count survives snapshots', () => {
    const env = new Env();
    env.reset({ seed: 1, options: { stall_steps: 0 } });
    for (let i = 0; i < 250; i++) expect(env.step('company status').truncated).toBe(false);
    env.reset({ seed: 1, options: { stall_steps: 4 } });
    env.step('company status');
    env.step('company status');
    const snap = env.snapshot();
    expect(snap.stalled).toBe(2);
    const other = new Env();
    other.restore(JSON.parse(JSON.stringify(snap)));
    expect(other.step('company status').truncated).toBe(false);
    expect(other.step('company status').info.terminal_reason).toBe('stall');
    expect(() => new Env().reset({ seed: 1, options: { stall_steps: -1 } })).toThrow(RangeError);
  });
});

describe('Discrete frames are pinned', () => {
  // sha256 of every frame (JSON of {obs, mask}) along four episodes, computed with the build of main at 4326289,
  // before the frame was computed with listings shared and names built once: any change of a value or of the
  // mask shows here.
  const PINNED: Record<string, { steps: number; sha256: string }> = {
    'default:1:random': { steps: 58, sha256: 'a73849826ad8d03ef3094a4cf949d55b38503e4ef6ecc5ba420c8adfa779e58d' },
    'corrected:2:random': { steps: 408, sha256: '1360ae3807c538ba502c961b4bcc9a56bedf68c62f1d9b852b9a3c8e18bc8492' },
    'default:2:greedy': { steps: 215, sha256: '62970e8c59f8729de3911685b8f75d4666791c85a527c7ade4bc2e60112e2feb' },
    'default:5:greedy': { steps: 227, sha256: 'a76875dda86d1ca49f4e8f6e0bb08882be7600f0127278321d0e4bf17596d3b6' },
  };
  it.each(Object.keys(PINNED))('%s', (key) => {
    const [preset, s, policy] = key.split(':') as [string, string, string];
    const seed = Number(s);
    const env = new Env();
    let r: ResetResult | StepResult = env.reset({ seed, preset, options: { actions: 'discrete', market_slots: 6, task_slots: 3 } });
    const greedy = new DiscreteGreedy(r.info.discrete_spec!);
    const h = createHash('sha256');
    let x = seed;
    let steps = 0;
    for (; steps < 3000 && !over(r); steps++) {
      const f = r.observation.discrete!;
      h.update(JSON.stringify(f));
      const ok = f.mask.flatMap((m, i) => (m ? [i] : []));
      x = (x * 1103515245 + 12345) % 2147483648;
      r = env.step(policy === 'greedy' ? greedy.act(f.obs, f.mask) : (ok[x % ok.length] as number));
    }
    h.update(JSON.stringify(r.observation.discrete));
    expect({ steps, sha256: h.digest('hex') }).toEqual(PINNED[key]);
  });
});

describe('stepWithoutStatus', () => {
  it('is step without the status block, in text and Discrete mode (the same state after)', () => {
    for (const options of [{ actions: 'discrete' as const }, { admissible_commands: true }, { text: false }]) {
      const a = new Env();
      const b = new Env();
      let ra = a.reset({ seed: 3, options });
      b.reset({ seed: 3, options });
      const rand = rng(7);
      for (let i = 0; i < 60; i++) {
        const action = options.actions === 'discrete' ? pickMasked(ra.observation.discrete!.mask, rand) : (ra.info.admissible_commands?.[0] ?? 'sim resume');
        const full = a.step(action);
        const lean = b.stepWithoutStatus(action);
        const { status, ...rest } = full.observation;
        expect(status).toBeDefined();
        expect(JSON.stringify({ ...full, observation: rest })).toBe(JSON.stringify(lean));
        ra = full;
        if (full.terminated || full.truncated) break;
      }
      expect(JSON.stringify(a.snapshot())).toBe(JSON.stringify(b.snapshot()));
    }
  });
});
