/**
 * `parseLine`, which remembers the parse of a command line, parses every line as splitting it with shlex and
 * `parseArgv` do, the first time and every time after; a remembered parse's options are frozen; long lines are parsed
 * afresh every time.
 */
import fc from 'fast-check';
import { split as shlexSplit } from 'shlex';
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { parseArgv, Simulation } from '../../src/sim/index.js';
import { parseLine } from '../../src/sim/simulation.js';

/** The parse without any memo: shlex's split, the prefix dropped, parseArgv. */
function plain(line: string): unknown {
  let argv: string[];
  try {
    argv = shlexSplit(line);
  } catch (e) {
    return { kind: 'unsplit', message: `Could not parse command: ${(e as Error).message}` };
  }
  if (argv[0] === 'yc-bench') argv = argv.slice(1);
  return parseArgv(argv);
}

const token = fc.oneof(
  fc.constantFrom('yc-bench', 'sim', 'resume', 'market', 'browse', 'task', 'accept', 'assign', 'dispatch', 'list', 'scratchpad', 'write', 'company', 'status'),
  fc.constantFrom('--limit', '--offset', '--task-id', '--employees', '--status', '--content', '--domain', '--help', '--limit=5', '--', '-x'),
  fc.constantFrom('200', '1_000', ' 7', '-3', 'Task-1', 'Emp_1,Emp_2', 'active', 'research', '"a b"', "'q'", 'a\\ b', '"', "'", ''),
  fc.string({ maxLength: 6 }),
);
const line = fc.tuple(fc.array(token, { maxLength: 7 }), fc.constantFrom(' ', '  ', '\t', '\n')).map(([ts, sep]) => ts.join(sep));

describe('parseLine: a command line parsed once', () => {
  it('parses as shlex and parseArgv do, the first time and again', () => {
    fc.assert(
      fc.property(line, (l) => {
        const want = plain(l);
        expect(parseLine(l)).toEqual(want);
        expect(parseLine(l)).toEqual(want);
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps a parse with frozen options; a long line is parsed anew', () => {
    const a = parseLine('market browse --limit 200');
    expect(parseLine('market browse --limit 200')).toBe(a);
    expect(a.kind === 'command' && Object.isFrozen(a.opts)).toBe(true);
    const long = `scratchpad write --content ${'x'.repeat(300)}`;
    const b = parseLine(long);
    expect(b.kind).toBe('command');
    expect(parseLine(long)).not.toBe(b);
    expect(parseLine(long)).toEqual(b);
  });

  it('the same line gives the same outputs in two simulations, whichever ran it first', () => {
    const cfg = loadPreset('default');
    const lines = ['market browse --limit 3', 'task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1', 'task dispatch --task-id Task-1', 'sim resume', 'task list --status active'];
    const a = Simulation.create(cfg, { seed: 5 });
    const b = Simulation.create(cfg, { seed: 5 });
    for (const l of lines) expect(a.execute(l).text).toBe(b.execute(l).text);
  });
});
