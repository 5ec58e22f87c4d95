/**
 * Fuzzing the command layer: generated command lines (random bytes, near-valid commands with mutated flags,
 * ids and values, huge and unicode arguments, shell metacharacters) against live simulations.
 *
 * Checked for every command: no exception escapes `execute` (nor the lazy `text`); the exit code is 0, 1
 * or 2 and `ok` agrees; every rejection is a structured error (value exactly `{"error": <non-empty string>}`,
 * text the compact JSON for exit 1 or `...Error: <message>` for exit 2); a rejected command leaves the state
 * exactly as it was; the invariants hold after every accepted command.
 *
 * State fingerprint: `JSON.stringify([config, state])` of the live objects. It is exact: the state holds only
 * plain objects, arrays, strings, numbers, booleans, null and decimal.js values, whose `toJSON` is the
 * exact decimal string (sign of zero included), so two states with equal fingerprints restore identically
 * (`snapshot()` is a field-by-field copy of the same data, with `toString`). It costs about half a
 * `snapshot()` + stringify. The fingerprint is refreshed after every accepted command of a mutating verb and
 * compared after every handler-level rejection (the command was recognised, so its handler ran and could
 * have written before failing). Accepted read-only commands do not refresh it, so a read-only command that
 * wrote would show up at the next comparison (and at the end of the sequence, which is always compared).
 * Parse-level rejections (`verb === null`: shell-split, unknown command, bad option) return before any
 * handler is reached and cannot see the state; they are compared on a sample (1 in `parseSample`, default
 * 16) as an empirical check of that argument.
 */
import fc from 'fast-check';
import { loadPreset } from '../../../src/config/load.js';
import { type CommandResult, COMMANDS, DEFAULT_LIMITS, DOMAINS, type ExperimentConfig, Simulation } from '../../../src/sim/index.js';
import { round } from './util.js';

// ---------------------------------------------------------------------------------------------------------
// Generators

const SHELL_META = [';', '|', '&', '&&', '||', '$(', ')', '`', '>', '<', '>>', '*', '?', '~', '{', '}', '[', ']', '!', '#', '\\', "'", '"', '\n', '\t', '\r', '\0', '$HOME', '${IFS}', '%s%n', '../../etc/passwd'];

const lowSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const weirdChar = fc.oneof(
  fc.constantFrom('\u0000', '\u0007', '\u001b[31m', '\u200b', '\u202e', '\ufeff', '\uffff', 'é', 'ﬁ', 'İ', '😀', '👨‍👩‍👧', '中文', 'مرحبا', '\u0301', '\u2028'),
  lowSurrogate,
);

/** Integers as an agent might (mis)type them. */
const intText = fc.oneof(
  fc.integer({ min: -5, max: 300 }).map(String),
  fc.constantFrom('0', '-1', '1e3', '0x10', '1_000', ' 5 ', '+7', '99999999999999999999999', '9007199254740993', 'NaN', 'Infinity', '٣', '', '1.5', '--1', '__1'),
);

const taskIdText = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 220 }).map((n) => `Task-${n}`) },
  { weight: 2, arbitrary: fc.integer({ min: -3, max: 100000 }).map((n) => `Task-${n}`) },
  { weight: 1, arbitrary: fc.constantFrom('Task-01', 'task-1', 'Task-1.5', 'Task-', 'Task', 'TASK-1', 'Task-R1', 'Task-1 ', ' Task-1', 'Task-1\u0000', `Task-${'9'.repeat(400)}`) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-f]{32}$/) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);

const employeesText = fc.oneof(
  fc.array(fc.integer({ min: 0, max: 12 }).map((n) => `Emp_${n}`), { minLength: 1, maxLength: 10 }).map((a) => a.join(',')),
  fc.constantFrom('Emp_1,Emp_1', ',,', 'Emp_1,', ',Emp_1', 'emp_1', 'Emp_1 Emp_2', 'Emp_1;Emp_2', '', Array.from({ length: 500 }, (_, i) => `Emp_${i}`).join(',')),
);

const domainText = fc.oneof(fc.constantFrom(...DOMAINS), fc.constantFrom('Research', 'nope', '', 'training ', 'data-environment'));
const dateText = fc.oneof(fc.constantFrom('01/01/2025', '12/31/2025', '02/30/2025', '13/01/2025', '2025-01-01', '1/1/2025', '00/00/0000', '99/99/9999'), fc.string({ maxLength: 12 }));
const monthText = fc.constantFrom('2025-01', '2025-13', '2025-1', '1999-12', '9999-12', 'Jan 2025', '');

