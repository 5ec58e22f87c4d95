/**
 * The Discrete frame's fast path (`discreteFrame`: written by index, a listed market task's features computed once
 * per task object) equals the straightforward frame (`discreteFrameReference`: every feature through `features`'
 * writer, the mask with `some`) bit for bit, observation and mask, after every step of random histories: Discrete
 * actions, text commands (which also open more tasks than there are task slots), snapshots and restores, over
 * several presets, seeds and slot counts (more market slots than listed tasks included).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Env, type ResetResult, type StepResult } from '../../src/env/env.js';
import { buildDiscreteSpec, discreteFrame, discreteFrameReference, discreteSpec, type DiscreteFrame, type DiscreteSpec } from '../../src/env/discrete.js';
import { browsable, Simulation } from '../../src/sim/index.js';
import { D } from '../../src/sim/py/decimal.js';
import { DiscreteGreedy } from '../../baselines/discrete-greedy.js';

/** Whether the episode of `r` is over (a reset's result never is). */
const over = (r: ResetResult | StepResult): boolean => 'terminated' in r && (r.terminated || r.truncated);

/** The observation's doubles as bytes (so -0 and 0, or any last-bit difference, differ) and the mask. */
function bits(f: DiscreteFrame): { obs: string; mask: boolean[] } {
  return { obs: Buffer.from(Float64Array.from(f.obs).buffer).toString('hex'), mask: [...f.mask] };
}

function expectSame(sim: Simulation, spec: DiscreteSpec, where: string): DiscreteFrame {
  const fast = discreteFrame(sim, spec);
  const ref = discreteFrameReference(sim, spec);
  expect(fast.obs, where).toHaveLength(spec.obs_size);
  expect(bits(fast), where).toEqual(bits(ref));
  return fast;
}

const PRESETS = ['default', 'corrected', 'hard', 'easy', 'multi', 'tutorial'];

const step = fc.oneof(
  { weight: 6, arbitrary: fc.nat().map((n) => ({ kind: 'action' as const, n })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'text' as const, c: 'sim resume' }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 80 }).map((n) => ({ kind: 'text' as const, c: `task accept --task-id Task-${n}` })) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 80 }), fc.integer({ min: 1, max: 8 })).map(([n, e]) => ({ kind: 'text' as const, c: `task assign --task-id Task-${n} --employees Emp_${e}` })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 80 }).map((n) => ({ kind: 'text' as const, c: `task dispatch --task-id Task-${n}` })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 80 }).map((n) => ({ kind: 'text' as const, c: `task cancel --task-id Task-${n}` })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restore' as const }) },
);

