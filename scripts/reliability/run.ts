/**
 * The reliability suite (GitHub issue #6): fuzzing of the command layer and of the protocol, load,
 * faults, security and limits, with a JSON report on stdout (progress on stderr).
 *
 *   npx tsc -p scripts/reliability/tsconfig.json
 *   node --expose-gc dist/scripts/reliability/run.js --quick            (about a minute)
 *   node --expose-gc dist/scripts/reliability/run.js --full [--out reliability-report.json]
 *   node --expose-gc dist/scripts/reliability/run.js --full --only commands,load
 *
 * Sections: commands, protocol, load, killed_clients, server_restart, slow_clients, security, limits, abuse
 * (issue 12's attacks: absurd snapshots, large restores, many big batches, a client that never reads).
 * Exit status 0 when every check passes, 1 otherwise (the report says which).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { pathToFileURL } from 'node:url';
import { abuse, type AbuseParams, type AbuseReport } from './lib/abuse.js';
import { fuzzCommands, type CommandFuzzReport } from './lib/cmdfuzz.js';
import { killedClients, serverRestart, slowClients, type KilledClientsReport, type ServerRestartReport, type SlowClientsReport } from './lib/faults.js';
import { simulationLimits, snapshotSizes, wireLimits, type LimitCheck } from './lib/limits.js';
import { runLoad, type LoadReport } from './lib/load.js';
import { fuzzProtocol, type ProtocolFuzzReport } from './lib/protofuzz.js';
import { bindPolicy, curveIntruders, sessionCapRace, type BindPolicyReport, type CurveIntrudersReport, type SessionCapReport } from './lib/security.js';
import { round } from './lib/util.js';

/** Sizes of one mode. */
export interface ModeParams {
  commands: number;
  frames: number;
  load: { clients: number; steps: number; workers: number };
  killed: { sessions: number; cycles: number; idleTimeoutMs: number };
  restart: { clients: number; steps: number; killEvery: number; kills: number; snapshotEvery: number };
  slow: { steps: number; batchSize: number; compareUnsliced: boolean };
  curve: { intruders: number; steps: number };
  cap: { maxSessions: number; clients: number; resetsPerClient: number };
  controlSteps: number;
  abuse: AbuseParams;
}

export const MODES: Record<'quick' | 'full', ModeParams> = {
  quick: {
    commands: 5_000,
    frames: 2_000,
    load: { clients: 20, steps: 100, workers: 1 },
    killed: { sessions: 20, cycles: 2, idleTimeoutMs: 500 },
    restart: { clients: 4, steps: 100, killEvery: 150, kills: 1, snapshotEvery: 8 },
    slow: { steps: 100, batchSize: 512, compareUnsliced: false },
    curve: { intruders: 2, steps: 150 },
    cap: { maxSessions: 40, clients: 10, resetsPerClient: 8 },
    controlSteps: 200,
    abuse: { batchClients: 8, restores: 50, floodRequests: 2000, hijackTries: 300, turnReads: 256, recordedSteps: 20000 },
  },
  full: {
    commands: 1_000_000,
    frames: 100_000,
    load: { clients: 200, steps: 1000, workers: 2 },
    killed: { sessions: 200, cycles: 10, idleTimeoutMs: 2000 },
    restart: { clients: 32, steps: 1000, killEvery: 5000, kills: 5, snapshotEvery: 32 },
    slow: { steps: 1000, batchSize: 4096, compareUnsliced: true },
    curve: { intruders: 10, steps: 2000 },
    cap: { maxSessions: 1024, clients: 64, resetsPerClient: 20 },
    controlSteps: 5000,
    abuse: { batchClients: 90, restores: 1500, floodRequests: 20000, hijackTries: 3000, turnReads: 256, recordedSteps: 200000 },
  },
};

export const SECTIONS = ['commands', 'protocol', 'load', 'killed_clients', 'server_restart', 'slow_clients', 'security', 'limits', 'abuse'] as const;
export type Section = (typeof SECTIONS)[number];

