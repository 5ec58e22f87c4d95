/**
 * The typed command results (src/sim/commands/results.ts) against real outputs: every verb's value, every nested
 * row and every wake event carries exactly the keys declared next to its type, in that order (the JSON order); and
 * the key lists and the typed values are checked by the compiler (a snippet compiled in memory must fail where a
 * list or a value is wrong).
 */
import { describe, expect, it } from 'vitest';
import ts from 'typescript';
import { fileURLToPath } from 'node:url';
import { loadPreset } from '../../src/config/load.js';
import {
  COMMANDS,
  DOMAINS_ALPHA,
  isError,
  isVerb,
  RESULT_KEYS,
  ROW_KEYS,
  Simulation,
  WAKE_EVENT_KEYS,
  type CommandResult,
  type Verb,
} from '../../src/sim/index.js';

// The corrected preset (cancel and the monthly report work), with a progress milestone (a `task_half` wake event).
const cfg = structuredClone(loadPreset('corrected'));
cfg.world.task_progress_milestones = [0.5];

/** Checks outputs against the declared keys and remembers which verbs, rows and wake events it saw. */
class ShapeChecker {
  readonly verbs = new Set<string>();
  readonly rows = new Set<string>();
  readonly wakes = new Set<string>();

  private keys(v: unknown, keys: readonly string[], where: string): void {
    expect(v !== null && typeof v === 'object' && !Array.isArray(v), `${where} is an object`).toBe(true);
    expect(Object.keys(v as object), where).toEqual([...keys]);
  }

  private each(rows: readonly unknown[], kind: keyof typeof ROW_KEYS, where: string): void {
    rows.forEach((r, i) => this.keys(r, ROW_KEYS[kind], `${where}[${i}]`));
    if (rows.length > 0) this.rows.add(kind);
  }

  /** Run `command`; when it is accepted, check its value (and rows) against its verb's declared keys. */
  run(sim: Simulation, command: string): CommandResult {
    const r = sim.execute(command);
    if (!r.ok) {
      this.keys(r.value, ROW_KEYS.error, `${command}: rejection`);
      this.rows.add('error');
      return r;
    }
    const verb = r.verb as Verb;
    this.keys(r.value, RESULT_KEYS[verb], command);
    this.verbs.add(verb);
    this.nested(r, command);
    return r;
  }

  private nested(r: CommandResult, where: string): void {
    if (r.is('company status')) {
      this.keys(r.value.tasks, ROW_KEYS.taskCounts, `${where}.tasks`);
      this.keys(r.value.risk, ROW_KEYS.risk, `${where}.risk`);
      this.keys(r.value.prestige, DOMAINS_ALPHA, `${where}.prestige`);
      this.rows.add('taskCounts').add('risk');
    } else if (r.is('employee list')) {
      this.each(r.value.employees, 'employee', `${where}.employees`);
      for (const e of r.value.employees) this.keys(e.skill_rates, DOMAINS_ALPHA, `${where}.skill_rates`);
    } else if (r.is('market browse')) {
      this.each(r.value.tasks, 'marketTask', `${where}.tasks`);
      for (const t of r.value.tasks) this.each(t.requirements, 'marketRequirement', `${where}.requirements`);
    } else if (r.is('task list')) {
      this.each(r.value.tasks, 'taskList', `${where}.tasks`);
    } else if (r.is('task inspect')) {
      this.each(r.value.requirements, 'taskRequirement', `${where}.requirements`);
      this.each(r.value.assignments, 'taskAssignment', `${where}.assignments`);
    } else if (r.is('task cancel')) {
      this.each(Object.values(r.value.prestige_changes), 'prestigeChange', `${where}.prestige_changes`);
    } else if (r.is('client list')) {
      this.each(r.value.clients, 'client', `${where}.clients`);
    } else if (r.is('client history')) {
      this.each(r.value.client_history, 'clientHistory', `${where}.client_history`);
    } else if (r.is('finance ledger')) {
      this.each(r.value.entries, 'ledger', `${where}.entries`);
    } else if (r.is('report monthly')) {
      this.each(r.value.months, 'month', `${where}.months`);
    } else if (r.is('sim resume')) {
      for (const w of r.value.wake_events) {
        this.keys(w, WAKE_EVENT_KEYS[w.type], `${where}: wake event ${w.type}`);
        this.wakes.add(w.type);
      }
    }
  }
}

