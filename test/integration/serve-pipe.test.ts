/**
 * `ycgym serve --pipe-fds IN,OUT`: the protocol over two inherited pipes (src/server/pipe.ts), the transport of
 * the Python `LocalServer(endpoint="pipe")`. Requests are `[routing id, payload]` messages, replies
 * `[routing id, body, ...arrays]`; sessions belong to the routing id. The server exits when IN is closed, and
 * ends the stream (logged, exit) on a message it cannot frame.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeMessage, parseMessages } from '../../src/server/pipe.js';
import { generateCurveKeyPair } from '../../src/protocol/curve.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist', 'src', 'cli', 'main.js');

interface PipeServer {
  child: ChildProcess;
  input: Writable;
  stderr: () => string;
  next: (timeoutMs?: number) => Promise<Buffer[]>;
  exit: Promise<number | null>;
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Extra `serve` flags of the describe block being run: each test runs with the server polling its input and without. */
let spinArgs: string[] = [];

function startPipeServer(extra: string[] = []): PipeServer {
  expect(existsSync(MAIN), 'build first (npm run build)').toBe(true);
  const child = spawn(process.execPath, [MAIN, 'serve', '--pipe-fds', '3,4', '--quiet', ...spinArgs, ...extra], { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
  started.push(child);
  let err = '';
  (child.stderr as Readable).on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const replies: Buffer[][] = [];
  const waiters: ((m: Buffer[]) => void)[] = [];
  let rest = Buffer.alloc(0);
  (child.stdio[4] as Readable).on('data', (d: Buffer) => {
    rest = Buffer.concat([rest, d]);
    const r = parseMessages(rest, 1 << 30);
    rest = rest.subarray(r.used);
    for (const m of r.messages) {
      const w = waiters.shift();
      if (w) w(m);
      else replies.push(m);
    }
  });
  const next = (timeoutMs = 20_000): Promise<Buffer[]> => {
    const m = replies.shift();
    if (m) return Promise.resolve(m);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
      waiters.push((x) => {
        clearTimeout(t);
        resolve(x);
      });
    });
  };
  return { child, input: child.stdio[3] as Writable, stderr: () => err, next, exit };
}

function request(rid: string, body: Record<string, unknown>): Buffer {
  return encodeMessage([Buffer.from(rid), JSON.stringify({ v: 1, ...body })]);
}

function exitWithin(p: Promise<number | null>, ms: number): Promise<number | null | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((res) => setTimeout(() => res('timeout'), ms))]);
}