/** A plausible value for one option (by destination). */
function valueFor(dest: string): fc.Arbitrary<string> {
  let a = valueArbs.get(dest);
  if (a === undefined) {
    a = makeValueFor(dest);
    valueArbs.set(dest, a);
  }
  return a;
}
const valueArbs = new Map<string, fc.Arbitrary<string>>();

function makeValueFor(dest: string): fc.Arbitrary<string> {
  switch (dest) {
    case 'task_id':
      return taskIdText;
    case 'employees':
      return employeesText;
    case 'domain':
      return domainText;
    case 'from_date':
    case 'to_date':
    case 'start_date':
      return dateText;
    case 'from_month':
    case 'to_month':
      return monthText;
    case 'status':
      return fc.constantFrom('active', 'planned', 'market', 'completed_success', 'completed_fail', 'cancelled', 'ACTIVE', '');
    case 'category':
      return fc.constantFrom('payroll', 'task_reward', 'cancel_penalty', 'nope', '');
    case 'content':
    case 'reason':
    case 'company_name':
      return fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: weirdChar, maxLength: 10 }), fc.constantFrom(...SHELL_META));
    default:
      return intText;
  }
}

/** Quote a value for the shell-like splitter in one of several ways (some deliberately broken). */
const quoting = fc.constantFrom<(v: string) => string>(
  (v) => v,
  (v) => JSON.stringify(v),
  (v) => `'${v.replace(/'/g, `'\\''`)}'`,
  (v) => `"${v}`,
  (v) => `'${v}`,
  (v) => v.replace(/ /g, '\\ '),
);

/** A near-valid command for one verb: its real flags with plausible values, then mutated. */
function nearValidFor(spec: (typeof COMMANDS)[number]): fc.Arbitrary<string> {
  const values = fc.tuple(...spec.options.map((o) => fc.tuple(valueFor(o.dest), fc.nat(), quoting)));
  const mutations = fc.array(fc.tuple(fc.nat({ max: 11 }), fc.nat()), { maxLength: 3 });
  return fc.tuple(values, mutations, fc.boolean()).map(([vals, muts, prefix]) => {
    const parts: string[] = [spec.group, spec.name];
    spec.options.forEach((o, i) => {
      const [value, n, q] = vals[i] as [string, number, (v: string) => string];
      if (!o.required && n % 3 === 0) return;
      const v = q(value);
      parts.push(n % 5 === 0 ? `${o.flag}=${v}` : `${o.flag} ${v}`);
    });
    for (const [m, n] of muts) {
      const at = 2 + (n % Math.max(1, parts.length - 1));
      switch (m) {
        case 0: // drop a token
          parts.splice(at, 1);
          break;
        case 1: // duplicate a token
          parts.splice(at, 0, parts[at] ?? '--help');
          break;
        case 2: // misspell a flag
          parts.splice(at, 1, (parts[at] ?? '--x').replace(/^--([a-z]+)-?/, (_, w: string) => (n % 2 === 0 ? `--${w}_` : `-${w.toUpperCase()}`)));
          break;
        case 3:
          parts.push('--bogus', String(n));
          break;
        case 4:
          parts.splice(at, 0, '--');
          break;
        case 5:
          parts.push('--help');
          break;
        case 6: // a flag without its value at the end
          parts.push(spec.options[n % Math.max(1, spec.options.length)]?.flag ?? '--limit');
          break;
        case 7:
          parts.push(SHELL_META[n % SHELL_META.length] as string);
          break;
        case 8: // swap group and name
          [parts[0], parts[1]] = [parts[1] as string, parts[0] as string];
          break;
        case 9:
          parts.push('extra', 'args');
          break;
        case 10: {
          // truncate the line somewhere
          const line = parts.join(' ');
          return line.slice(0, n % (line.length + 1));
        }
        default:
          parts[1] = (parts[1] as string).toUpperCase();
      }
    }
    return (prefix ? 'yc-bench ' : '') + parts.join(' ');
  });
}

/** A near-valid command: a real verb with real flags, then mutated. */
const nearValid: fc.Arbitrary<string> = fc.oneof(...COMMANDS.map(nearValidFor));