/** The report. */
export interface ReliabilityReport {
  mode: string;
  started: string;
  machine: { cpus: number; model: string; node: string; memory_gib: number; load_average_at_start: number[] };
  sections: {
    commands?: CommandFuzzReport;
    protocol?: ProtocolFuzzReport;
    load?: LoadReport;
    killed_clients?: KilledClientsReport;
    server_restart?: ServerRestartReport;
    slow_clients?: SlowClientsReport;
    security?: { bind_policy: BindPolicyReport; curve_intruders: CurveIntrudersReport; session_cap: SessionCapReport };
    limits?: { checks: LimitCheck[]; snapshot_sizes: ReturnType<typeof snapshotSizes> };
    abuse?: AbuseReport;
  };
  summary: {
    inputs_tried: { commands: number; frames: number };
    exceptions: number;
    server_crashes: number;
    violations: number;
    failed_checks: string[];
    load_latency_ms: { p50: number; p99: number } | null;
    sessions: { load_concurrent: number; killed_client_sessions_reaped: number; restored_after_server_kills: number };
    server_memory_mib: { load_before: number; load_after: number; killed_clients_baseline: number; killed_clients_after_last_reap: number } | null;
    determinism: { compared: number; identical: number } | null;
    pass: boolean;
  };
  elapsed_s: number;
}

/** Bounds the suite asserts on top of "zero errors" (generous: the machine is shared). */
export const BOUNDS = {
  /** Lockstep p99 while another client sends huge (sliced) batches, in ms. */
  slowClientP99Ms: 1000,
  /** Heap growth between the first and the last kill/reap cycle, in MiB. */
  heapGrowthMiB: 4,
};

function check(failed: string[], cond: boolean, what: string): void {
  if (!cond) failed.push(what);
}

