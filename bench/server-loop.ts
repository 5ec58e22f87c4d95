/**
 * The server's loop without sockets: the real `Server` (its loop: receive, enqueue, serveNext, begin, deliver) driven
 * through an in-process stand-in for its transport by a lockstep client that sends the next request when the reply
 * to the previous one came, as `Client.step` does. No kernel, no I/O threads: what is left is the main thread's own
 * work per message, timed in CPU µs (process.cpuUsage, this whole process: the fake client's share is the same for
 * every build) per request/reply round trip.
 *
 * Transports:
 * - `router`: a zeromq.js `Router` stand-in: `receive` resolves with `[routing id, payload]` Buffers, `send` takes the
 *   reply frames as the server hands them over (a JSON reply's body is a string);
 * - `pipe`: the real `PipeRouter` (src/server/pipe.ts), its requests fed to its data handler as the bytes the pipe
 *   would deliver and its output (the stream, and the direct write of builds that have one) replaced by a sink that
 *   copies what it gets (its framing, parsing and encoding are timed; the write system call is not).
 * A request reaches the server from a macrotask (setImmediate), as data from a socket or a pipe does, so the loop
 * parks in its pending receive between messages as it does in production.
 *
 * Workloads: `status` (one JSON `step` of "company status", bench_step.py's `client.step`), `batch` (a JSON
 * `step_batch` of "company status" over 64 sessions, bench_step.py's `client.step_batch`: per message is per batch)
 * and `hello` (no environment work: the loop and the protocol envelope alone). `handler_*` is the same request through
 * `ProtocolHandler.handlePayload` alone (what bench/rl-server.ts times), so `loop - handler` is the loop's overhead.
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process, rounds alternating; the speedup
 * is the median of the per-round ratios. Every reply of both builds is compared byte for byte (the run fails when
 * they differ).
 *
 *   npm run build && node dist/bench/server-loop.js [--rounds 9] [--n 4000] [--only router|pipe] [--workload status|batch|hello] [--handler 0] [--build DIR] [--against ../other-checkout]
 *
 * `--build DIR` times the build in DIR instead of this one.
 * Under `valgrind --tool=callgrind` (instruction counts, independent of the machine's load), run one build without
 * `--against` at two `--n` and divide the difference by the messages between them ((2 + rounds) x n per workload).
 */
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { flagValue, median, medianPairRatio } from './harness.js';

type Frames = (Buffer | string)[];

/** The client's end of a fake transport: run `n` lockstep round trips of `request(i)`; the replies' bytes. */
interface Driver {
  run(n: number, request: (i: number) => Buffer): Promise<Buffer[]>;
}

/**
 * The lockstep client both fakes share: `run` sends request 0 from a macrotask, and each reply (`replied`) sends the
 * next one the same way until `n` came back. `deliver` hands a request to the fake's server side.
 */
abstract class LockstepClient implements Driver {
  private left = 0;
  private next: (i: number) => Buffer = () => Buffer.alloc(0);
  private i = 0;
  private replies: Buffer[] = [];
  private done: (() => void) | null = null;
  protected readonly push = (): void => this.deliver(this.next(this.i++));

  protected abstract deliver(request: Buffer): void;

  /** A reply's bytes came back: keep them, then send the next request (or finish the run). */
  protected replied(reply: Buffer): void {
    this.replies.push(reply);
    if (--this.left > 0) setImmediate(this.push);
    else this.done?.();
  }

  run(n: number, request: (i: number) => Buffer): Promise<Buffer[]> {
    this.next = request;
    this.i = 0;
    this.left = n;
    this.replies = [];
    return new Promise((res) => {
      this.done = () => res(this.replies);
      setImmediate(this.push);
    });
  }
}

const ROUTING_ID = Buffer.from('c0123456789abcdef0123456789abcdef', 'latin1');

function replyBytes(frames: readonly (Buffer | string)[]): Buffer {
  return Buffer.concat(frames.map((f) => (typeof f === 'string' ? Buffer.from(f, 'utf8') : f)));
}

/** A zeromq.js Router stand-in (the subset of `Transport` in src/server/server.ts). */
class FakeRouter extends LockstepClient {
  closed = false;
  private queue: Buffer[][] = [];
  private waiting: { resolve: (m: Buffer[]) => void; reject: (e: Error) => void } | null = null;
  protected deliver(request: Buffer): void {
    const m = [Buffer.from(ROUTING_ID), request];
    const w = this.waiting;
    if (w !== null) {
      this.waiting = null;
      w.resolve(m);
    } else this.queue.push(m);
  };