describe('discreteFrame: the fast path equals the reference frame', () => {
  it('property: after every step of random histories (presets, seeds, slot counts, text commands, restores)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PRESETS),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.oneof(fc.integer({ min: 1, max: 12 }), fc.constant(256)),
        fc.array(step, { maxLength: 80 }),
        (preset, seed, T, K, steps) => {
          let env = new Env();
          let r: ResetResult | StepResult = env.reset({ seed, preset, options: { actions: 'discrete', task_slots: T, market_slots: K, text: false } });
          const spec = env.discreteSpec as DiscreteSpec;
          expect(bits(r.observation.discrete as DiscreteFrame)).toEqual(bits(discreteFrameReference(env.simulation as Simulation, spec)));
          for (const [i, s] of steps.entries()) {
            const where = `${preset} seed ${seed} T ${T} K ${K} step ${i}`;
            if (over(r)) break;
            if (s.kind === 'action') {
              const mask = (r.observation.discrete as DiscreteFrame).mask;
              const valid = mask.flatMap((m, a) => (m ? [a] : []));
              r = env.step(valid[s.n % valid.length] as number);
              expect(bits(r.observation.discrete as DiscreteFrame), where).toEqual(bits(discreteFrameReference(env.simulation as Simulation, spec)));
            } else if (s.kind === 'text') {
              (env.simulation as Simulation).execute(s.c);
              expectSame(env.simulation as Simulation, spec, `${where}: ${s.c}`);
            } else {
              const snap = env.snapshot();
              env = new Env();
              r = env.restore(snap);
              expectSame(env.simulation as Simulation, spec, `${where}: restore`);
            }
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it('at every step of DiscreteGreedy episodes (task completions: trust, prestige and funds change)', () => {
    for (const [preset, seed] of [['default', 1], ['corrected', 2], ['hard', 3]] as const) {
      const env = new Env();
      let r: ResetResult | StepResult = env.reset({ seed, preset, options: { actions: 'discrete', text: false, max_steps: 600 } });
      const spec = env.discreteSpec as DiscreteSpec;
      const g = new DiscreteGreedy(spec);
      for (let i = 0; !over(r); i++) {
        const f = r.observation.discrete as DiscreteFrame;
        expect(bits(f), `${preset} seed ${seed} step ${i}`).toEqual(bits(discreteFrameReference(env.simulation as Simulation, spec)));
        r = env.step(g.act(f.obs, f.mask));
      }
    }
  });

  it('masks in resume alone when no action is valid (an empty market, no open task)', () => {
    const env = new Env();
    env.reset({ seed: 1, options: { actions: 'discrete', text: false } });
    const spec = env.discreteSpec as DiscreteSpec;
    const snap = JSON.parse(JSON.stringify((env.simulation as Simulation).snapshot()));
    for (const t of snap.state.tasks) if (t.status === 'market') t.status = 'cancelled';
    const sim = Simulation.restore(snap);
    expect(browsable(sim)).toHaveLength(0);
    const f = expectSame(sim, spec, 'empty market');
    expect(f.mask.flatMap((m, a) => (m ? [a] : []))).toEqual([0]);
  });

  it('is recomputed when a trust or the prestige changes in place, or a listed task whose requirements changed moves to another slot', () => {
    const env = new Env();
    env.reset({ seed: 3, options: { actions: 'discrete', market_slots: 12, text: false } });
    const sim = env.simulation as Simulation;
    const spec = env.discreteSpec as DiscreteSpec;
    expectSame(sim, spec, 'start');
    const st = sim.state as { clients: { trust: unknown }[]; prestige: Record<string, unknown> };
    st.clients.forEach((c, i) => (c.trust = D(i + 1)));
    expectSame(sim, spec, 'trust');
    for (const d of Object.keys(st.prestige)) st.prestige[d] = D(4);
    expectSame(sim, spec, 'prestige');
    // A listed task's requirement replaced in place (as `task accept` does before the task leaves the market), the
    // task then listed in another slot: its entry is checked, not reused.
    const listed = browsable(sim)[1] as { reqs: { required: unknown }[] };
    listed.reqs[0]!.required = D(12345);
    sim.execute(`task accept --task-id ${sim.taskRef((browsable(sim)[0] as { id: number }).id)}`);
    expect(browsable(sim)[0]).toBe(listed);
    expectSame(sim, spec, 'requirement');
  });

  it('falls back to the reference frame for a spec of another layout', () => {
    const env = new Env();
    env.reset({ seed: 2, options: { actions: 'discrete', text: false } });
    const sim = env.simulation as Simulation;
    const spec = env.discreteSpec as DiscreteSpec;
    const other = { ...spec, employees: spec.employees.slice(1) };
    expect(bits(discreteFrame(sim, other))).toEqual(bits(discreteFrameReference(sim, other)));
  });
});

describe('discreteSpec: one shared spec per sizes, employees and clients', () => {
  it('equals the spec built afresh, for every preset and some sizes; shared and frozen', () => {
    for (const preset of PRESETS) {
      for (const [K, T] of [[10, 4], [1, 1], [256, 7]] as const) {
        const a = new Env();
        a.reset({ seed: 1, preset, options: { actions: 'discrete', market_slots: K, task_slots: T } });
        const b = new Env();
        b.reset({ seed: 7, preset, options: { actions: 'discrete', market_slots: K, task_slots: T } });
        const spec = a.discreteSpec as DiscreteSpec;
        expect(spec).toEqual(buildDiscreteSpec(a.simulation as Simulation, { market_slots: K, task_slots: T }));
        expect(b.discreteSpec).toBe(spec);
        expect(Object.isFrozen(spec) && Object.isFrozen(spec.feature_names) && Object.isFrozen(spec.obs_high)).toBe(true);
      }
    }
  });

  it('is another spec when an employee or a client has another name', () => {
    const env = new Env();
    env.reset({ seed: 1, options: { actions: 'discrete' } });
    const sim = env.simulation as Simulation;
    const spec = discreteSpec(sim);
    for (const edit of ['employee', 'client'] as const) {
      const snap = JSON.parse(JSON.stringify(sim.snapshot()));
      if (edit === 'employee') snap.state.employees[2].name = 'Emp_Renamed';
      else snap.state.clients[0].name = 'Zeta Renamed';
      const other = Simulation.restore(snap);
      const s2 = discreteSpec(other);
      expect(s2).not.toEqual(spec);
      expect(s2).toEqual(buildDiscreteSpec(other));
    }
  });
});
