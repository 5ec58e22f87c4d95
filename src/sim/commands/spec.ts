/**
 * The agent command table (one entry per `yc-bench GROUP COMMAND`) and a click-compatible option parser.
 * The table is the single source for parsing, `--help` text and the per-verb tool schemas.
 */
import { quote } from 'shlex';
import { DOMAINS } from '../model/types.js';

/** Option value types, as typer declares them. */
export type OptionType = 'text' | 'int' | 'domain';

/** One `--option` of a command. */
export interface OptionSpec {
  readonly flag: string;
  readonly dest: string;
  readonly type: OptionType;
  readonly required: boolean;
  readonly help: string;
  readonly metavar?: string;
}

/** One agent command. */
export interface CommandSpec {
  readonly group: string;
  readonly name: string;
  readonly help: string;
  readonly options: readonly OptionSpec[];
  /** True when the command can change the simulation state. */
  readonly mutates: boolean;
}

const taskId: OptionSpec = { flag: '--task-id', dest: 'task_id', type: 'text', required: true, help: 'Task UUID or title (e.g. Task-42)' };

/** Every command an agent can issue, in the reference's registration order. */
export const COMMANDS: readonly CommandSpec[] = [
  { group: 'sim', name: 'init', help: 'Initialize a new simulation: seed world, create company, schedule horizon.', mutates: false, options: [
    { flag: '--seed', dest: 'seed', type: 'int', required: true, help: 'RNG seed for deterministic generation' },
    { flag: '--start-date', dest: 'start_date', type: 'text', required: true, help: 'Start date MM/DD/YYYY' },
    { flag: '--horizon-years', dest: 'horizon_years', type: 'int', required: false, help: 'Simulation horizon in years' },
    { flag: '--company-name', dest: 'company_name', type: 'text', required: true, help: 'Company name' },
    { flag: '--employee-count', dest: 'employee_count', type: 'int', required: false, help: 'Number of employees (default from experiment config)' },
    { flag: '--market-task-count', dest: 'market_task_count', type: 'int', required: false, help: 'Number of market tasks (default from experiment config)' },
  ] },
  { group: 'sim', name: 'resume', help: 'Advance simulation to the next actionable event (task completion, bankruptcy, or horizon end).', mutates: true, options: [] },
  { group: 'company', name: 'status', help: 'Show company status: funds, prestige, tasks, payroll, risk.', mutates: false, options: [] },
  { group: 'employee', name: 'list', help: 'List all employees with their skills and current assignments.', mutates: false, options: [] },
  { group: 'market', name: 'browse', help: 'Browse available tasks on the market.', mutates: false, options: [
    { flag: '--domain', dest: 'domain', type: 'domain', required: false, help: 'Filter by requirement domain' },
    { flag: '--reward-min-cents', dest: 'reward_min_cents', type: 'int', required: false, help: 'Min reward in cents' },
    { flag: '--limit', dest: 'limit', type: 'int', required: false, help: 'Max results (default from experiment config)' },
    { flag: '--offset', dest: 'offset', type: 'int', required: false, help: 'Offset for pagination' },
  ] },
  { group: 'task', name: 'accept', help: 'Accept a market task: transition to planned, assign to company, generate replacement.', mutates: true, options: [taskId] },
  { group: 'task', name: 'assign', help: 'Assign one or more employees to a task.', mutates: true, options: [
    taskId,
    { flag: '--employees', dest: 'employees', type: 'text', required: true, help: 'Comma-separated employee names (e.g. Emp_1,Emp_4,Emp_7)' },
  ] },
  { group: 'task', name: 'assign-all', help: 'Disabled — use `task assign --employees Emp_1,Emp_4,Emp_7` to pick specific employees.', mutates: false, options: [taskId] },
  { group: 'task', name: 'dispatch', help: 'Dispatch a planned task to active status.', mutates: true, options: [taskId] },
  { group: 'task', name: 'list', help: 'List tasks owned by the company.', mutates: false, options: [
    { flag: '--status', dest: 'status', type: 'text', required: false, help: 'Filter by task status' },
  ] },
  { group: 'task', name: 'inspect', help: 'Inspect detailed task information.', mutates: false, options: [taskId] },
  { group: 'task', name: 'cancel', help: 'Cancel a task and apply prestige penalty.', mutates: true, options: [
    taskId,
    { flag: '--reason', dest: 'reason', type: 'text', required: true, help: 'Reason for cancellation' },
  ] },
  { group: 'finance', name: 'ledger', help: 'View ledger entries with optional date and category filters.', mutates: false, options: [
    { flag: '--from', dest: 'from_date', type: 'text', required: false, help: 'Start date MM/DD/YYYY' },
    { flag: '--to', dest: 'to_date', type: 'text', required: false, help: 'End date MM/DD/YYYY' },
    { flag: '--category', dest: 'category', type: 'text', required: false, help: 'Filter by ledger category' },
  ] },
  { group: 'report', name: 'monthly', help: 'View monthly metrics (revenue, cost, return, ending funds).', mutates: false, options: [
    { flag: '--from-month', dest: 'from_month', type: 'text', required: false, help: 'Start month YYYY-MM' },
    { flag: '--to-month', dest: 'to_month', type: 'text', required: false, help: 'End month YYYY-MM' },
  ] },
  { group: 'scratchpad', name: 'read', help: 'Read the current scratchpad content.', mutates: false, options: [] },
  { group: 'scratchpad', name: 'write', help: 'Overwrite the scratchpad with new content.', mutates: true, options: [
    { flag: '--content', dest: 'content', type: 'text', required: true, help: 'Text to write (replaces existing content).' },
  ] },
  { group: 'scratchpad', name: 'append', help: 'Append text to the scratchpad (adds a newline separator).', mutates: true, options: [
    { flag: '--content', dest: 'content', type: 'text', required: true, help: 'Text to append to existing content.' },
  ] },
  { group: 'scratchpad', name: 'clear', help: 'Clear the scratchpad.', mutates: true, options: [] },
  { group: 'client', name: 'list', help: 'Show all clients with current trust levels.', mutates: false, options: [] },
  { group: 'client', name: 'history', help: 'Show per-client task history: successes, failures, listed vs actual rewards, disputes.', mutates: false, options: [] },
];