/** Run the chosen sections of a mode; `log` gets progress lines. */
export async function runReliability(mode: 'quick' | 'full', only: readonly Section[] = SECTIONS, log: (s: string) => void = () => undefined): Promise<ReliabilityReport> {
  const p = MODES[mode];
  const t0 = performance.now();
  const cpu = cpus();
  const rep: ReliabilityReport = {
    mode,
    started: new Date().toISOString(),
    machine: { cpus: cpu.length, model: cpu[0]?.model ?? '?', node: process.version, memory_gib: round(totalmem() / 2 ** 30, 1), load_average_at_start: loadavg().map((x) => round(x, 2)) },
    sections: {},
    summary: {
      inputs_tried: { commands: 0, frames: 0 },
      exceptions: 0,
      server_crashes: 0,
      violations: 0,
      failed_checks: [],
      load_latency_ms: null,
      sessions: { load_concurrent: 0, killed_client_sessions_reaped: 0, restored_after_server_kills: 0 },
      server_memory_mib: null,
      determinism: null,
      pass: false,
    },
    elapsed_s: 0,
  };
  const f = rep.summary.failed_checks;
  const s = rep.sections;
  const timed = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
    const t = performance.now();
    log(`${name}...`);
    const r = await fn();
    log(`${name}: ${round((performance.now() - t) / 1000, 1)} s`);
    return r;
  };
  if (only.includes('commands')) {
    const r = await timed('commands', () => fuzzCommands({ commands: p.commands, seed: 20250101 }));
    s.commands = r;
    rep.summary.inputs_tried.commands = r.commands;
    rep.summary.exceptions += r.exceptions;
    rep.summary.violations += r.structure_violations + r.state_violations + r.invariant_violations;
    check(f, r.exceptions === 0, 'commands: no exception escapes');
    check(f, r.structure_violations === 0, 'commands: every rejection is a structured error');
    check(f, r.state_violations === 0, 'commands: rejected commands leave the state unchanged');
    check(f, r.invariant_violations === 0, 'commands: invariants hold');
  }
  if (only.includes('protocol')) {
    const r = await timed('protocol', () => fuzzProtocol({ frames: p.frames, seed: 6, controlSteps: p.controlSteps }));
    s.protocol = r;
    rep.summary.inputs_tried.frames = r.frames;
    rep.summary.violations += r.violations;
    if (!r.server.alive) rep.summary.server_crashes++;
    check(f, r.server.alive && r.server.hello_after, 'protocol: the server stays up and answers');
    check(f, r.violations === 0, 'protocol: every answer has the right envelope, schema, id and code');
    check(f, r.internal_errors === 0, 'protocol: no internal errors');
    check(f, r.control.identical_to_in_process, 'protocol: the control session is byte-identical to in-process');
  }
  if (only.includes('load')) {
    const r = await timed('load', () => runLoad(p.load));
    s.load = r;
    if (r.server.crashed) rep.summary.server_crashes++;
    rep.summary.load_latency_ms = { p50: r.latency_ms.p50, p99: r.latency_ms.p99 };
    rep.summary.sessions.load_concurrent = r.clients;
    rep.summary.server_memory_mib = { load_before: r.server.before.heap_used_mib, load_after: r.server.after.heap_used_mib, killed_clients_baseline: 0, killed_clients_after_last_reap: 0 };
    rep.summary.determinism = { compared: r.determinism.compared, identical: r.determinism.identical };
    check(f, r.errors === 0, 'load: zero errors');
    check(f, r.total_steps === p.load.clients * p.load.steps, 'load: every step answered');
    check(f, r.determinism.identical === r.determinism.compared, 'load: trajectories byte-identical to in-process');
  }
  if (only.includes('killed_clients')) {
    const r = await timed('killed_clients', () => killedClients(p.killed));
    s.killed_clients = r;
    if (!r.server_alive) rep.summary.server_crashes++;
    rep.summary.sessions.killed_client_sessions_reaped = r.cycles.reduce((a, c) => a + c.sessions_live_before_kill - c.sessions_after_reap, 0);
    const mem = rep.summary.server_memory_mib ?? { load_before: 0, load_after: 0, killed_clients_baseline: 0, killed_clients_after_last_reap: 0 };
    mem.killed_clients_baseline = r.baseline.heap_used_mib;
    mem.killed_clients_after_last_reap = r.cycles[r.cycles.length - 1]?.heap_used_mib_after ?? 0;
    rep.summary.server_memory_mib = mem;
    check(f, r.cycles.every((c) => c.sessions_after_reap === 1), 'killed clients: their sessions are reaped (only the control session stays)');
    check(f, r.cycles.every((c) => c.reaped_after_ms <= 2 * p.killed.idleTimeoutMs + 2000), 'killed clients: reaped within ~1.25x the idle timeout');
    check(f, r.heap_growth_mib_first_to_last <= BOUNDS.heapGrowthMiB, `killed clients: heap growth over the cycles <= ${BOUNDS.heapGrowthMiB} MiB`);
    check(f, r.control_identical, 'killed clients: the control session is byte-identical to in-process');
  }
  if (only.includes('server_restart')) {
    const r = await timed('server_restart', () => serverRestart(p.restart));
    s.server_restart = r;
    rep.summary.sessions.restored_after_server_kills = r.recoveries;
    check(f, r.kills === p.restart.kills && r.recoveries > 0, 'server restart: the server was killed and clients recovered');
    check(f, r.all_identical, 'server restart: recovered trajectories are byte-identical to in-process');
  }
  if (only.includes('slow_clients')) {
    const r = await timed('slow_clients', () => slowClients(p.slow));
    s.slow_clients = r;
    const conds = [r.alone, r.non_reading_flood_hello, r.non_reading_flood_browse, r.huge_batches_read, r.huge_batches_pipelined].filter((c) => c !== undefined);
    if (conds.some((c) => !c.server_alive)) rep.summary.server_crashes++;
    check(f, r.control_identical, 'slow clients: the lockstep trajectory is unchanged');
    check(f, [r.huge_batches_read, r.huge_batches_pipelined].every((c) => c === undefined || c.latency_ms.p99 <= BOUNDS.slowClientP99Ms), `slow clients: lockstep p99 next to huge batches <= ${BOUNDS.slowClientP99Ms} ms`);
    check(f, [r.non_reading_flood_hello, r.non_reading_flood_browse].every((c) => c === undefined || c.latency_ms.p99 <= BOUNDS.slowClientP99Ms), `slow clients: lockstep p99 next to a non-reading flood <= ${BOUNDS.slowClientP99Ms} ms`);
  }
  if (only.includes('security')) {
    const bind = bindPolicy();
    const curve = await timed('security (CURVE intruders)', () => curveIntruders(p.curve));
    const cap = await timed('security (session cap)', () => sessionCapRace(p.cap));
    s.security = { bind_policy: bind, curve_intruders: curve, session_cap: cap };
    if (!curve.server_alive) rep.summary.server_crashes++;
    check(f, bind.default_is_loopback, 'security: the default endpoint is loopback');
    check(f, bind.wrongly_allowed.length === 0 && bind.wrongly_allowed_with_keys.length === 0 && bind.wrongly_refused.length === 0, 'security: bind policy');
    check(f, curve.intruder_replies === 0, 'security: clients without the right server key get no reply');
    check(f, curve.requests_reaching_server === curve.good_client_requests, 'security: nothing from intruders reaches the server');
    check(f, curve.good_client_identical, 'security: the good client is unaffected (byte-identical)');
    check(f, cap.created === cap.max_sessions && cap.refused_session_limit === cap.attempts - cap.max_sessions && cap.other_errors.length === 0, 'security: the session cap holds under concurrent resets');
    check(f, cap.created_after_closing === Math.min(5, cap.max_sessions), 'security: closing sessions frees exactly that many slots');
  }
  if (only.includes('limits')) {
    const checks = [...simulationLimits(), ...(await timed('limits', () => wireLimits()))];
    s.limits = { checks, snapshot_sizes: snapshotSizes() };
    for (const c of checks) check(f, c.ok, `limits: ${c.name}`);
  }
  if (only.includes('abuse')) {
    const r = await timed('abuse', () => abuse(p.abuse));
    s.abuse = r;
    for (const a of r.attacks) {
      check(f, a.server_alive, `abuse: the server survives "${a.attack}"`);
      check(f, a.worst_fresh_hello_ms < 1000, `abuse: a fresh client is answered within 1 s during "${a.attack}"`);
      check(f, a.ok, `abuse: "${a.attack}" is stopped by its limit`);
    }
  }

  rep.summary.pass = f.length === 0 && rep.summary.server_crashes === 0;
  rep.elapsed_s = round((performance.now() - t0) / 1000, 1);
  return rep;
}

function parseArgs(argv: string[]): { mode: 'quick' | 'full'; only: Section[]; out: string | null } {
  let mode: 'quick' | 'full' = 'quick';
  let only: Section[] = [...SECTIONS];
  let out: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') mode = 'quick';
    else if (a === '--full') mode = 'full';
    else if (a === '--only') {
      const list = (argv[++i] ?? '').split(',').filter((x) => x !== '');
      const bad = list.filter((x) => !(SECTIONS as readonly string[]).includes(x));
      if (bad.length > 0) throw new Error(`unknown section(s) ${bad.join(', ')} (sections: ${SECTIONS.join(', ')})`);
      only = list as Section[];
    } else if (a === '--out') out = argv[++i] ?? null;
    else throw new Error(`unknown argument ${a} (usage: run.js --quick|--full [--only a,b] [--out FILE])`);
  }
  return { mode, only, out };
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  }
  const rep = await runReliability(args.mode, args.only, (line) => process.stderr.write(`[reliability] ${line}\n`));
  const text = JSON.stringify(rep, null, 2);
  if (args.out !== null) writeFileSync(args.out, text + '\n');
  process.stdout.write(text + '\n');
  process.exit(rep.summary.pass ? 0 : 1);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) void main();
