/**
 * A Discrete action runs as the command it was built as, parsed (`discreteCommand`'s `spec` and `opts`, through
 * `Simulation.executeParsed`), never as a line rendered and parsed back. Over whole random episodes (presets, seeds,
 * slot counts, random valid actions and some masked-out ones): every action's command line is the one the action
 * table documents, `parseLine` of that line gives exactly the built `spec` and `opts`, the env never parses a line
 * for a Discrete action, and an env stepping the same actions through `execute(line)` (the render-then-parse path)
 * gives the same step results, byte for byte, and the same snapshot.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Env, type ResetResult, type StepResult } from '../../src/env/env.js';
import { discreteCommand, openTasks, type DiscreteFrame, type DiscreteSpec } from '../../src/env/discrete.js';
import { loadPreset } from '../../src/config/load.js';
import { browsable, commandSpec, Simulation } from '../../src/sim/index.js';
import { parseLine } from '../../src/sim/simulation.js';

/** Whether the episode of `r` is over (a reset's result never is). */
const over = (r: ResetResult | StepResult): boolean => 'terminated' in r && (r.terminated || r.truncated);

/** The command line of action `a` as the action table in src/env/discrete.ts documents it (an independent oracle). */
function documented(sim: Simulation, spec: DiscreteSpec, a: number): string {
  if (a === 0) return 'sim resume';
  const K = spec.market_slots;
  if (a <= K) return `task accept --task-id ${sim.taskRef(browsable(sim)[a - 1]!.id)}`;
  const E = spec.employees.length;
  const j = Math.floor((a - 1 - K) / (3 + E));
  const op = (a - 1 - K) % (3 + E);
  const task = sim.taskRef(openTasks(sim)[j]!.id);
  const names = sim.state.employees.map((e) => e.name);
  if (op === 0) return `task assign --task-id ${task} --employees ${names.join(',')}`;
  if (op === 1) return `task dispatch --task-id ${task}`;
  if (op === 2) return `task cancel --task-id ${task} --reason discrete`;
  return `task assign --task-id ${task} --employees ${names[op - 3]}`;
}

/** Make `sim` run every built command through `execute(line)`: the render-then-parse path. */
function viaText(sim: Simulation): void {
  sim.executeParsed = (_spec, _opts, line) => sim.execute(line);
}

/** Count the lines `sim` parses (`execute` calls). */
function countLines(sim: Simulation): { n: number } {
  const count = { n: 0 };
  const execute = sim.execute.bind(sim);
  sim.execute = (line: string) => {
    count.n++;
    return execute(line);
  };
  return count;
}

// `corrected` enables `fixes.task_cancel` (the cancel actions are masked in only there).
const PRESETS = ['default', 'corrected', 'hard', 'tutorial', 'multi'];

/** The kind of action `a` (its action name without the slot numbers: `accept`, `task.assign`, ...). */
const kindOf = (spec: DiscreteSpec, a: number): string => spec.action_names[a]!.replace(/\[\d+\]/g, '');

describe('Discrete actions run as built commands, not rendered and parsed back', () => {
  it('property: the built command is the documented line parsed, and stepping it equals stepping the line (whole episodes)', () => {
    const taken = new Set<string>();
    for (const preset of PRESETS) {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 1000 }),
          fc.integer({ min: 1, max: 6 }),
          fc.integer({ min: 1, max: 12 }),
          fc.boolean(),
          fc.array(fc.tuple(fc.nat(), fc.nat(19)), { minLength: 400, maxLength: 400 }),
          (seed, T, K, admissible, picks) => {
            const options = { actions: 'discrete' as const, task_slots: T, market_slots: K, admissible_commands: admissible, max_steps: 300 };
            const built = new Env();
            const text = new Env();
            let a0: ResetResult | StepResult = built.reset({ seed, preset, options });
            let b0: ResetResult | StepResult = text.reset({ seed, preset, options });
            expect(JSON.stringify(a0)).toBe(JSON.stringify(b0));
            const sim = built.simulation as Simulation;
            const parsedLines = countLines(sim);
            viaText(text.simulation as Simulation);
            const spec = built.discreteSpec as DiscreteSpec;
            let steps = 0;
            for (const [n, masked] of picks) {
              if (over(a0)) break;
              const where = `${preset} seed ${seed} T ${T} K ${K} step ${steps}`;
              const mask = (a0.observation.discrete as DiscreteFrame).mask;
              const valid = mask.flatMap((m, i) => (m ? [i] : []));
              const invalid = mask.flatMap((m, i) => (m ? [] : [i]));
              // One step in 20 a masked-out action (refused by both paths alike), when there is one.
              const a = masked === 0 && invalid.length > 0 ? invalid[n % invalid.length]! : valid[n % valid.length]!;
              const c = discreteCommand(sim, spec, mask, a);
              taken.add(mask[a] ? kindOf(spec, a) : 'masked out');
              if ('command' in c) {
                expect(c.command, where).toBe(documented(sim, spec, a));
                const p = parseLine(c.command);
                expect(p, where).toEqual({ kind: 'command', spec: c.spec, opts: c.opts });
                expect(p.kind === 'command' && p.spec, where).toBe(c.spec);
              } else expect(c.masked, where).toBe(true);
              a0 = built.step(a);
              b0 = text.step(a);
              expect(JSON.stringify(a0), where).toBe(JSON.stringify(b0));
              steps++;
            }
            expect(parsedLines.n).toBe(0);
            expect(JSON.stringify(built.snapshot())).toBe(JSON.stringify(text.snapshot()));
          },
        ),
        { numRuns: 6 },
      );
    }
    // Every kind of action was taken (the runs cover the whole action table).
    expect([...taken].sort()).toEqual(['accept', 'masked out', 'resume', 'task.assign', 'task.assign_all', 'task.cancel', 'task.dispatch']);
  });

  it('executeParsed holds the line to maxCommandChars as execute does, and runs only commands of the table', () => {
    const cfg = loadPreset('default');
    const sim = Simulation.create(cfg, { seed: 1 }, { maxCommandChars: 10, maxScratchpadChars: 100 });
    const resume = commandSpec('sim', 'resume');
    expect(sim.executeParsed(resume, {}, 'sim resume').text).toBe(sim.execute('sim resume').text);
    const long = 'task dispatch --task-id Task-1';
    const viaLine = sim.execute(long);
    const built = sim.executeParsed(commandSpec('task', 'dispatch'), { task_id: 'Task-1' }, long);
    expect(built.exit).toBe(2);
    expect([built.exit, built.text, built.verb]).toEqual([viaLine.exit, viaLine.text, viaLine.verb]);
    expect(() => sim.executeParsed({ ...resume }, {}, 'sim resume')).toThrow(RangeError);
  });
});