/** Keep one task running with every employee on it (the greedy baseline's play). */
function keepBusy(c: ShapeChecker, sim: Simulation): void {
  const active = c.run(sim, 'task list --status active');
  if (active.is('task list') && active.value.count > 0) return;
  const browse = c.run(sim, 'market browse --limit 5');
  const best = browse.is('market browse') ? browse.value.tasks[0] : undefined;
  if (best === undefined) return;
  const names = sim.state.employees.map((e) => e.name).join(',');
  c.run(sim, `task accept --task-id ${best.task_id}`);
  c.run(sim, `task assign --task-id ${best.task_id} --employees ${names}`);
  c.run(sim, `task dispatch --task-id ${best.task_id}`);
}

describe('typed command results', () => {
  it('every command of the grammar has a declared result, and every declared verb is a command', () => {
    const grammar = COMMANDS.map((c) => `${c.group} ${c.name}`).sort();
    expect(Object.keys(RESULT_KEYS).sort()).toEqual(grammar);
  });

  it("each verb's value, rows and wake events carry exactly the declared keys, in order", () => {
    const c = new ShapeChecker();
    const sim = Simulation.create(cfg, { seed: 1 });
    for (const cmd of ['company status', 'employee list', 'market browse --limit 3', 'client list', 'client history', 'report monthly', 'finance ledger']) c.run(sim, cmd);
    for (const cmd of ['scratchpad write --content a', 'scratchpad append --content b', 'scratchpad read', 'scratchpad clear']) c.run(sim, cmd);
    // The two verbs the reference always rejects: `{error}`, and no accepted result to declare.
    for (const cmd of ['sim init --seed 1 --start-date 01/01/2025 --company-name X', 'task assign-all --task-id Task-1']) {
      const r = c.run(sim, cmd);
      expect([r.ok, r.exit, r.verb], cmd).toEqual([false, 1, cmd.split(' ').slice(0, 2).join(' ')]);
      expect(RESULT_KEYS[r.verb as Verb], cmd).toEqual([]);
    }
    keepBusy(c, sim);
    const first = sim.state.tasks.find((t) => t.status === 'active');
    expect(first).toBeDefined();
    c.run(sim, `task inspect --task-id ${first?.title}`);
    // A second task, accepted and cancelled (the corrected preset's cancel).
    const browse = c.run(sim, 'market browse --limit 1');
    const other = browse.is('market browse') ? browse.value.tasks[0]?.task_id : undefined;
    c.run(sim, `task accept --task-id ${other}`);
    c.run(sim, `task assign --task-id ${other} --employees Emp_1`);
    expect(c.run(sim, `task cancel --task-id ${other} --reason test`).ok).toBe(true);
    for (let i = 0; i < 200 && !(c.wakes.has('task_half') && c.wakes.has('task_completed') && c.wakes.has('monthly_payroll')); i++) {
      keepBusy(c, sim);
      c.run(sim, 'sim resume');
    }
    c.run(sim, 'finance ledger');
    c.run(sim, 'report monthly');
    c.run(sim, 'task list');
    c.run(sim, `task inspect --task-id ${first?.title}`);

    // A bankruptcy: the payroll that leaves the funds below zero ends one resume, the next one reports the event.
    sim.state.fundsCents = -1e12;
    for (let i = 0; i < 40 && !c.wakes.has('bankruptcy'); i++) {
      keepBusy(c, sim);
      c.run(sim, 'sim resume');
    }
    // The horizon's end: one year with funds that cannot run out.
    const short = Simulation.create(cfg, { seed: 2, horizonYears: 1 });
    short.state.fundsCents = 1e13;
    for (let i = 0; i < 1000 && !c.wakes.has('horizon_end'); i++) {
      keepBusy(c, short);
      c.run(short, 'sim resume');
    }

    const accepted = (Object.keys(RESULT_KEYS) as Verb[]).filter((v) => RESULT_KEYS[v].length > 0);
    expect([...c.verbs].sort()).toEqual(accepted.sort());
    expect([...c.rows].sort()).toEqual(Object.keys(ROW_KEYS).sort());
    // Nothing schedules an event without a handler (`unknown`), so it is the one wake event never seen.
    expect([...c.wakes].sort()).toEqual(Object.keys(WAKE_EVENT_KEYS).filter((t) => t !== 'unknown').sort());
  });

  it('isVerb narrows to the accepted result of one verb; rejections and help are not results', () => {
    const sim = Simulation.create(cfg, { seed: 1 });
    const status = sim.execute('company status');
    expect(isVerb(status, 'company status') && status.is('company status')).toBe(true);
    expect(isVerb(status, 'employee list')).toBe(false);
    const rejected = sim.execute('sim resume');
    expect(rejected.verb).toBe('sim resume');
    expect(isVerb(rejected, 'sim resume')).toBe(false);
    expect(isError(rejected.value)).toBe(true);
    const help = sim.execute('company status --help');
    expect(help.value).toBeNull();
    expect(isError(help.value)).toBe(false);
    expect(isVerb(help, 'company status')).toBe(false);
  });
});

