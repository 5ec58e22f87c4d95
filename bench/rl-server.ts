/**
 * The server's own work on the Python RL path, without sockets: the request payloads the Python bindings send go
 * through `ProtocolHandler.beginPayload` (decode, validate, route, step, encode; a `step_batch` run to its end by
 * `BatchJob.run`, which keeps no decoded results) on a `SessionManager`, as in the server. Two workloads, timed in CPU µs (process.cpuUsage) per environment step:
 *
 * - `discrete`: what `YCBenchDiscreteVectorEnv.step` sends at `--sessions` Discrete sessions: one binary
 *   `step_batch` (each session's first valid action, as bench_step.py's policy) and, pipelined, one `reset` per
 *   sub-environment whose episode ended on the previous step (next-step autoreset, new worlds);
 * - `lockstep`: one JSON `step` of "company status" (bench_step.py's `client.step`);
 * - `batch_binary`: one binary `step_batch` of "company status" over `--sessions` text sessions (bench_step.py's
 *   `step_batch_arrays`); `batch_json`: the same as a JSON `step_batch` (bench_step.py's `step_batch`).
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process, in turn (each goes first in every
 * other round), and the speedup is the median of the per-round ratios, so load on the machine hits both alike. Both builds play the same
 * requests on the same worlds (sequential session ids), so every reply of a round is compared byte for byte (frames
 * and binary arrays; the run fails on the first difference).
 *
 *   npm run build && node dist/bench/rl-server.js [--rounds 9] [--sessions 64] [--only discrete|lockstep|batch_binary|batch_json] [--against ../other-checkout]
 */
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { flagValue, pairedRounds } from './harness.js';

interface Workload {
  /** The frames of every reply since it was last emptied (the JSON frame, then a binary reply's arrays). */
  readonly replies: (string | Buffer)[];
  /** Run `n` units; the number of environment steps they took. */
  discrete(n: number): number;
  lockstep(n: number): number;
  batch_binary(n: number): number;
  batch_json(n: number): number;
}

const enc = (v: unknown) => Buffer.from(JSON.stringify(v), 'utf8');

async function setup(root: string, sessions: number): Promise<Workload> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const { SessionManager } = await load('src/server/sessions.js');
  const { ProtocolHandler, BatchJob } = await load('src/server/protocol-handler.js');
  const { listPresets } = await load('src/config/load.js');
  const presets = listPresets();
  const sm = new SessionManager({ presets, maxSessions: 4 * sessions + 8, maxSessionsPerClient: 4 * sessions + 8, idleTimeoutMs: 0 });
  const h = new ProtocolHandler(sm, { version: '0', presets, maxMessageBytes: 1 << 20 }, {});
  let id = 1;
  const replies: (string | Buffer)[] = [];
  const call = (req: Record<string, unknown>) => {
    const begun = h.beginPayload(enc({ v: 1, id: id++, ...req }), 1 << 20, 'client');
    const r = begun instanceof BatchJob ? begun.run(Number.POSITIVE_INFINITY) : begun;
    if (!r.reply.ok) throw new Error(`${req['op']}: ${JSON.stringify(r.reply.error)}`);
    // Kept by reference only (compared after the round, outside the timing).
    replies.push(r.body, ...(r.arrays ?? []));
    return r;
  };
  const opts = { text: false, actions: 'discrete', market_slots: 10, task_slots: 4 };
  // Discrete sessions.
  const ids: string[] = [];
  const masks: Uint8Array[] = [];
  let nActions = 0;
  let seed = 0;
  for (let i = 0; i < sessions; i++) {
    const r = call({ op: 'reset', seed: seed++, preset: 'default', options: opts }).reply.result as { session: string; observation: { discrete: { mask: boolean[] } }; info: { discrete_spec: { n_actions: number } } };
    ids.push(r.session);
    nActions = r.info.discrete_spec.n_actions;
    masks.push(Uint8Array.from(r.observation.discrete.mask, (m) => (m ? 1 : 0)));
  }
  let ended = new Uint8Array(sessions);
  const discrete = (n: number): number => {
    let steps = 0;
    for (let k = 0; k < n; k++) {
      const live: number[] = [];
      const again: number[] = [];
      for (let i = 0; i < sessions; i++) (ended[i] ? again : live).push(i);
      const entries = live.map((i) => ({ session: ids[i], action: Math.max(0, (masks[i] as Uint8Array).indexOf(1)) }));
      const b = call({ op: 'step_batch', steps: entries, encoding: 'binary' });
      const arrays = (b.reply.result as { arrays: { name: string }[] }).arrays;
      const frames = b.arrays as Buffer[];
      const col = (name: string) => frames[arrays.findIndex((a) => a.name === name)] as Buffer;
      const term = col('terminated');
      const trunc = col('truncated');
      const mask = col('mask');
      const next = new Uint8Array(sessions);
      live.forEach((i, row) => {
        next[i] = term[row] || trunc[row] ? 1 : 0;
        masks[i] = new Uint8Array(mask.subarray(row * nActions, (row + 1) * nActions));
      });
      for (const i of again) {
        const r = call({ op: 'reset', seed: seed++, preset: 'default', session: ids[i], options: opts }).reply.result as { observation: { discrete: { mask: boolean[] } } };
        masks[i] = Uint8Array.from(r.observation.discrete.mask, (m) => (m ? 1 : 0));
      }
      ended = next;
      steps += sessions;
    }
    return steps;
  };
  // One text session for lockstep company status.
  const text = (call({ op: 'reset', seed: 1, preset: 'default', options: { stall_steps: 0 } }).reply.result as { session: string }).session;
  const lockstep = (n: number): number => {
    for (let k = 0; k < n; k++) call({ op: 'step', session: text, action: 'company status' });
    return n;
  };
  const texts: string[] = [];
  for (let i = 0; i < sessions; i++) texts.push((call({ op: 'reset', seed: i, preset: 'default', options: { stall_steps: 0 } }).reply.result as { session: string }).session);
  const batchSteps = texts.map((session) => ({ session, action: 'company status' }));
  const batch_binary = (n: number): number => {
    for (let k = 0; k < n; k++) call({ op: 'step_batch', steps: batchSteps, encoding: 'binary' });
    return n * sessions;
  };
  const batch_json = (n: number): number => {
    for (let k = 0; k < n; k++) call({ op: 'step_batch', steps: batchSteps });
    return n * sessions;
  };
  replies.length = 0;
  return { replies, discrete, lockstep, batch_binary, batch_json };
}

