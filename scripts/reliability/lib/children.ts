/**
 * Child processes of the reliability suite: a server (`server-child`, with --expose-gc so memory figures are
 * taken after a full GC) and client workers. Every wait is bounded; `stop()` kills what it started.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { ServerChildMessage, ServerChildOptions } from '../server-child.js';
import { distEntry, withTimeout } from './util.js';

/** Memory and counters reported by the server child. */
export type ServerChildStats = Extract<ServerChildMessage, { type: 'stats' }>;

/** A server running in a child process. */
export class ServerChild {
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private readonly exited: Promise<void>;
  private stderrTail = '';

  private constructor(
    readonly proc: ChildProcess,
    readonly endpoint: string,
    readonly publicKey: string | null,
  ) {
    this.exited = new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        this.exitInfo = { code: proc.exitCode, signal: proc.signalCode };
        resolve();
        return;
      }
      proc.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve();
      });
    });
    proc.stderr?.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-4000);
    });
  }

  /** Fork a server and wait (bounded) until it is bound. */
  static async start(opts: ServerChildOptions = {}, timeoutMs = 20_000): Promise<ServerChild> {
    const proc = fork(distEntry('server-child'), [JSON.stringify(opts)], { execArgv: ['--expose-gc'], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    try {
      const m = await withTimeout(
        new Promise<ServerChildMessage>((resolve, reject) => {
          proc.once('message', (msg: ServerChildMessage) => resolve(msg));
          proc.once('exit', (code, signal) => reject(new Error(`server child exited (${code ?? signal}) before listening: ${stderr}`)));
        }),
        timeoutMs,
        'server child start',
      );
      if (m.type !== 'listening') throw new Error(`server child failed: ${m.type === 'error' ? m.message : m.type}`);
      return new ServerChild(proc, m.endpoint, m.publicKey);
    } catch (e) {
      proc.kill('SIGKILL');
      throw e;
    }
  }

  /** True while the process runs. */
  get alive(): boolean {
    return this.exitInfo === null;
  }

  /** How the process ended (null while it runs). */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | null {
    return this.exitInfo;
  }

  /** The last few KB the server wrote to stderr (its warnings and errors). */
  get stderr(): string {
    return this.stderrTail;
  }

  /** Memory after a full GC, live sessions and the server counters. */
  async stats(timeoutMs = 10_000): Promise<ServerChildStats> {
    if (!this.alive) throw new Error('server child is not running');
    return withTimeout(
      new Promise<ServerChildStats>((resolve) => {
        const on = (m: ServerChildMessage): void => {
          if (m.type === 'stats') {
            this.proc.off('message', on);
            resolve(m);
          }
        };
        this.proc.on('message', on);
        this.proc.send({ type: 'stats' });
      }),
      timeoutMs,
      'server stats',
    );
  }

  /** Kill without warning (a crash, for the fault tests). */
  async kill(signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 10_000): Promise<void> {
    if (this.alive) this.proc.kill(signal);
    await withTimeout(this.exited, timeoutMs, 'server child exit');
  }

  /** Close cleanly (SIGKILL when that takes longer than `timeoutMs`). */
  async stop(timeoutMs = 5000): Promise<void> {
    if (!this.alive) return;
    if (this.proc.connected) this.proc.send({ type: 'close' });
    try {
      await withTimeout(this.exited, timeoutMs, 'server child close');
    } catch {
      await this.kill('SIGKILL');
    }
  }
}

/** A forked worker speaking a request/response protocol over IPC (one `run` at a time). */
export class Worker<Req, Res> {
  readonly proc: ChildProcess;
  private readonly exited: Promise<void>;
  private stderrTail = '';
  private exitDesc: string | null = null;

  constructor(name: string, execArgv: string[] = []) {
    this.proc = fork(distEntry(name), [], { execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.proc.stderr?.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-4000);
    });
    this.exited = new Promise((resolve) =>
      this.proc.once('exit', (code, signal) => {
        this.exitDesc = `${code ?? signal}`;
        resolve();
      }),
    );
  }

  /** Send a request and wait (bounded) for the worker's next message of type `done`. */
  run(req: Req, timeoutMs: number): Promise<Res> {
    return withTimeout(
      new Promise<Res>((resolve, reject) => {
        const onMsg = (m: { type?: string; result?: Res; message?: string }): void => {
          if (m.type === 'done') {
            cleanup();
            resolve(m.result as Res);
          } else if (m.type === 'error') {
            cleanup();
            reject(new Error(`worker failed: ${m.message ?? ''}`));
          }
        };
        const onExit = (): void => {
          cleanup();
          reject(new Error(`worker exited (${this.exitDesc ?? '?'}): ${this.stderrTail}`));
        };
        const cleanup = (): void => {
          this.proc.off('message', onMsg);
          this.proc.off('exit', onExit);
        };
        this.proc.on('message', onMsg);
        this.proc.once('exit', onExit);
        this.proc.send({ type: 'run', req });
      }),
      timeoutMs,
      'worker run',
    );
  }

  /** Wait for a message of the given type (e.g. `ready`), bounded. */
  waitFor<M>(type: string, timeoutMs: number): Promise<M> {
    return withTimeout(
      new Promise<M>((resolve) => {
        const on = (m: { type?: string }): void => {
          if (m.type === type) {
            this.proc.off('message', on);
            resolve(m as M);
          }
        };
        this.proc.on('message', on);
      }),
      timeoutMs,
      `worker message ${type}`,
    );
  }

  /** Kill the worker and wait (bounded) for it to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill(signal);
    await withTimeout(this.exited, 10_000, 'worker exit');
  }
}
