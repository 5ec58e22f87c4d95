/**
 * `ycgym play`: a human plays the paper's turn protocol in the terminal. Each turn shows the context message the
 * LLM would get; commands (with or without the `yc-bench` prefix) run at once and their JSON is rendered
 * readably (tables for market browse, task list and employee list); `sim resume` or `end` closes the turn.
 * Line editing, history and tab completion (groups, commands, options, task ids, employee names) come from
 * node:readline. Colours only when stdout is a terminal and NO_COLOR is unset.
 */
import { createInterface, type Completer, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { Command } from 'commander';
import { intOption, seedArg } from './args.js';
import { COMMANDS, DOMAINS, GROUP_HELP } from '../sim/index.js';
import { TURN_FIX_NAMES, type TurnAction, TurnEnv, type TurnFixes, type TurnStepResult } from '../turns/turns.js';
import { runTurnEpisode, type TurnAgent, type TurnObservation } from '../turns/episode.js';
import { pyShlexSplit, type ToolResult } from '../turns/executor.js';
import { addPresetOption } from './preset-option.js';

/** Options of a play session. */
export interface PlayOptions {
  seed: number;
  preset: string;
  fixes: Partial<TurnFixes>;
  maxEpisodes: number;
  input: Readable;
  output: Writable & { isTTY?: boolean };
  /** Colour output (default: output is a TTY and NO_COLOR is unset). */
  color?: boolean;
}

interface Style {
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

function makeStyle(on: boolean): Style {
  const w = (code: string) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { bold: w('1'), dim: w('2'), red: w('31'), green: w('32'), yellow: w('33'), cyan: w('36') };
}

const PLAY_WORDS = ['help', 'end', 'system', 'quit', 'exit'];
const TASK_STATUSES = ['market', 'planned', 'active', 'completed_success', 'completed_fail', 'cancelled'];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function asObj(v: Json | undefined): { [k: string]: Json } {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
}

function asArr(v: Json | undefined): Json[] {
  return Array.isArray(v) ? v : [];
}

function text(v: Json | undefined): string {
  if (v === undefined || v === null) return '-';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** `$1,234` from integer cents (whole dollars) for tables. */
function dollars(cents: Json | undefined): string {
  if (typeof cents !== 'number') return '-';
  const sign = cents < 0 ? '-' : '';
  return `${sign}$${Math.round(Math.abs(cents) / 100).toLocaleString('en-US')}`;
}

/** Align rows into columns; `right` marks numeric columns. */
function table(head: string[], rows: string[][], right: ReadonlySet<number>, st: Style): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [st.bold(line(head)), ...rows.map(line)].join('\n');
}

function marketTable(v: { [k: string]: Json }, st: Style): string {
  const rows = asArr(v['tasks']).map((t0) => {
    const t = asObj(t0);
    const work = asArr(t['requirements'])
      .map((r0) => {
        const r = asObj(r0);
        return `${text(r['domain'])}:${text(r['required_qty'])}`;
      })
      .join(' ');
    return [text(t['task_id']), text(t['client_name']), text(t['required_prestige']), text(t['required_trust']), dollars(t['reward_funds_cents']), text(t['reward_prestige_delta']), text(t['skill_boost_pct']), work];
  });
  const foot = st.dim(`${text(v['total'])} shown (offset ${text(v['offset'])}, limit ${text(v['limit'])})`);
  return `${table(['TASK', 'CLIENT', 'PRESTIGE', 'TRUST', 'REWARD', '+PRESTIGE', 'BOOST', 'WORK'], rows, new Set([2, 3, 4, 5, 6]), st)}\n${foot}`;
}

function taskTable(v: { [k: string]: Json }, st: Style): string {
  const rows = asArr(v['tasks']).map((t0) => {
    const t = asObj(t0);
    const risk = t['at_risk'] === true ? st.red('yes') : 'no';
    return [text(t['task_id']), text(t['status']), text(t['client_name']), `${text(t['progress_pct'])}%`, text(t['deadline']), risk];
  });
  return `${table(['TASK', 'STATUS', 'CLIENT', 'PROGRESS', 'DEADLINE', 'AT RISK'], rows, new Set([3]), st)}\n${st.dim(`${text(v['count'])} tasks`)}`;
}

function employeeTable(v: { [k: string]: Json }, st: Style): string {
  const emps = asArr(v['employees']).map(asObj);
  const domains = Object.keys(asObj(emps[0]?.['skill_rates']));
  const rows = emps.map((e) => {
    const rates = asObj(e['skill_rates']);
    const active = asArr(e['active_tasks']).map((a) => (typeof a === 'object' && a !== null && !Array.isArray(a) ? text(a['task_id'] ?? a['title'] ?? a) : text(a)));
    return [text(e['name']), text(e['tier']), dollars(e['salary_cents']), ...domains.map((d) => text(rates[d])), active.join(',') || '-'];
  });
  const right = new Set([2, ...domains.map((_, i) => 3 + i)]);
  return table(['NAME', 'TIER', 'SALARY', ...domains, 'ACTIVE'], rows, right, st);
}

function verbOf(command: string): string {
  const argv = pyShlexSplit(command) ?? [];
  const rest = argv[0] === 'yc-bench' ? argv.slice(1) : argv;
  return rest.slice(0, 2).join(' ');
}

/** A command's result for a person: tables for the list commands, errors in red, other JSON as printed. */
export function renderResult(r: ToolResult, color = false): string {
  const st = makeStyle(color);
  if (r.exit_code === 2) return st.red(r.stderr.replace(/\n$/, ''));
  const out = r.stdout.replace(/\n$/, '');
  let v: Json;
  try {
    v = JSON.parse(out) as Json;
  } catch {
    return out;
  }
  const o = asObj(v);
  if (!r.ok && typeof o['error'] === 'string') return st.red(`error: ${o['error']}`);
  const verb = verbOf(r.command);
  if (verb === 'market browse') return marketTable(o, st);
  if (verb === 'task list') return taskTable(o, st);
  if (verb === 'employee list') return employeeTable(o, st);
  return out;
}

function helpText(st: Style, autoAdvance: number): string {
  const lines = [st.bold('Commands') + st.dim(' (the `yc-bench` prefix is optional):')];
  for (const c of COMMANDS) {
    if (c.group === 'sim' && c.name === 'init') continue;
    const opts = c.options.map((o) => (o.required ? `${o.flag} ${o.dest.toUpperCase()}` : `[${o.flag} ${o.dest.toUpperCase()}]`)).join(' ');
    lines.push(`  ${`${c.group} ${c.name}`.padEnd(18)} ${opts}`.trimEnd());
  }
  lines.push(
    st.bold('Session:'),
    `  end                end the turn without resuming (after ${autoAdvance} turns without a resume the harness resumes itself)`,
    '  system             show the system prompt as the LLM sees it (with the scratchpad)',
    '  help               this list; `GROUP --help` or `GROUP CMD --help` for the reference help screens',
    '  quit               leave',
    st.dim('A turn ends after `sim resume`. Tab completes commands, options, task ids and employee names.'),
  );
  return lines.join('\n');
}

/** Tab completion over the command table and the live simulation (task titles, employee names). */
export function makeCompleter(env: TurnEnv): Completer {
  return (line: string): [string[], string] => {
    const endsWithSpace = /\s$/.test(line);
    const words = line.trim().length > 0 ? line.trim().split(/\s+/) : [];
    const partial = endsWithSpace || words.length === 0 ? '' : (words.pop() as string);
    if (words[0] === 'yc-bench') words.shift();
    const pick = (cands: readonly string[]): [string[], string] => [cands.filter((c) => c.startsWith(partial)), partial];
    if (words.length === 0) return pick([...Object.keys(GROUP_HELP), ...PLAY_WORDS, ...(line.trimStart().startsWith('yc-bench') ? [] : ['yc-bench'])]);
    const group = words[0] as string;
    if (words.length === 1) return pick(COMMANDS.filter((c) => c.group === group).map((c) => c.name));
    const spec = COMMANDS.find((c) => c.group === group && c.name === words[1]);
    if (!spec) return [[], partial];
    const prev = words[words.length - 1] ?? '';
    const opt = spec.options.find((o) => o.flag === prev);
    const sim = env.simulation;
    if (opt && sim) {
      if (opt.dest === 'task_id') {
        const wantMarket = spec.name === 'accept';
        const titles = sim.state.tasks.filter((t) => (wantMarket ? t.status === 'market' : t.owned)).map((t) => t.title);
        return pick([...new Set(titles)]);
      }
      if (opt.dest === 'employees') {
        const comma = partial.lastIndexOf(',');
        const head = partial.slice(0, comma + 1);
        const chosen = new Set(head.split(',').filter(Boolean));
        const names = sim.state.employees.map((e) => e.name).filter((n) => !chosen.has(n));
        return [names.map((n) => head + n).filter((c) => c.startsWith(partial)), partial];
      }
      if (opt.type === 'domain') return pick(DOMAINS);
      if (opt.dest === 'status') return pick(TASK_STATUSES);
      return [[], partial];
    }
    const used = new Set(words.filter((w) => w.startsWith('--')));
    return pick([...spec.options.map((o) => o.flag).filter((f) => !used.has(f)), '--help']);
  };
}

/**
 * Run an interactive session until the run ends or the player quits. The player is a turn-level agent of the one
 * episode loop (`runTurnEpisode`): each turn it runs the typed commands at once (their output shown as they run) and
 * answers the turn when the player types `end` or resumes the simulation.
 */
export async function runPlay(o: PlayOptions): Promise<void> {
  const color = o.color ?? (Boolean(o.output.isTTY) && !process.env['NO_COLOR']);
  const st = makeStyle(color);
  const env = new TurnEnv();
  const say = (s: string) => o.output.write(`${s}\n`);
  const context = (msg: string | null) => {
    say('');
    say(st.cyan(msg ?? ''));
    say('');
  };
  const rl: Interface = createInterface({ input: o.input, output: o.output, completer: makeCompleter(env), historySize: 1000, terminal: Boolean(o.output.isTTY) });
  /** The turn being typed: resolved with the turn's action, or null when the player leaves. */
  let answer: ((a: TurnAction | null) => void) | null = null;
  const reply = (a: TurnAction | null) => {
    const r = answer;
    answer = null;
    r?.(a);
  };
  let turn = 1;
  const prompt = () => {
    rl.setPrompt(`${st.dim(`[turn ${turn}]`)} ${st.green('yc-bench>')} `);
    rl.prompt();
  };
  const player: TurnAgent = {
    name: 'player',
    reset() {},
    act(obs: TurnObservation): Promise<TurnAction | null> {
      turn = obs.info.turn + 1;
      context(obs.userMessage);
      const next = new Promise<TurnAction | null>((resolve) => {
        answer = resolve;
      });
      prompt();
      pump();
      return next;
    },
  };
  const afterTurn = ({ result: r }: { result: TurnStepResult }) => {
    if (r.info.auto_advanced) say(st.yellow('(no resume for several turns: the harness ran `yc-bench sim resume`)'));
    if (r.info.episode_end && !r.done) say(st.yellow(`Episode ${r.info.episode_end.episode} ended (${r.info.episode_end.terminal_reason}); episode ${r.info.episode} starts.`));
    if (r.done) {
      say('');
      say(st.bold(`Run over: ${r.terminalReason ?? 'unknown'}${r.info.terminal_detail && r.info.terminal_detail !== r.terminalReason ? ` (${r.info.terminal_detail})` : ''}.`));
      say(`Funds: ${dollars(r.info.funds_cents)}  Time: ${r.info.sim_time}  Turns: ${r.info.turn}`);
    }
  };
  /** Lines typed while no turn is waiting (piped input arrives in bursts): handled in order by the next turn. */
  const typed: string[] = [];
  let closed = false;
  const handle = (raw: string) => {
    const line = raw.trim();
    if (line === '') return prompt();
    if (line === 'quit' || line === 'exit') return reply(null);
    if (line === 'help') {
      say(helpText(st, env.resolvedOptions()?.auto_advance_after_turns ?? 5));
      return prompt();
    }
    if (line === 'system') {
      say(st.dim(env.messages()[0]?.content ?? ''));
      return prompt();
    }
    // The commands already ran (`env.run`) as calls of the open turn: the turn's action adds none.
    if (line === 'end' || line === 'next') return reply({ commands: [] });
    const command = /^yc-bench(\s|$)/.test(line) ? line : `yc-bench ${line}`;
    say(renderResult(env.run(command), color));
    if (env.resumedThisTurn) return reply({ commands: [] });
    return prompt();
  };
  const pump = () => {
    while (answer !== null && typed.length > 0) handle(typed.shift() as string);
    if (answer !== null && closed) reply(null);
  };
  rl.on('line', (raw: string) => {
    typed.push(raw);
    pump();
  });
  rl.on('close', () => {
    closed = true;
    pump();
  });
  rl.on('SIGINT', () => rl.close());
  const hello = () => say(st.bold(`ycgym play — seed ${o.seed}, preset ${o.preset}`) + st.dim('  (help: commands, quit: leave)'));
  try {
    await runTurnEpisode(env, player, { seed: o.seed, preset: o.preset, options: { fixes: o.fixes, max_episodes: o.maxEpisodes } }, { onReset: hello, onStep: afterTurn });
  } finally {
    rl.close();
  }
}


/** Add `ycgym play [--seed N] [--preset P] [--fix NAME ...] [--max-episodes N]` to a commander program. */
export function registerPlay(program: Command): Command {
  const cmd = program
    .command('play')
    .description('play YC-Bench yourself, one turn at a time, as the LLM agent sees it')
    .option('--seed <n>', 'world seed (a safe integer)', seedArg, 1);
  return addPresetOption(cmd, 'preset name or TOML path', 'default')
    .option('--fix <name...>', `turn-protocol fixes to turn on (${TURN_FIX_NAMES.join(', ')})`)
    .option('--max-episodes <n>', 'episodes per run (restart after bankruptcy; 1-1000, as the protocol)', intOption(1, 1000, '--max-episodes'), 1)
    .action(async (opts: { seed: number; preset: string; fix?: string[]; maxEpisodes: number }) => {
      const fixes: Partial<TurnFixes> = {};
      for (const f of opts.fix ?? []) {
        if (!(TURN_FIX_NAMES as readonly string[]).includes(f)) {
          process.stderr.write(`ycgym play: unknown fix ${f} (known: ${TURN_FIX_NAMES.join(', ')})\n`);
          process.exitCode = 2;
          return;
        }
        fixes[f as keyof TurnFixes] = true;
      }
      try {
        await runPlay({ seed: opts.seed, preset: opts.preset, fixes, maxEpisodes: opts.maxEpisodes, input: process.stdin, output: process.stdout });
      } catch (e) {
        process.stderr.write(`ycgym play: ${(e as Error).message}\n`);
        process.exitCode = 2;
      }
    });
}