/** Commands that make real progress (accept, assign, dispatch, resume), so rejections meet varied states. */
const progress = fc
  .tuple(fc.integer({ min: 1, max: 220 }), fc.subarray(['Emp_1', 'Emp_2', 'Emp_3', 'Emp_4', 'Emp_5', 'Emp_6', 'Emp_7', 'Emp_8'], { minLength: 1 }), fc.integer({ min: 0, max: 3 }))
  .map(([n, e, k]) => [`task accept --task-id Task-${n}`, `task assign --task-id Task-${n} --employees ${e.join(',')}`, `task dispatch --task-id Task-${n}`, 'sim resume', 'market browse --limit 5', 'task cancel --task-id Task-' + n + ' --reason x'][k % 6] as string);

/** Lines at, just under and above the command length limit, and big scratchpad contents. */
const huge = fc.oneof(
  fc.constantFrom(DEFAULT_LIMITS.maxCommandChars - 1, DEFAULT_LIMITS.maxCommandChars, DEFAULT_LIMITS.maxCommandChars + 1, 2 * DEFAULT_LIMITS.maxCommandChars).chain((len) =>
    fc.constantFrom('scratchpad append --content ', 'task accept --task-id ', 'market browse --limit ', 'x').map((head) => head + 'A'.repeat(Math.max(0, len - head.length))),
  ),
  fc.integer({ min: 1000, max: 60_000 }).chain((n) => fc.constantFrom('é', 'a', '😀', '\\n', '"').map((c) => `scratchpad append --content '${c.repeat(Math.floor(n / c.length / 2))}'`)),
  fc.integer({ min: 1, max: 3000 }).map((n) => `task list ${'--status active '.repeat(n)}`),
  fc.integer({ min: 1, max: 20000 }).map((n) => `${'"'.repeat(n)}`),
);

/** Random bytes (as a latin1 string and as UTF-8 decoded with replacement characters). */
const randomBytes = fc.uint8Array({ maxLength: 300 }).chain((b) => fc.constantFrom(Buffer.from(b).toString('latin1'), Buffer.from(b).toString('utf8')));

/** Shell metacharacter soup around real verbs. */
const shellSoup = fc.array(fc.oneof(fc.constantFrom(...SHELL_META), fc.constantFrom('task', 'accept', 'sim', 'resume', '--task-id', 'Task-1', 'rm', '-rf', '/', 'echo', 'cat')), { maxLength: 14 }).map((a) => a.join(' '));

/** One fuzz command with its category. */
export type Generated = { cat: string; cmd: string };

/** The command mix. */
export const commandArb: fc.Arbitrary<Generated> = fc.oneof(
  { weight: 8, arbitrary: nearValid.map((cmd) => ({ cat: 'near_valid', cmd })) },
  { weight: 4, arbitrary: progress.map((cmd) => ({ cat: 'progress', cmd })) },
  { weight: 2, arbitrary: randomBytes.map((cmd) => ({ cat: 'random_bytes', cmd })) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 120 }).map((cmd) => ({ cat: 'unicode', cmd })) },
  { weight: 1, arbitrary: fc.string({ unit: weirdChar, maxLength: 30 }).map((cmd) => ({ cat: 'unicode', cmd: `task accept --task-id ${cmd}` })) },
  { weight: 2, arbitrary: shellSoup.map((cmd) => ({ cat: 'shell_meta', cmd })) },
  { weight: 1, arbitrary: fc.constantFrom(...COMMANDS.map((c) => `${c.group} ${c.name}`), 'scratchpad read', 'company status', 'finance ledger', 'report monthly').map((cmd) => ({ cat: 'plain', cmd })) },
);

const hugeArb: fc.Arbitrary<Generated> = huge.map((cmd) => ({ cat: 'huge', cmd }));

// ---------------------------------------------------------------------------------------------------------
// Checks

/** A violation found by the fuzzer (with enough context to replay it). */
export interface Violation {
  kind: 'exception' | 'structure' | 'state' | 'invariant';
  preset: string;
  seed: number;
  /** Index of the offending command in its sequence. */
  index: number;
  command: string;
  detail: string;
  /** The sequence up to and including the offending command (truncated commands for the report). */
  replay: string[];
}

