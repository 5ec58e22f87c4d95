/**
 * Tool schemas for LLM agents (OpenAI function-calling format): the reference's single `run_command` tool, and
 * one tool per command verb generated from the command table (`task_accept`, `market_browse`, ...), with
 * `toolCallToCommand` turning either form into the same command line.
 */
import { COMMANDS, type CommandSpec, DOMAINS, type OptionSpec } from '../sim/index.js';

/** JSON Schema of one tool parameter. */
export interface ParameterSchema {
  type: 'string' | 'integer';
  description: string;
  enum?: string[];
}

/** One function tool in OpenAI's `tools` format. */
export interface FunctionTool {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: {
      type: 'object';
      properties: Record<string, ParameterSchema>;
      required: string[];
      additionalProperties?: false;
    };
  };
}

/** The reference's only tool (`agent/runtime/litellm_runtime.py` `_RUN_COMMAND_TOOL`), sent with `tool_choice: "auto"`. */
export const RUN_COMMAND_TOOL: FunctionTool = {
  type: 'function',
  function: {
    name: 'run_command',
    description: 'Execute one benchmark CLI command inside the sandbox and return structured execution output.',
    parameters: {
      type: 'object',
      properties: {
        command: {
          type: 'string',
          description: 'The full yc-bench CLI command to execute.',
        },
      },
      required: ['command'],
    },
  },
};

/** Tool name of a command verb: `task assign-all` -> `task_assign_all`. */
export function verbToolName(spec: Pick<CommandSpec, 'group' | 'name'>): string {
  return `${spec.group}_${spec.name}`.replace(/-/g, '_');
}

function parameter(o: OptionSpec): ParameterSchema {
  if (o.type === 'int') return { type: 'integer', description: o.help };
  if (o.type === 'domain') return { type: 'string', description: o.help, enum: [...DOMAINS] };
  return { type: 'string', description: o.help };
}

/** The per-verb tool of one command: parameters named after the options' destinations (`task_id`, `from_date`). */
export function verbTool(spec: CommandSpec): FunctionTool {
  const properties: Record<string, ParameterSchema> = {};
  for (const o of spec.options) properties[o.dest] = parameter(o);
  return {
    type: 'function',
    function: {
      name: verbToolName(spec),
      description: spec.help,
      parameters: { type: 'object', properties, required: spec.options.filter((o) => o.required).map((o) => o.dest), additionalProperties: false },
    },
  };
}

/** All tool schemas: the reference's `run_command` list and one tool per verb (in command-table order). */
export function toolSchemas(): { reference: FunctionTool[]; verbs: FunctionTool[] } {
  return { reference: [structuredClone(RUN_COMMAND_TOOL)], verbs: COMMANDS.map(verbTool) };
}

const VERB_BY_TOOL: ReadonlyMap<string, CommandSpec> = new Map(COMMANDS.map((c) => [verbToolName(c), c]));

/** The command of a per-verb tool name, or undefined. */
export function verbOfTool(name: string): CommandSpec | undefined {
  return VERB_BY_TOOL.get(name);
}

/** Python's `shlex.quote`: the argument unchanged when it is shell-safe, else single-quoted. */
export function shellQuote(s: string): string {
  if (s === '') return "''";
  if (!/[^\w@%+=:,./-]/.test(s)) return s;
  return `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** Thrown by `toolCallToCommand` for an unknown tool or arguments that are not a JSON object. */
export class ToolCallError extends Error {}

function argText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(argText).join(',');
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

/**
 * The command line of a tool call. `run_command` returns its `command` argument unchanged; a verb tool gives
 * `yc-bench GROUP NAME --option value ...` with options in table order, values quoted so that `shlex.split`
 * returns them unchanged (arrays are joined with commas, so `employees: ["Emp_1","Emp_4"]` works). Unknown
 * argument names become `--name-with-dashes` options, which the command then rejects as the CLI would.
 */
export function toolCallToCommand(name: string, args: string | Record<string, unknown>): string {
  let a: unknown = args;
  if (typeof args === 'string') {
    try {
      a = JSON.parse(args);
    } catch {
      throw new ToolCallError(`arguments of ${name} are not valid JSON`);
    }
  }
  if (a === null || typeof a !== 'object' || Array.isArray(a)) throw new ToolCallError(`arguments of ${name} must be a JSON object`);
  const obj = a as Record<string, unknown>;
  if (name === RUN_COMMAND_TOOL.function.name) {
    const c = obj['command'];
    if (typeof c !== 'string') throw new ToolCallError('run_command needs a string "command" argument');
    return c;
  }
  const spec = VERB_BY_TOOL.get(name);
  if (!spec) throw new ToolCallError(`unknown tool: ${name}`);
  const parts = ['yc-bench', spec.group, spec.name];
  const known = new Set<string>();
  for (const o of spec.options) {
    known.add(o.dest);
    const v = obj[o.dest];
    if (v === undefined || v === null) continue;
    parts.push(o.flag, shellQuote(argText(v)));
  }
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (known.has(k) || v === undefined || v === null) continue;
    parts.push(shellQuote(`--${k.replace(/_/g, '-')}`), shellQuote(argText(v)));
  }
  return parts.join(' ');
}

/** The text of `schema/tools.json` (generated by `scripts/gen-tools.mjs`; a test keeps it up to date). */
export function toolsJsonText(): string {
  const doc = {
    $comment:
      'Generated from src/turns/tools.ts by scripts/gen-tools.mjs; do not edit. "reference" is the tool list the reference harness sends (with tool_choice "auto"); "verbs" has one tool per yc-bench command.',
    ...toolSchemas(),
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}