/** Help text of each command group. */
export const GROUP_HELP: Readonly<Record<string, string>> = {
  sim: 'Simulation initialization commands.',
  company: 'Company status commands.',
  employee: 'Employee management commands.',
  market: 'Market browsing commands.',
  task: 'Task management commands.',
  finance: 'Finance and ledger commands.',
  report: 'Reporting commands.',
  scratchpad: 'Agent scratchpad for persistent notes.',
  client: 'Client management commands.',
};

/** Parsed option values (absent options are missing from the record). */
export type ParsedOptions = Record<string, string | number>;

/** The table's command `group name` (a programming error when there is none). */
export function commandSpec(group: string, name: string): CommandSpec {
  const spec = COMMANDS.find((c) => c.group === group && c.name === name);
  if (spec === undefined) throw new RangeError(`no command '${group} ${name}'`);
  return spec;
}

/**
 * The command line of a command the program built already parsed: `group name`, then each option of `opts` in the
 * table's order as `--flag value`, a value shell-quoted (POSIX `shlex.quote`) when it is not a plain word. The line
 * parses back (`parseLine`) to exactly `spec` and `opts` (test/property/command-line.test.ts): the one way such a
 * command is shown (the Discrete actions' `info.action_text`), rendered from its parsed form, never parsed back.
 */
export function commandLine(spec: CommandSpec, opts: ParsedOptions): string {
  let line = `${spec.group} ${spec.name}`;
  for (const o of spec.options) {
    const v = opts[o.dest];
    if (v !== undefined) line += ` ${o.flag} ${quote(String(v))}`;
  }
  return line;
}

/** The outcome of parsing one command line. */
export type ParseResult =
  | { kind: 'command'; spec: CommandSpec; opts: ParsedOptions }
  | { kind: 'help'; text: string }
  | { kind: 'usage'; message: string; usage: string };

function metavar(o: OptionSpec): string {
  if (o.metavar) return o.metavar;
  if (o.type === 'int') return 'INTEGER';
  if (o.type === 'domain') return `[${DOMAINS.join('|')}]`;
  return 'TEXT';
}

