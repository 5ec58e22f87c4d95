/**
 * `commandLine` renders a parsed command (a command of the table and its options) as a line that `parseLine` parses
 * back to exactly that command and those options, whatever the values: any text (spaces, quotes, backslashes,
 * newlines, a leading `-`, `--help`, empty), any safe integer, any domain. The Discrete actions' lines are rendered
 * this way from the command they run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { COMMANDS, commandLine, DOMAINS, type CommandSpec, type ParsedOptions } from '../../src/sim/index.js';
import { parseLine } from '../../src/sim/simulation.js';

/** A command of the table with every required option and a random subset of the others, random values. */
const command: fc.Arbitrary<{ spec: CommandSpec; opts: ParsedOptions }> = fc.constantFrom(...COMMANDS).chain((spec) =>
  fc
    .tuple(
      ...spec.options.map((o) => {
        const value: fc.Arbitrary<string | number> =
          o.type === 'int'
            ? fc.oneof(fc.integer(), fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER))
            : o.type === 'domain'
              ? fc.constantFrom(...DOMAINS)
              : fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('--help', '--', '-', '', ' ', "'", '"', '\\', 'a b', "it's", 'yc-bench', '--task-id=x', '\n'));
        return o.required ? value : fc.option(value, { nil: undefined });
      }),
    )
    .map((values) => {
      const opts: ParsedOptions = {};
      spec.options.forEach((o, i) => {
        if (values[i] !== undefined) opts[o.dest] = values[i];
      });
      return { spec, opts };
    }),
);

describe('commandLine', () => {
  it('property: parseLine(commandLine(spec, opts)) is exactly spec and opts', () => {
    fc.assert(
      fc.property(command, ({ spec, opts }) => {
        const line = commandLine(spec, opts);
        const parsed = parseLine(line);
        expect(parsed, line).toEqual({ kind: 'command', spec, opts });
        expect(parsed.kind === 'command' && parsed.spec, line).toBe(spec);
      }),
      { numRuns: 3000 },
    );
  });

  it('writes plain words as they are, options in the table order', () => {
    const assign = COMMANDS.find((c) => c.group === 'task' && c.name === 'assign')!;
    expect(commandLine(assign, { employees: 'Emp_1,Emp_2', task_id: 'Task-7' })).toBe('task assign --task-id Task-7 --employees Emp_1,Emp_2');
    expect(commandLine(assign, { task_id: 'a b', employees: "it's" })).toBe(`task assign --task-id 'a b' --employees 'it'"'"'s'`);
  });
});