/** Type-check a snippet against the real result types (in memory, with the project's compiler options). */
function typeErrors(snippet: string): string[] {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const file = `${root}test/unit/__typed_results_snippet.ts`;
  const options: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, noUncheckedIndexedAccess: true, skipLibCheck: true, types: [], lib: ['lib.es2022.d.ts'] };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, snippet, lang) : getSourceFile.call(host, name, lang, ...rest));
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? snippet : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const sf = program.getSourceFile(file) as ts.SourceFile;
  return ts.getPreEmitDiagnostics(program, sf).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

const HEADER = `import { keysOf, isVerb, type CommandValue, type ScratchpadWriteResult, type SimResumeResult, type Verb } from '../../src/sim/commands/results.js';\n`;

describe('typed command results at compile time', () => {
  it('accepts exact key lists, typed values through satisfies and values narrowed by isVerb', () => {
    const ok = `${HEADER}
export const keys = keysOf<ScratchpadWriteResult>()(['ok', 'content']);
export const value = { ok: true, content: 'x' } satisfies ScratchpadWriteResult;
export function events(r: { verb: Verb | null; value: CommandValue }) {
  return isVerb(r, 'sim resume') ? r.value.wake_events.map((w) => (w.type === 'task_completed' ? w.trust_delta : 0)) : [];
}
export const resume = (v: SimResumeResult) => v.terminal_reason;
`;
    expect(typeErrors(ok)).toEqual([]);
  }, 60_000);

  it('rejects a key list that misses or invents a key, a wrong value, and a value read without narrowing', () => {
    const cases: [string, RegExp][] = [
      [`keysOf<ScratchpadWriteResult>()(['ok']);`, /missing/],
      [`keysOf<ScratchpadWriteResult>()(['ok', 'content', 'size']);`, /"size"/],
      [`({ ok: true }) satisfies ScratchpadWriteResult;`, /content/],
      [`({ ok: true, content: 1 }) satisfies ScratchpadWriteResult;`, /number/],
      [`((r: { verb: Verb | null; value: CommandValue }) => r.value?.wake_events);`, /wake_events/],
    ];
    for (const [line, msg] of cases) {
      const errors = typeErrors(`${HEADER}export {};\n${line}\nvoid isVerb;\n`);
      expect(errors.length, line).toBeGreaterThan(0);
      expect(errors.join('\n'), line).toMatch(msg);
    }
  }, 60_000);
});