/** click-style `--help` text of one command. */
export function commandHelp(spec: CommandSpec): string {
  const rows: [string, string][] = spec.options.map((o) => [`${o.flag} ${metavar(o)}`, o.help + (o.required ? '  [required]' : '')]);
  rows.push(['--help', 'Show this message and exit.']);
  const w = Math.max(...rows.map((r) => r[0].length));
  return [
    `Usage: yc-bench ${spec.group} ${spec.name} [OPTIONS]`,
    '',
    `  ${spec.help}`,
    '',
    'Options:',
    ...rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`),
  ].join('\n');
}

/** click-style `--help` text of a group (or of the whole CLI when group is null). */
export function groupHelp(group: string | null): string {
  if (group === null) {
    const w = Math.max(...Object.keys(GROUP_HELP).map((g) => g.length));
    return [
      'Usage: yc-bench [OPTIONS] COMMAND [ARGS]...',
      '',
      'Options:',
      '  --help  Show this message and exit.',
      '',
      'Commands:',
      ...Object.entries(GROUP_HELP).map(([g, h]) => `  ${g.padEnd(w)}  ${h}`),
    ].join('\n');
  }
  const cmds = COMMANDS.filter((c) => c.group === group);
  const w = Math.max(...cmds.map((c) => c.name.length));
  return [
    `Usage: yc-bench ${group} [OPTIONS] COMMAND [ARGS]...`,
    '',
    `  ${GROUP_HELP[group] ?? ''}`,
    '',
    'Options:',
    '  --help  Show this message and exit.',
    '',
    'Commands:',
    ...cmds.map((c) => `  ${c.name.padEnd(w)}  ${c.help}`),
  ].join('\n');
}

function usageLine(group: string | null, spec: CommandSpec | null): string {
  if (spec) return `Usage: yc-bench ${spec.group} ${spec.name} [OPTIONS]\nTry 'yc-bench ${spec.group} ${spec.name} --help' for help.`;
  if (group) return `Usage: yc-bench ${group} [OPTIONS] COMMAND [ARGS]...\nTry 'yc-bench ${group} --help' for help.`;
  return "Usage: yc-bench [OPTIONS] COMMAND [ARGS]...\nTry 'yc-bench --help' for help.";
}

const PY_INT = /^\s*[+-]?\d+(_\d+)*\s*$/;
/**
 * The command groups, as a Set: `name in GROUP_HELP` also accepted Object.prototype's keys (`constructor`,
 * `toString`, `__proto__`...) as groups, where click says "No such command"; and a Set lookup is cheaper than
 * `in` for the freshly split strings of every command line.
 */
const GROUP_NAMES: ReadonlySet<string> = new Set(Object.keys(GROUP_HELP));

/** Parse argv (already shell-split, without the `yc-bench` prefix) into a command and its options. */
export function parseArgv(argv: readonly string[]): ParseResult {
  const usage = (message: string, group: string | null, spec: CommandSpec | null): ParseResult => ({ kind: 'usage', message, usage: usageLine(group, spec) });
  const first = argv[0];
  if (first === undefined) return usage('Missing command.', null, null);
  if (first === '--help') return { kind: 'help', text: groupHelp(null) };
  if (first.startsWith('-')) return usage(`No such option: ${first}`, null, null);
  if (!GROUP_NAMES.has(first)) return usage(`No such command '${first}'.`, null, null);
  const group = first;
  const second = argv[1];
  if (second === undefined) return usage('Missing command.', group, null);
  if (second === '--help') return { kind: 'help', text: groupHelp(group) };
  if (second.startsWith('-')) return usage(`No such option: ${second}`, group, null);
  const spec = COMMANDS.find((c) => c.group === group && c.name === second);
  if (!spec) return usage(`No such command '${second}'.`, group, null);
  const rest = argv.slice(2);
  // click semantics: the parser runs first (unknown options, missing option values: errors that beat
  // --help); an option consumes the next token whatever it looks like (`--task-id --help` is a value);
  // then --help (eager) wins over conversion errors, missing options and extra arguments.
  const raw = new Map<string, string>();
  const extras: string[] = [];
  let help = false;
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i] as string;
    if (tok === '--') {
      extras.push(...rest.slice(i + 1));
      break;
    }
    if (tok.startsWith('-') && tok.length > 1) {
      if (tok === '--help') {
        help = true;
        continue;
      }
      const eq = tok.indexOf('=');
      const name = eq >= 0 ? tok.slice(0, eq) : tok;
      const o = spec.options.find((x) => x.flag === name);
      if (!o) return usage(`No such option: ${name}`, group, spec);
      if (eq >= 0) raw.set(o.dest, tok.slice(eq + 1));
      else {
        const nxt = rest[i + 1];
        if (nxt === undefined) return usage(`Option '${o.flag}' requires an argument.`, group, spec);
        raw.set(o.dest, nxt);
        i++;
      }
    } else extras.push(tok);
  }
  if (help) return { kind: 'help', text: commandHelp(spec) };
  const opts: ParsedOptions = {};
  for (const o of spec.options) {
    const v = raw.get(o.dest);
    if (v === undefined) {
      if (o.required) return usage(`Missing option '${o.flag}'.`, group, spec);
      continue;
    }
    if (o.type === 'int') {
      const n = PY_INT.test(v) ? Number(v.trim().replace(/_/g, '')) : NaN;
      if (!Number.isSafeInteger(n)) return usage(`Invalid value for '${o.flag}': '${v}' is not a valid integer.`, group, spec);
      opts[o.dest] = n;
    } else if (o.type === 'domain') {
      if (!(DOMAINS as readonly string[]).includes(v)) {
        return usage(`Invalid value for '${o.flag}': '${v}' is not one of ${DOMAINS.map((d) => `'${d}'`).join(', ')}.`, group, spec);
      }
      opts[o.dest] = v;
    } else opts[o.dest] = v;
  }
  if (extras.length > 0) {
    return usage(`Got unexpected extra argument${extras.length > 1 ? 's' : ''} (${extras.join(' ')})`, group, spec);
  }
  return { kind: 'command', spec, opts };
}
