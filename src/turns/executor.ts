/**
 * The reference harness's command executor (`agent/commands/policy.py`, `executor.py`,
 * `tools/run_command_schema.py`): the shlex policy, then the CLI's exact stdout/stderr for the command.
 * In the reference each command is a `yc-bench` subprocess; here it runs in process on a `Simulation`.
 *
 * stdout/stderr follow the reference CLI: JSON results and `{"error": ...}` objects on stdout with a trailing
 * newline; click usage errors on stderr as typer + rich print them (80 columns, no colour); `--help` screens on
 * stdout exactly as captured from the reference. `sim_time` is always null, as in the reference.
 */
import { split as shlexSplit } from 'shlex';
import { isError, type CommandValue, type Simulation, type Verb } from '../sim/index.js';
import { REFERENCE_HELP } from './reference-help.js';
import { richUsageError } from './rich.js';

/** One tool result, in the reference's field order (`RunCommandResult`). */
export interface ToolResult {
  ok: boolean;
  exit_code: number;
  stdout: string;
  stderr: string;
  sim_time: null;
  command: string;
}

/** Python `str.strip()` whitespace. */
const PY_WS = '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const PY_BLANK = new RegExp(`^${PY_WS}*$`);

/** Python `shlex.split` (POSIX mode); null on a syntax error such as an unclosed quote. */
export function pyShlexSplit(line: string): string[] | null {
  try {
    return shlexSplit(line);
  } catch {
    return null;
  }
}

/** The executor's policy check (`parse_bench_command`): null when the command may run, else the error text. */
export function policyError(command: string, acceptUnprefixed = false): string | null {
  if (PY_BLANK.test(command)) return 'command must be a non-empty string';
  const argv = pyShlexSplit(command);
  if (argv === null) return `invalid command syntax: ${command}`;
  if (argv.length === 0) return 'command must be a non-empty string';
  if (argv[0] !== 'yc-bench' && !acceptUnprefixed) return 'only top-level `yc-bench` commands are allowed';
  return null;
}

function helpKey(text: string): string | null {
  const first = text.split('\n', 1)[0] ?? '';
  const m = /^Usage: yc-bench(?: (\S+))?(?: (\S+))? \[OPTIONS\]/.exec(first);
  if (!m) return null;
  return [m[1], m[2]].filter((x): x is string => x !== undefined).join(' ');
}

/** click raises these without a context, so typer prints no usage lines above the panel. */
const NO_CONTEXT = /^Option '[^']*' requires an argument\.$/;

/** The stderr of a usage error (exit 2) reported by the simulation. */
function usageStderr(text: string, message: string, verb: string | null): string {
  let usage: string[] = [];
  if (!NO_CONTEXT.test(message)) {
    const cut = text.indexOf('\n\nError: ');
    if (cut >= 0) usage = text.slice(0, cut).split('\n');
    else if (verb !== null) usage = [`Usage: yc-bench ${verb} [OPTIONS]`, `Try 'yc-bench ${verb} --help' for help.`];
  }
  return richUsageError(message, usage);
}

/**
 * A command the harness ran: the tool result the agent sees (text, rendered here at the edge) and, typed, what the
 * command was recognised as and what it produced, for the harness's own bookkeeping (nothing re-parses the text).
 */
export interface ExecutedCommand {
  result: ToolResult;
  /** The verb (`group name`) the command was recognised as; null when it did not run, for help and for usage errors. */
  verb: Verb | null;
  /**
   * The command's typed output: the verb's result (narrow it with `isVerb(ex, verb)`) or `{error}`; null when it did
   * not run and for help.
   */
  value: CommandValue;
}

/** A tool call that was not run: exit code 2 with `stderr`. */
export function notRun(command: string, stderr: string): ExecutedCommand {
  return { result: { ok: false, exit_code: 2, stdout: '', stderr, sim_time: null, command }, verb: null, value: null };
}

/**
 * Run one agent command as the reference's `run_command` tool does: the normalised result and its typed outcome.
 * `acceptUnprefixed` runs commands that lack the `yc-bench` prefix instead of rejecting them (not the reference).
 */
export function runCommand(sim: Simulation, command: string, acceptUnprefixed = false): ExecutedCommand {
  const denied = policyError(command, acceptUnprefixed);
  if (denied !== null) return notRun(command, denied);
  const r = sim.execute(command);
  if (r.exit === 0 && r.verb === null) {
    // --help: the reference prints typer's rich help screen.
    const key = helpKey(r.text);
    const screen = key !== null ? REFERENCE_HELP[key] : undefined;
    return { result: { ok: true, exit_code: 0, stdout: screen ?? `${r.text}\n`, stderr: '', sim_time: null, command }, verb: null, value: null };
  }
  if (r.exit === 2) {
    const message = isError(r.value) ? r.value.error : r.text;
    return { result: { ok: false, exit_code: 2, stdout: '', stderr: usageStderr(r.text, message, r.verb), sim_time: null, command }, verb: r.verb, value: r.value };
  }
  return { result: { ok: r.exit === 0, exit_code: r.exit, stdout: `${r.text}\n`, stderr: '', sim_time: null, command }, verb: r.verb, value: r.value };
}

/** `runCommand`'s tool result alone. */
export function executeCommand(sim: Simulation, command: string, acceptUnprefixed = false): ToolResult {
  return runCommand(sim, command, acceptUnprefixed).result;
}