describe.each([
  ['sleeping', []],
  ['polling for requests', ['--pipe-spin-us', '500']],
])('serve --pipe-fds (%s)', (_name, flags: string[]) => {
  beforeEach(() => {
    spinArgs = flags;
  });

  it('answers requests over the pipes, each reply addressed to its routing id', async () => {
    const s = startPipeServer();
    s.input.write(request('A', { id: 1, op: 'hello' }));
    const [rid, body] = await s.next();
    expect(rid?.toString()).toBe('A');
    const hello = JSON.parse((body as Buffer).toString()) as { id: number; ok: boolean; result: { protocol: number } };
    expect(hello).toMatchObject({ id: 1, ok: true, result: { protocol: 1 } });
    // No unread-reply budget over the pipe (its output buffer is bounded by the transport): announced as null.
    expect((hello.result as unknown as { limits: Record<string, unknown> }).limits).toHaveProperty('max_unread_reply_bytes', null);
    expect((hello.result as unknown as { limits: Record<string, unknown> }).limits).toHaveProperty('max_unread_total_bytes', null);
    expect((hello.result as unknown as { limits: Record<string, unknown> }).limits).toHaveProperty('unread_total_headroom_bytes', null);
    // No connection cap either: the pipe has one client, the parent process.
    expect((hello.result as unknown as { limits: Record<string, unknown> }).limits).toHaveProperty('max_connections', null);

    s.input.write(request('A', { id: 2, op: 'reset', seed: 1, preset: 'default' }));
    const reset = JSON.parse(((await s.next())[1] as Buffer).toString()) as { ok: boolean; result: { session: string } };
    expect(reset.ok).toBe(true);
    const session = reset.result.session;
    s.input.write(request('A', { id: 3, op: 'step', session, action: 'company status' }));
    const step = JSON.parse(((await s.next())[1] as Buffer).toString()) as { ok: boolean; result: { observation: { ok: boolean } } };
    expect(step).toMatchObject({ ok: true, result: { observation: { ok: true } } });

    // Another routing id does not own the session (as over ZeroMQ).
    s.input.write(request('B', { id: 4, op: 'step', session, action: 'company status' }));
    const [ridB, other] = await s.next();
    expect(ridB?.toString()).toBe('B');
    expect(JSON.parse((other as Buffer).toString())).toMatchObject({ id: 4, ok: false });

    // A binary step_batch reply: header and array frames after the routing id.
    s.input.write(request('A', { id: 5, op: 'step_batch', encoding: 'binary', steps: [{ session, action: 'company status' }] }));
    const bin = await s.next();
    expect(bin.length).toBeGreaterThan(2);
    expect(JSON.parse((bin[1] as Buffer).toString())).toMatchObject({ id: 5, ok: true, result: { encoding: 'binary' } });

    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
    // The client closing its end is how a pipe server ends normally: logged as info, so --quiet prints nothing.
    expect(s.stderr()).not.toMatch(/pipe transport ended/);
  });

  it('parses a request written a byte at a time, and several requests in one write', async () => {
    const s = startPipeServer();
    const one = request('A', { id: 1, op: 'hello' });
    for (const b of one) {
      s.input.write(Buffer.from([b]));
      await new Promise((r) => setImmediate(r));
    }
    expect(JSON.parse(((await s.next())[1] as Buffer).toString())).toMatchObject({ id: 1, ok: true });
    s.input.write(Buffer.concat([request('A', { id: 2, op: 'hello' }), request('A', { id: 3, op: 'hello' }), request('A', { id: 4, op: 'nope' })]));
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((JSON.parse(((await s.next())[1] as Buffer).toString()) as { id: number }).id);
    expect(ids).toEqual([2, 3, 4]);
    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
  });

  it('a burst of requests written at once is answered in order (reading pauses and resumes, nothing lost)', async () => {
    const s = startPipeServer();
    const N = 3000;
    const pad = 'x'.repeat(8000); // 3000 x 8 KB: past both the message and the byte bound of what is parsed ahead
    s.input.write(Buffer.concat(Array.from({ length: N }, (_, i) => request('A', { id: i + 1, op: 'hello', pad }))));
    for (let i = 0; i < N; i++) {
      const reply = JSON.parse(((await s.next())[1] as Buffer).toString()) as { id: number | null; ok: boolean; error?: { code: string } };
      // Each request gets its own reply, in order (none refused for capacity: the pipe is read as the loop drains).
      expect(reply.id).toBe(i + 1);
    }
    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
  });

  it('replies written while the client does not read arrive whole and in order, byte for byte', async () => {
    // The server writes a reply straight to the pipe when nothing waits in its stream, and queues on the stream what a
    // full pipe does not take (then everything after it, until the stream is empty again): both ways, and the switch
    // between them, must keep every byte. Replies of three sizes: hello (2.9 KB, taken whole or not at all by a full
    // pipe), a turn session's chat with a 6,000-character system prompt (7 KB, above PIPE_BUF: a full pipe may take part
    // of it; an unknown op's error, which echoed a 6,000-character op here, now quotes 120 characters of it), and
    // a snapshot (above the 64 KiB the direct write encodes in place: the stream's). The first 100 fill the pipe and
    // what the client buffers; the client reads nothing until all are sent. (test/unit/pipe-framing.test.ts cuts the
    // direct writes at chosen points.)
    const s = startPipeServer();
    const body = async (): Promise<string> => ((await s.next())[1] as Buffer).toString();
    s.input.write(request('A', { id: 0, op: 'hello' }));
    const hello = await body();
    s.input.write(request('A', { id: 0, op: 'turn_reset', seed: 3, options: { system_prompt: 'y'.repeat(6000) } }));
    const turn = (JSON.parse(await body()) as { result: { session: string } }).result.session;
    s.input.write(request('A', { id: 0, op: 'turn_messages', session: turn }));
    const chat = await body();
    expect(chat.length).toBeGreaterThan(6000);
    s.input.write(request('A', { id: 0, op: 'reset', seed: 3, preset: 'default' }));
    const session = (JSON.parse(await body()) as { result: { session: string } }).result.session;
    s.input.write(request('A', { id: 0, op: 'snapshot', session }));
    const snapshot = await body();
    expect(snapshot.length).toBeGreaterThan(30_000);
    const replies = s.child.stdio[4] as Readable;
    replies.pause();
    const N = 180;
    const kind = (i: number): 'hello' | 'chat' | 'snapshot' => (i > 100 && i % 3 === 0 ? 'snapshot' : i % 2 === 1 ? 'chat' : 'hello');
    const ask = { hello: { op: 'hello' }, chat: { op: 'turn_messages', session: turn }, snapshot: { op: 'snapshot', session } };
    const want = { hello, chat, snapshot };
    for (let i = 1; i <= N; i++) s.input.write(request('A', { id: i, ...ask[kind(i)] }));
    await new Promise((r) => setTimeout(r, 500));
    replies.resume();
    for (let i = 1; i <= N; i++) expect(await body()).toBe(want[kind(i)].replace('"id":0,', `"id":${i},`));
    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
  });

  it('a bad payload gets an error reply, not an exit', async () => {
    const s = startPipeServer();
    s.input.write(encodeMessage([Buffer.from('A'), '{not json']));
    expect(JSON.parse(((await s.next())[1] as Buffer).toString())).toMatchObject({ ok: false, error: { code: 'bad_json' } });
    s.input.write(request('A', { id: 9, op: 'hello' }));
    expect(JSON.parse(((await s.next())[1] as Buffer).toString())).toMatchObject({ id: 9, ok: true });
    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
  });

  it('answers a payload above --max-message-bytes with message_too_large, skips its bytes, and goes on', async () => {
    // Above the limit (the old frame cap was 4x: this one ended the transport, and with it every session).
    const s = startPipeServer(['--max-message-bytes', '1024']);
    const body = async (): Promise<Record<string, unknown>> => JSON.parse(((await s.next())[1] as Buffer).toString()) as Record<string, unknown>;
    s.input.write(request('A', { id: 1, op: 'reset', seed: 1, preset: 'default' }));
    const session = ((await body()) as { result: { session: string } }).result.session;
    const tooLarge = (n: number) => ({ v: 1, id: null, ok: false, error: { code: 'message_too_large', message: `payload is ${n} bytes; the limit is 1024` } });
    // Whole in one write, with the next request right behind it.
    const big = request('A', { id: 2, op: 'step', session, action: 'x'.repeat(20_000) });
    const bigPayload = big.length - 4 - 4 - 1 - 4;
    s.input.write(Buffer.concat([big, request('A', { id: 3, op: 'step', session, action: 'company status' })]));
    expect(await body()).toEqual(tooLarge(bigPayload));
    expect(await body()).toMatchObject({ id: 3, ok: true, result: { observation: { ok: true } } });
    // Cut into pieces that arrive apart (the header alone first; the next request's first bytes with the last piece).
    const next = request('A', { id: 4, op: 'step', session, action: 'company status' });
    const cuts = [9, 13, 5000, big.length];
    let from = 0;
    for (const [i, at] of cuts.entries()) {
      s.input.write(i === cuts.length - 1 ? Buffer.concat([big.subarray(from, at), next.subarray(0, 7)]) : big.subarray(from, at));
      from = at;
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(await body()).toEqual(tooLarge(bigPayload));
    s.input.write(next.subarray(7));
    expect(await body()).toMatchObject({ id: 4, ok: true, result: { info: { step: 2 } } });
    // Between the limit and the old 4x cap: the same answer.
    s.input.write(request('B', { id: 5, op: 'hello', pad: 'y'.repeat(2000) }));
    const [rid, reply] = await s.next();
    expect(rid?.toString()).toBe('B');
    expect((JSON.parse((reply as Buffer).toString()) as { error: { code: string } }).error.code).toBe('message_too_large');
    s.input.end();
    expect(await exitWithin(s.exit, 10_000)).toBe(0);
    expect(s.stderr()).not.toMatch(/malformed/);
  });

  it('ends the stream on framing it cannot trust (a frame count of 0, a routing id above --max-message-bytes)', async () => {
    for (const bad of [Buffer.from([0, 0, 0, 0]), Buffer.from([1, 0, 0, 0, 0x01, 0x10, 0, 0])]) {
      const s = startPipeServer(['--max-message-bytes', '1024']);
      s.input.write(request('A', { id: 1, op: 'hello' }));
      await s.next();
      s.input.write(bad);
      expect(await exitWithin(s.exit, 10_000)).toBe(0);
      expect(s.stderr()).toMatch(/"level":"error","msg":"pipe transport ended: malformed pipe message/);
    }
  });

  it('refuses bad --pipe-fds and --pipe-spin-us values and CURVE keys', async () => {
    for (const [args, msg] of [
      [['--pipe-fds', '3'], /IN,OUT/],
      [['--pipe-fds', '3,3'], /must differ/],
      [['--pipe-fds', '3,4', '--curve-secret-key', generateCurveKeyPair().secretKey], /CURVE does not apply to the pipe transport/],
      [['--pipe-spin-us', '100'], /--pipe-spin-us applies to --pipe-fds/],
      [['--pipe-fds', '3,4', '--pipe-spin-us', '-1'], /--pipe-spin-us/],
      [['--pipe-fds', '3,4', '--pipe-spin-us', '1000001'], /--pipe-spin-us/],
    ] as const) {
      const child = spawn(process.execPath, [MAIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      started.push(child);
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise<number | null>((res) => child.on('exit', res));
      expect(code).not.toBe(0);
      expect(err).toMatch(msg);
    }
  });
});