/** Fail unless the two builds' replies of a round are the same bytes. */
function compareReplies(w: string, a: readonly (string | Buffer)[], b: readonly (string | Buffer)[]): void {
  const bytes = (x: string | Buffer) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : x);
  if (a.length !== b.length) throw new Error(`${w}: ${a.length} reply frames here, ${b.length} in the other build`);
  for (let i = 0; i < a.length; i++) {
    const x = bytes(a[i] as string | Buffer);
    const y = bytes(b[i] as string | Buffer);
    if (!x.equals(y)) throw new Error(`${w}: reply frame ${i} differs between the builds:\n${x.toString('utf8', 0, 2000)}\n${y.toString('utf8', 0, 2000)}`);
  }
}

function cpuUs(f: () => number): number {
  const c = process.cpuUsage();
  const steps = f();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / steps;
}


export async function rlServerBench(rounds: number, sessions: number, against: string | null, only: string | null = null): Promise<Record<string, number>> {
  const self = resolve(new URL('../..', import.meta.url).pathname);
  const here = await setup(self, sessions);
  const other = against !== null ? await setup(resolve(against), sessions) : null;
  const units = { discrete: 30, lockstep: 3000, batch_binary: 50, batch_json: 50 } as const;
  const out: Record<string, number> = { rounds, sessions };
  for (const w of ['discrete', 'lockstep', 'batch_binary', 'batch_json'] as const) {
    if (only !== null && w !== only) continue;
    for (let k = 0; k < 2; k++) {
      here[w](units[w]);
      other?.[w](units[w]);
    }
    here.replies.length = 0;
    if (other !== null) other.replies.length = 0;
    const timeHere = () => {
      here.replies.length = 0;
      return cpuUs(() => here[w](units[w]));
    };
    const timeOther = (o: Workload) => () => {
      o.replies.length = 0;
      return cpuUs(() => o[w](units[w]));
    };
    const r = pairedRounds(rounds, timeHere, other ? timeOther(other) : null, other ? () => compareReplies(w, here.replies, other.replies) : undefined);
    here.replies.length = 0;
    out[`${w}_cpu_us_per_env_step`] = +r.here.toFixed(2);
    if (r.other !== null && r.speedup !== null) {
      out[`against_${w}_cpu_us_per_env_step`] = +r.other.toFixed(2);
      out[`${w}_speedup_vs_against`] = +r.speedup.toFixed(2);
      out[`${w}_replies_identical`] = 1;
    }
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const val = (name: string) => flagValue(argv, name);
  const r = await rlServerBench(Number(val('--rounds') ?? 9), Number(val('--sessions') ?? 64), val('--against'), val('--only'));
  console.log(JSON.stringify(r));
}