function structureProblem(r: CommandResult): string | null {
  if (r.exit !== 0 && r.exit !== 1 && r.exit !== 2) return `exit ${r.exit}`;
  if (r.ok !== (r.exit === 0)) return `ok ${r.ok} with exit ${r.exit}`;
  const text = r.text;
  if (typeof text !== 'string') return 'text is not a string';
  if (r.exit === 0) return null;
  const v = r.value as unknown;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'rejection value is not an object';
  const keys = Object.keys(v);
  const msg = (v as Record<string, unknown>)['error'];
  if (keys.length !== 1 || typeof msg !== 'string' || msg.length === 0) return `rejection value is not {"error": <message>}: ${JSON.stringify(v).slice(0, 200)}`;
  // Handler rejections print the compact JSON of the value (exit 1, and exit 2 for bad option values found
  // by the handler); parser rejections print the usage text ending with "Error: <message>".
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return 'rejection text starts like JSON but is not JSON';
    }
    if (JSON.stringify(parsed) !== JSON.stringify(v)) return 'rejection text does not match the value';
  } else if (r.exit === 1) {
    return 'exit 1 text is not JSON';
  } else if (!text.endsWith(`Error: ${msg}`)) {
    return 'exit 2 text is neither the JSON value nor ends with "Error: <message>"';
  }
  return null;
}

function invariantProblem(sim: Simulation, cfg: ExperimentConfig): string | null {
  const s = sim.state;
  const w = cfg.world;
  let ledger = 0;
  for (const e of s.ledger) {
    if (!Number.isSafeInteger(e.amountCents)) return `ledger amount ${e.amountCents} is not a safe integer`;
    ledger += e.amountCents;
  }
  if (!Number.isSafeInteger(s.fundsCents)) return `funds ${s.fundsCents} not a safe integer`;
  if (s.fundsCents !== s.initialFundsCents + ledger) return `funds ${s.fundsCents} != initial ${s.initialFundsCents} + ledger ${ledger}`;
  for (const d of DOMAINS) {
    const p = s.prestige[d];
    if (!(p.gte(w.prestige_min) && p.lte(w.prestige_max))) return `prestige ${d} = ${p.toString()} outside [${w.prestige_min}, ${w.prestige_max}]`;
  }
  for (const c of s.clients) if (!(c.trust.gte(0) && c.trust.lte(w.trust_max))) return `trust ${c.name} = ${c.trust.toString()} outside [0, ${w.trust_max}]`;
  for (const e of s.employees) {
    if (e.salaryCents < 0) return `negative salary ${e.name}`;
    for (const d of DOMAINS) if (e.rates[d].isNeg()) return `negative rate ${e.name} ${d}`;
  }
  for (const t of s.tasks) {
    if (t.rewardCents < 0) return `negative reward ${t.title}`;
    for (const r of t.reqs) {
      if (r.required.isNeg() || r.completed.isNeg()) return `negative quantity in ${t.title}`;
      if (r.completed.gt(r.required)) return `completed > required in ${t.title}`;
    }
  }
  if (s.simTime > s.horizonEnd) return 'sim time past the horizon';
  if (s.scratchpad.length > DEFAULT_LIMITS.maxScratchpadChars) return `scratchpad ${s.scratchpad.length} chars over the limit`;
  return null;
}

/** Verbs that may change the state (accepted read-only commands keep the fingerprint: a write would show later). */
const MUTATING = new Set(COMMANDS.filter((c) => c.mutates).map((c) => `${c.group} ${c.name}`));

function fingerprint(sim: Simulation): string {
  return JSON.stringify([sim.cfg, sim.state]);
}

// ---------------------------------------------------------------------------------------------------------
// Runner

/** Options of `fuzzCommands`. */
export interface CommandFuzzOptions {
  /** Commands to run (at least; whole sequences). */
  commands: number;
  /** fast-check seed. */
  seed?: number;
  /** Commands per simulation (default 250). */
  sequenceLength?: number;
  /** Compare the fingerprint after 1 in this many parse-level rejections (default 16; 1 = all). */
  parseSample?: number;
  /** Stop early after this long (the report says so). */
  timeLimitMs?: number;
  /** Presets cycled through (default: default, corrected, multi). */
  presets?: string[];
}

/** The command fuzzing report. */
export interface CommandFuzzReport {
  commands: number;
  sequences: number;
  seed: number;
  by_category: Record<string, number>;
  outcomes: { accepted: number; help: number; rejected_exit1: number; rejected_exit2_handler: number; rejected_parse: number };
  state_comparisons: number;
  exceptions: number;
  structure_violations: number;
  state_violations: number;
  invariant_violations: number;
  examples: Violation[];
  elapsed_s: number;
  commands_per_sec: number;
  stopped_early: boolean;
}