  get readable(): boolean {
    return this.queue.length > 0;
  }

  receive(): Promise<Buffer[]> {
    const m = this.queue.shift();
    if (m !== undefined) return Promise.resolve(m);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  send(frames: Frames): Promise<void> {
    this.replied(replyBytes(frames.slice(1)));
    return Promise.resolve();
  }

  unbindSync(): void {}

  close(): void {
    this.closed = true;
    this.waiting?.reject(new Error('closed'));
    this.waiting = null;
  }
}

interface PipeLike {
  output: unknown;
  /** Builds that write the output pipe directly (not through the stream) do it with this. */
  writeNow?: (buf: Buffer, length: number) => number;
  onData(chunk: Buffer): void;
  close(): void;
}

/** The real PipeRouter, fed bytes directly and writing into a sink. */
class FakePipe extends LockstepClient {
  protected deliver(request: Buffer): void {
    this.router.onData(this.encode([ROUTING_ID, request]));
  }

  constructor(
    readonly router: PipeLike,
    private readonly encode: (f: Frames) => Buffer,
  ) {
    super();
    // What reaches the pipe is copied (a build may reuse its buffer), by either way it is written.
    const written = (buf: Buffer): void => this.replied(Buffer.from(buf));
    if ('writeNow' in router) {
      router.writeNow = (buf, length) => {
        written(buf.subarray(0, length));
        return length;
      };
    }
    router.output = {
      writableLength: 0,
      write(buf: Buffer) {
        written(buf);
        return true;
      },
      end() {},
      destroy() {},
      on() {},
    };
  }
}

interface Build {
  driver: Driver;
  handle(payload: Buffer): void;
  /** The session of the lockstep workloads, then those of `batch` (`BATCH_SESSIONS` in all). */
  sessions: string[];
  close(): Promise<void>;
}

let fifoDir: string | null = null;
function fifoFd(): number {
  fifoDir ??= mkdtempSync(join(tmpdir(), 'server-loop-'));
  const p = join(fifoDir, `f${Math.random().toString(36).slice(2)}`);
  execFileSync('mkfifo', [p]);
  return openSync(p, 'r+');
}

async function setup(root: string, transport: 'router' | 'pipe'): Promise<Build> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const { Server, memoryGuard } = await load('src/server/server.js');
  const { SessionManager } = await load('src/server/sessions.js');
  const { ProtocolHandler } = await load('src/server/protocol-handler.js');
  const { PipeRouter, encodeMessage } = await load('src/server/pipe.js');
  const { listPresets } = await load('src/config/load.js');
  const presets = listPresets();
  const maxMessageBytes = 8 << 20;
  // As Server.start builds them (sequential session ids: the replies of two builds compare byte for byte).
  const sessions = new SessionManager({ presets, idTag: '', idleTimeoutMs: 0 });
  const guard = memoryGuard(undefined);
  const handler = new ProtocolHandler(sessions, { version: '0', presets, maxMessageBytes }, { validateReplies: false, admit: () => guard() });
  let socket: unknown;
  let driver: Driver;
  if (transport === 'router') {
    const r = new FakeRouter();
    socket = r;
    driver = r;
  } else {
    const p = new PipeRouter(fifoFd(), fifoFd(), maxMessageBytes * 4);
    socket = p;
    driver = new FakePipe(p, encodeMessage);
  }
  // The constructor Server.start calls (private in TypeScript): the server's loop on this transport.
  const server = new Server(socket, transport, null, sessions, handler, maxMessageBytes, 5, 256 * 2 ** 20, () => undefined);
  const resets = await driver.run(BATCH_SESSIONS, (i) => Buffer.from(JSON.stringify({ v: 1, id: 0, op: 'reset', seed: i + 1, preset: 'default', options: { stall_steps: 0 } })));
  const ids = resets.map((r) => (JSON.parse(r.toString('utf8').replace(/^[^{]*/, '')) as { result: { session: string } }).result.session);
  return {
    driver,
    sessions: ids,
    handle: (payload) => handler.handlePayload(payload, maxMessageBytes, ROUTING_ID.toString('hex')),
    close: () => server.close(),
  };
}

/** Sessions of the `batch` workload (bench_step.py's `--sessions` default). */
const BATCH_SESSIONS = 64;

const WORKLOADS = {
  status: (sessions: string[]) => (i: number) => Buffer.from(`{"v":1,"id":${i + 1},"op":"step","session":${JSON.stringify(sessions[0])},"action":"company status"}`),
  batch: (sessions: string[]) => (i: number) => Buffer.from(JSON.stringify({ v: 1, id: i + 1, op: 'step_batch', steps: sessions.map((session) => ({ session, action: 'company status' })) })),
  hello: () => (i: number) => Buffer.from(`{"v":1,"id":${i + 1},"op":"hello"}`),
} as const;

async function cpuUsPerMessage(f: () => Promise<unknown>, n: number): Promise<number> {
  const c = process.cpuUsage();
  await f();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / n;
}

export async function serverLoopBench(rounds: number, n: number, against: string | null, only: string | null, workload: string | null = null, withHandler = true, root: string | null = null): Promise<Record<string, number | string>> {
  const self = root !== null ? resolve(root) : resolve(new URL('../..', import.meta.url).pathname);
  const out: Record<string, number | string> = { rounds, n };
  for (const transport of ['router', 'pipe'] as const) {
    if (only !== null && only !== transport) continue;
    const here = await setup(self, transport);
    const other = against !== null ? await setup(resolve(against), transport) : null;
    for (const [name, make] of Object.entries(WORKLOADS)) {
      if (workload !== null && workload !== name) continue;
      const reqH = make(here.sessions);
      const reqO = other !== null ? make(other.sessions) : reqH;
      // Warm-up (JIT), then rounds alternating builds; replies compared byte for byte.
      for (let k = 0; k < 2; k++) {
        await here.driver.run(n, reqH);
        if (other !== null) await other.driver.run(n, reqO);
      }
      const a: number[] = [];
      const b: number[] = [];
      let repH: Buffer[] = [];
      let repO: Buffer[] = [];
      for (let k = 0; k < rounds; k++) {
        a.push(await cpuUsPerMessage(async () => (repH = await here.driver.run(n, reqH)), n));
        if (other !== null) {
          b.push(await cpuUsPerMessage(async () => (repO = await other.driver.run(n, reqO)), n));
          for (let i = 0; i < n; i++) {
            if (!(repH[i] as Buffer).equals(repO[i] as Buffer)) throw new Error(`${transport} ${name}: reply ${i} of round ${k} differs between the builds:\n${repH[i]?.toString()}\n${repO[i]?.toString()}`);
          }
        }
      }
      const key = `${transport}_${name}`;
      out[`${key}_cpu_us_per_msg`] = +median(a).toFixed(2);
      if (other !== null) {
        out[`against_${key}_cpu_us_per_msg`] = +median(b).toFixed(2);
        out[`${key}_speedup_vs_against`] = +medianPairRatio(b, a).toFixed(3);
        out[`${key}_replies_identical`] = 'yes';
      }
      if (transport === 'router' && withHandler) {
        // The handler alone (no loop, no transport), same requests.
        const h: number[] = [];
        const ho: number[] = [];
        for (let k = 0; k < rounds; k++) {
          h.push(await cpuUsPerMessage(async () => {
            for (let i = 0; i < n; i++) here.handle(reqH(i));
          }, n));
          if (other !== null)
            ho.push(await cpuUsPerMessage(async () => {
              for (let i = 0; i < n; i++) other.handle(reqO(i));
            }, n));
        }
        out[`handler_${name}_cpu_us_per_msg`] = +median(h).toFixed(2);
        if (other !== null) out[`against_handler_${name}_cpu_us_per_msg`] = +median(ho).toFixed(2);
      }
    }
    await here.close();
    await other?.close();
  }
  if (fifoDir !== null) rmSync(fifoDir, { recursive: true, force: true });
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const val = (name: string) => flagValue(argv, name);
  const r = await serverLoopBench(Number(val('--rounds') ?? 9), Number(val('--n') ?? 4000), val('--against'), val('--only'), val('--workload'), val('--handler') !== '0', val('--build'));
  console.log(JSON.stringify(r));
  process.exit(0);
}
