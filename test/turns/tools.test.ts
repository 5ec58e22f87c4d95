/** Tool schemas: one per verb from the command table, the reference's run_command, and the call -> command round trip. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pyShlexSplit } from '../../src/turns/executor.js';
import { RUN_COMMAND_TOOL, shellQuote, toolCallToCommand, ToolCallError, toolSchemas, toolsJsonText, verbToolName } from '../../src/turns/tools.js';
import { TurnEnv } from '../../src/turns/turns.js';
import { COMMANDS, type CommandSpec } from '../../src/sim/commands/spec.js';
import { DOMAINS } from '../../src/sim/model/types.js';

const AWKWARD = [
  'plain',
  'two words',
  `it's a "quoted" value`,
  'back\\slash $HOME `cmd` ; | & > <',
  '',
  'café → 😀 漢字',
  '--looks-like-a-flag',
  'line one\nline two\ttab',
  "'''",
  '"',
];

function sampleArgs(spec: CommandSpec, k: number): Record<string, unknown> {
  const a: Record<string, unknown> = {};
  spec.options.forEach((o, i) => {
    if (o.type === 'int') a[o.dest] = 7 + i;
    else if (o.type === 'domain') a[o.dest] = DOMAINS[(k + i) % DOMAINS.length];
    else a[o.dest] = AWKWARD[(k + i) % AWKWARD.length];
  });
  return a;
}

describe('tool schemas', () => {
  const { reference, verbs } = toolSchemas();

  it('the reference list is exactly run_command', () => {
    expect(reference).toEqual([RUN_COMMAND_TOOL]);
  });

  it('one tool per verb, parameters from the options', () => {
    expect(verbs.map((t) => t.function.name)).toEqual(COMMANDS.map(verbToolName));
    expect(new Set(verbs.map((t) => t.function.name)).size).toBe(COMMANDS.length);
    for (const [i, spec] of COMMANDS.entries()) {
      const f = verbs[i]?.function;
      expect(f?.description).toBe(spec.help);
      expect(Object.keys(f?.parameters.properties ?? {})).toEqual(spec.options.map((o) => o.dest));
      expect(f?.parameters.required).toEqual(spec.options.filter((o) => o.required).map((o) => o.dest));
      for (const o of spec.options) {
        const p = f?.parameters.properties[o.dest];
        expect(p?.type).toBe(o.type === 'int' ? 'integer' : 'string');
        expect(p?.description).toBe(o.help);
        if (o.type === 'domain') expect(p?.enum).toEqual([...DOMAINS]);
      }
    }
    expect(verbs.find((t) => t.function.name === 'task_assign_all')).toBeDefined();
  });

  it('schema/tools.json is up to date (regenerate: npm run build && node scripts/gen-tools.mjs)', () => {
    expect(readFileSync(new URL('../../schema/tools.json', import.meta.url), 'utf8')).toBe(toolsJsonText());
  });
});

describe('tool call -> command line', () => {
  it('quotes like Python shlex.quote', () => {
    expect(shellQuote('Task-42')).toBe('Task-42');
    expect(shellQuote('Emp_1,Emp_4')).toBe('Emp_1,Emp_4');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'"'"'s'`);
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote('café')).toBe("'café'");
  });

  for (const [k, spec] of COMMANDS.entries()) {
    it(`${spec.group} ${spec.name}: shlex.split gives back every argument`, () => {
      for (let shift = 0; shift < AWKWARD.length; shift++) {
        const args = sampleArgs(spec, k + shift);
        const line = toolCallToCommand(verbToolName(spec), JSON.stringify(args));
        const want = ['yc-bench', spec.group, spec.name];
        for (const o of spec.options) want.push(o.flag, String(args[o.dest]));
        expect(pyShlexSplit(line)).toEqual(want);
      }
    });
  }

  it('both tool forms reach the same command and the same result', () => {
    const a = new TurnEnv();
    const b = new TurnEnv();
    a.reset({ seed: 2 });
    b.reset({ seed: 2 });
    const calls: [string, Record<string, unknown>][] = [
      ['market_browse', { limit: 2, domain: 'research' }],
      ['task_accept', { task_id: 'Task-10' }],
      ['task_assign', { task_id: 'Task-10', employees: ['Emp_1', 'Emp_2'] }],
      ['scratchpad_write', { content: `note: it's "fine" \\ ok` }],
      ['scratchpad_append', { content: 'second line' }],
      ['task_inspect', { task_id: 'Task-10' }],
      ['task_list', {}],
      ['task_accept', {}],
      ['market_browse', { limit: 'many' }],
      ['market_browse', { bogus_option: 1 }],
    ];
    calls.forEach(([name, args], i) => {
      const ra = a.step({ tool_calls: [{ id: `v${i}`, name, arguments: JSON.stringify(args) }] });
      const cmd = toolCallToCommand(name, args);
      const rb = b.step({ tool_calls: [{ id: `v${i}`, name: 'run_command', arguments: JSON.stringify({ command: cmd }) }] });
      expect(ra.toolResults).toEqual(rb.toolResults);
      expect(ra.toolResults[0]?.command).toBe(cmd);
    });
    expect(a.simulation?.state.scratchpad).toBe(`note: it's "fine" \\ ok\nsecond line`);
    expect(b.step(['yc-bench task list']).toolResults).toEqual(a.step(['yc-bench task list']).toolResults);
  });

  it('run_command passes its command through; bad calls are reported', () => {
    expect(toolCallToCommand('run_command', { command: 'yc-bench sim resume' })).toBe('yc-bench sim resume');
    expect(toolCallToCommand('task_list', '{"status": "active"}')).toBe('yc-bench task list --status active');
    expect(() => toolCallToCommand('nope', {})).toThrow(ToolCallError);
    expect(() => toolCallToCommand('task_list', '[1]')).toThrow(ToolCallError);
    expect(() => toolCallToCommand('task_list', '{oops')).toThrow(ToolCallError);
    // In a turn, a malformed verb call becomes an error result; any other tool name runs args.command as the reference does.
    const env = new TurnEnv();
    env.reset({ seed: 1 });
    const r = env.step({ tool_calls: [
      { id: 'a', name: 'task_list', arguments: '{oops' },
      { id: 'b', name: 'anything', arguments: '{"command": "yc-bench task list"}' },
      { id: 'c', name: 'run_command', arguments: 'not json' },
    ] });
    expect(r.toolResults.map((t) => [t.exit_code, t.stderr])).toEqual([
      [2, 'arguments of task_list are not valid JSON'],
      [0, ''],
      [2, 'command must be a non-empty string'],
    ]);
  });
});