/** Run the command fuzzer; violations are collected (with replays), never thrown. */
export function fuzzCommands(opts: CommandFuzzOptions): CommandFuzzReport {
  const seed = opts.seed ?? 20250101;
  const seqLen = opts.sequenceLength ?? 250;
  const parseSample = Math.max(1, opts.parseSample ?? 16);
  const presetNames = opts.presets ?? ['default', 'corrected', 'multi'];
  const cfgs = presetNames.map((p) => [p, loadPreset(p)] as const);
  const sequences = Math.ceil(opts.commands / seqLen);
  const t0 = performance.now();
  const deadline = opts.timeLimitMs !== undefined ? t0 + opts.timeLimitMs : Number.POSITIVE_INFINITY;
  const rep: CommandFuzzReport = {
    commands: 0,
    sequences: 0,
    seed,
    by_category: {},
    outcomes: { accepted: 0, help: 0, rejected_exit1: 0, rejected_exit2_handler: 0, rejected_parse: 0 },
    state_comparisons: 0,
    exceptions: 0,
    structure_violations: 0,
    state_violations: 0,
    invariant_violations: 0,
    examples: [],
    elapsed_s: 0,
    commands_per_sec: 0,
    stopped_early: false,
  };
  let parseCount = 0;
  const seqArb = fc.tuple(
    fc.nat({ max: cfgs.length - 1 }),
    fc.integer({ min: 1, max: 400 }),
    fc.array(fc.oneof({ weight: 40, arbitrary: commandArb }, { weight: 1, arbitrary: hugeArb }), { minLength: seqLen, maxLength: seqLen }),
  );
  fc.check(
    fc.property(seqArb, ([pi, simSeed, cmds]) => {
      if (performance.now() > deadline) {
        rep.stopped_early = true;
        return true;
      }
      const [preset, cfg] = cfgs[pi] as readonly [string, ExperimentConfig];
      let sim = Simulation.create(cfg, { seed: simSeed });
      let fp = fingerprint(sim);
      let fpAt = -1; // index of the command after which fp was taken
      const note = (kind: Violation['kind'], index: number, detail: string): void => {
        if (rep.examples.length < 20) {
          rep.examples.push({ kind, preset, seed: simSeed, index, command: (cmds[index] as Generated).cmd.slice(0, 300), detail, replay: cmds.slice(0, index + 1).map((c) => c.cmd.slice(0, 300)) });
        }
      };
      const compare = (i: number): void => {
        rep.state_comparisons++;
        const now = fingerprint(sim);
        if (now !== fp) {
          rep.state_violations++;
          note('state', i, `the state differs from its fingerprint taken after command ${fpAt} (only rejected or read-only commands ran since)`);
          fp = now;
          fpAt = i;
        }
      };
      cmds.forEach(({ cat, cmd }, i) => {
        rep.commands++;
        rep.by_category[cat] = (rep.by_category[cat] ?? 0) + 1;
        let r: CommandResult;
        try {
          r = sim.execute(cmd);
          void r.text; // the lazy text must not throw either
        } catch (e) {
          rep.exceptions++;
          note('exception', i, e instanceof Error ? `${e.name}: ${e.message}` : String(e));
          sim = Simulation.create(cfg, { seed: simSeed }); // the state may be torn: start over
          fp = fingerprint(sim);
          fpAt = i;
          return;
        }
        const sp = structureProblem(r);
        if (sp !== null) {
          rep.structure_violations++;
          note('structure', i, sp);
        }
        if (r.exit === 0) {
          if (r.value === null) rep.outcomes.help++;
          else rep.outcomes.accepted++;
          if (r.verb !== null && MUTATING.has(r.verb)) {
            const inv = invariantProblem(sim, cfg);
            if (inv !== null) {
              rep.invariant_violations++;
              note('invariant', i, inv);
            }
            fp = fingerprint(sim);
            fpAt = i;
          }
          return;
        }
        const parseLevel = r.verb === null;
        if (parseLevel) rep.outcomes.rejected_parse++;
        else if (r.exit === 1) rep.outcomes.rejected_exit1++;
        else rep.outcomes.rejected_exit2_handler++;
        if (parseLevel && parseCount++ % parseSample !== 0) return;
        compare(i);
      });
      compare(cmds.length - 1);
      rep.sequences++;
      return true;
    }),
    { numRuns: sequences, seed },
  );
  rep.elapsed_s = round((performance.now() - t0) / 1000, 2);
  rep.commands_per_sec = round(rep.commands / Math.max(1e-9, rep.elapsed_s), 0);
  return rep;
}
