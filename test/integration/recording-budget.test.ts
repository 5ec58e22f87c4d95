/**
 * Recording quotas of a shared server (`ycgym serve --record-dir`): a byte budget of the record directory (what this
 * server wrote there, `--record-max-mib`), a share of it per client (`--record-client-mib`) and a cap on a client's
 * recordings in progress (`--record-max-per-client`). Before, a client could record without bound: every reset with
 * `options.record` wrote rows as long as its sessions stepped, until the disk was full and every other client's
 * recordings broke with it.
 *
 * A reset asking to record beyond a limit is refused (`record_limit`, the message naming the limit and its flag); a
 * recording that reaches its budget is completed (footers written: a readable file of every row written so far) and
 * its sessions go on stepping unrecorded, told so once by the `recording_stopped` field of a result.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '../../src/client/client.js';
import { readArrowFile } from '../../src/export/arrow.js';
import { startServer, type Server, type ServerOptions } from '../../src/server/server.js';
import type { RecordingStopped } from '../../src/protocol/ops.js';
import { DEFAULT_MAX_RECORDINGS_PER_CLIENT, DEFAULT_RECORD_CLIENT_BYTES, DEFAULT_RECORD_MAX_BYTES } from '../../src/protocol/limits.js';

const record = (path: string, extra: Record<string, unknown> = {}) => ({ options: { ...extra, record: { path } } as never });

type Stopped = { recording_stopped?: RecordingStopped };

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function serverWith(opts: Partial<ServerOptions>): Promise<{ server: Server; dir: string; client: () => Client }> {
  const dir = mkdtempSync(join(tmpdir(), 'ycgym-recq-'));
  const server = await startServer({ endpoint: 'tcp://127.0.0.1:0', recordDir: dir, recordCompression: 'none', validateReplies: true, ...opts });
  const clients: Client[] = [];
  cleanup.push(async () => {
    for (const c of clients) await c.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    server,
    dir,
    client: () => {
      const c = new Client({ endpoint: server.endpoint, timeoutMs: 20_000 });
      clients.push(c);
      return c;
    },
  };
}

const bytesOf = (dir: string, name: string): number => statSync(join(dir, name)).size + statSync(join(dir, name.replace(/\.arrow$/, '.episodes.arrow'))).size;

/** Play episodes of `steps` steps of `action` in one session recording into `name`, until the recording stops (or `maxEpisodes`). */
async function recordEpisodes(c: Client, name: string, steps: number, maxEpisodes: number, action = 'company status'): Promise<{ session: string; episodes: number; stopped: RecordingStopped | null; actions: string[] }> {
  const r = await c.reset({ seed: 3, ...record(name, { max_steps: steps }) });
  expect((r as Stopped).recording_stopped).toBeUndefined();
  const session = r.session;
  const actions: string[] = [];
  for (let e = 0; e < maxEpisodes; e++) {
    for (let i = 0; i < steps; i++) {
      const last = await c.step(session, action);
      // An episode is written when it ends (its last step): the recording stops there when its budget cannot hold it.
      const stopped = (last as Stopped).recording_stopped;
      if (stopped !== undefined) {
        expect(i).toBe(steps - 1);
        return { session, episodes: e, stopped, actions };
      }
      expect(last.truncated).toBe(i === steps - 1);
    }
    actions.push(...Array.from({ length: steps }, () => action));
    expect((await c.reset({ seed: 3 + e + 1, session, ...record(name, { max_steps: steps }) })) as Stopped).not.toHaveProperty('recording_stopped');
  }
  return { session, episodes: maxEpisodes, stopped: null, actions };
}

describe('recording budgets (serve --record-max-mib, --record-client-mib, --record-max-per-client)', () => {
  it('are announced in hello (limits.record; null on a server that does not record)', async () => {
    const { client } = await serverWith({ recordMaxBytes: 3 * 2 ** 20, recordClientBytes: 2 ** 20, recordMaxPerClient: 2 });
    expect((await client().hello()).limits.record).toEqual({ max_bytes: 3 * 2 ** 20, client_bytes: 2 ** 20, max_per_client: 2 });
    const { client: defaults } = await serverWith({});
    expect((await defaults().hello()).limits.record).toEqual({ max_bytes: DEFAULT_RECORD_MAX_BYTES, client_bytes: DEFAULT_RECORD_CLIENT_BYTES, max_per_client: DEFAULT_MAX_RECORDINGS_PER_CLIENT });
    const plain = await startServer({ endpoint: 'tcp://127.0.0.1:0', validateReplies: true });
    const c = new Client({ endpoint: plain.endpoint, timeoutMs: 20_000 });
    try {
      expect((await c.hello()).limits.record).toBeNull();
    } finally {
      await c.close();
      await plain.close();
    }
  });

  it('refuses a recording when the client share or the server budget cannot hold even an empty one (record_limit, naming the flag)', async () => {
    const small = await serverWith({ recordClientBytes: 1000 });
    const c = small.client();
    await expect(c.reset({ seed: 1, ...record('x.arrow') })).rejects.toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-client-mib') });
    // Nothing was created, and the session was not made either; a reset without recording is served.
    expect(readdirSync(small.dir)).toEqual([]);
    expect(small.server.sessionCount).toBe(0);
    await expect(c.reset({ seed: 1 })).resolves.toMatchObject({ session: expect.any(String) });

    const tiny = await serverWith({ recordMaxBytes: 1000 });
    await expect(tiny.client().reset({ seed: 1, ...record('x.arrow') })).rejects.toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-max-mib') });
  });

  it('caps a client\'s recordings in progress; its sessions may still join one, and closing one makes room', async () => {
    const { client } = await serverWith({ recordMaxPerClient: 2 });
    const a = client();
    const b = client();
    const r1 = await a.reset({ seed: 1, ...record('p1.arrow') });
    const r2 = await a.reset({ seed: 2, ...record('p2.arrow') });
    await expect(a.reset({ seed: 3, ...record('p3.arrow') })).rejects.toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-max-per-client') });
    await expect(a.reset({ seed: 3, ...record('p1.arrow') })).resolves.toMatchObject({ session: expect.any(String) }); // joins p1
    await expect(b.reset({ seed: 4, ...record('q1.arrow') })).resolves.toMatchObject({ session: expect.any(String) }); // another client's own cap
    await a.closeSession(r2.session);
    await expect(a.reset({ seed: 3, ...record('p3.arrow') })).resolves.toMatchObject({ session: expect.any(String) });
    await a.closeSession(r1.session);
  });

  it('completes a recording that reaches the client share (every row so far readable), keeps its session stepping, and leaves other clients\' recordings whole', async () => {
    const share = 40_000;
    const { dir, client } = await serverWith({ recordClientBytes: share, recordMaxBytes: 10 * share });
    const a = client();
    const b = client();
    // b records alongside, well within its own share.
    const rb = await b.reset({ seed: 9, ...record('b.arrow') });
    const bActions: string[] = [];
    for (let i = 0; i < 5; i++) {
      bActions.push('company status');
      expect((await b.step(rb.session, 'company status')) as Stopped).not.toHaveProperty('recording_stopped');
    }
    const ra = await recordEpisodes(a, 'a.arrow', 4, 500);
    expect(ra.stopped).not.toBeNull();
    const stopped = ra.stopped as RecordingStopped;
    expect(stopped).toMatchObject({ path: 'a.arrow', reason: 'client_budget', message: expect.stringContaining('--record-client-mib') });
    expect(ra.episodes).toBeGreaterThan(1);
    // The files are complete and hold every episode written before the stop; their size is what the reply says, within the share.
    expect(bytesOf(dir, 'a.arrow')).toBe(stopped.bytes);
    expect(stopped.bytes).toBeLessThanOrEqual(share);
    const steps = readArrowFile(join(dir, 'a.arrow'));
    const eps = tableFromIPC(readFileSync(join(dir, 'a.episodes.arrow')));
    expect(eps.numRows).toBe(ra.episodes);
    expect(steps.numRows).toBe(ra.episodes * 5);
    expect(steps.getChild('action')?.toArray().filter((x: string | null) => x !== null)).toEqual(ra.actions);
    // The session goes on, unrecorded: nothing more is written, and the stop is reported once.
    const size = bytesOf(dir, 'a.arrow');
    expect(await a.reset({ seed: 40, session: ra.session, options: { max_steps: 4 } })).not.toHaveProperty('recording_stopped');
    for (let i = 0; i < 6; i++) {
      const s = await a.step(ra.session, 'company status');
      expect(s as Stopped).not.toHaveProperty('recording_stopped');
      if (s.truncated) await a.reset({ seed: 50 + i, session: ra.session, options: { max_steps: 4 } });
    }
    expect(bytesOf(dir, 'a.arrow')).toBe(size);
    // The name cannot be recorded again (a reset into it plays unrecorded, told so: see the next test); a new name is
    // refused once the share cannot hold a recording.
    expect(((await a.reset({ seed: 1, ...record('a.arrow') })) as Stopped).recording_stopped).toEqual(stopped);
    expect(bytesOf(dir, 'a.arrow')).toBe(size);
    let refused = false;
    for (let k = 0; k < 5 && !refused; k++) {
      try {
        const more = await recordEpisodes(a, `a${k}.arrow`, 4, 50);
        expect(more.stopped).toMatchObject({ reason: 'client_budget' });
      } catch (e) {
        expect(e).toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-client-mib') });
        refused = true;
      }
    }
    expect(refused).toBe(true);
    let total = 0;
    for (const f of readdirSync(dir)) if (f.startsWith('a')) total += statSync(join(dir, f)).size;
    expect(total).toBeLessThanOrEqual(share);
    // b's recording was untouched: it goes on and completes with every row.
    for (let i = 0; i < 3; i++) {
      bActions.push('employee list');
      expect((await b.step(rb.session, 'employee list')) as Stopped).not.toHaveProperty('recording_stopped');
    }
    await b.closeSession(rb.session);
    const bt = readArrowFile(join(dir, 'b.arrow'));
    expect(bt.getChild('action')?.toArray()).toEqual([null, ...bActions]);
    expect(tableFromIPC(readFileSync(join(dir, 'b.episodes.arrow'))).numRows).toBe(1);
  });

  it('lets the owner reset into a stopped recording again: unrecorded, told so in each such reset; another client is refused its name', async () => {
    const share = 30_000;
    const { dir, client } = await serverWith({ recordClientBytes: share, recordMaxBytes: 10 * share });
    const a = client();
    const ra = await recordEpisodes(a, 'a.arrow', 4, 500);
    expect(ra.stopped).not.toBeNull();
    const size = bytesOf(dir, 'a.arrow');
    // An env whose reset options name the recording resets on (before: invalid_request, the file exists, at every reset).
    for (const session of [ra.session, undefined]) {
      const again = (await a.reset({ seed: 5, ...(session === undefined ? {} : { session }), ...record('a.arrow', { max_steps: 4 }) })) as Stopped & { session: string };
      expect(again.recording_stopped).toEqual(ra.stopped);
      for (let i = 0; i < 4; i++) expect((await a.step(again.session, 'company status')) as Stopped).not.toHaveProperty('recording_stopped');
    }
    expect(bytesOf(dir, 'a.arrow')).toBe(size);
    await expect(client().reset({ seed: 1, ...record('a.arrow') })).rejects.toMatchObject({ code: 'invalid_request' });
    // A new name is a new recording, within what the share has left.
    const rc = await a.reset({ seed: 1, ...record('c.arrow') }).catch((e: { code: string }) => e);
    expect(['record_limit', undefined]).toContain((rc as { code?: string }).code);
  });

  it('stops on the server budget too (reason server_budget), and tells every session of the recording, in step and step_batch results', async () => {
    const budget = 30_000;
    const { dir, client } = await serverWith({ recordMaxBytes: budget });
    const a = client();
    // Two sessions share one recording; episodes of one step end at each step's reset.
    const s1 = (await a.reset({ seed: 1, ...record('shared.arrow', { max_steps: 1 }) })).session;
    const s2 = (await a.reset({ seed: 2, ...record('shared.arrow', { max_steps: 10 }) })).session;
    let stopped: RecordingStopped | undefined;
    let written = 0;
    for (let k = 0; k < 500; k++) {
      // Each step ends its episode, written then (or the recording stops).
      stopped = ((await a.step(s1, 'company status')) as Stopped).recording_stopped;
      if (stopped !== undefined) break;
      written++;
      await a.reset({ seed: 10 + k, session: s1, ...record('shared.arrow', { max_steps: 1 }) });
    }
    expect(stopped).toMatchObject({ path: 'shared.arrow', reason: 'server_budget', message: expect.stringContaining('--record-max-mib') });
    expect(bytesOf(dir, 'shared.arrow')).toBe((stopped as RecordingStopped).bytes);
    expect((stopped as RecordingStopped).bytes).toBeLessThanOrEqual(budget);
    // s2 learns it in its next result, a step_batch entry here (once).
    const batch = await a.stepBatch([
      { session: s2, action: 'company status' },
      { session: s2, action: 'company status' },
    ]);
    expect(batch[0]).toMatchObject({ ok: true, result: { recording_stopped: { path: 'shared.arrow', reason: 'server_budget' } } });
    expect(batch[1]).toMatchObject({ ok: true, result: { terminated: false } });
    expect((batch[1] as { result: Stopped }).result).not.toHaveProperty('recording_stopped');
    // The rows written so far are intact: the episodes of s1 written before the stop (2 rows each), none of s2 (open at the stop).
    expect(written).toBeGreaterThan(1);
    expect(readArrowFile(join(dir, 'shared.arrow')).numRows).toBe(2 * written);
    expect(readArrowFile(join(dir, 'shared.episodes.arrow')).numRows).toBe(written);
    await expect(client().reset({ seed: 1, ...record('other.arrow') })).rejects.toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-max-mib') });
  });

  it('bounds the recordings of many connections together by the server budget: a client is its connection, so one that opens many gets a share each, never more than the budget', async () => {
    // Nothing but the connection identifies a client to the server (its ZeroMQ routing id, chosen by the client; the
    // CURVE key behind it is not visible to the server), so the per-client share is per connection and the record
    // directory's budget is what bounds them all together.
    const [budget, share] = [40_000, 15_000];
    const { dir, client } = await serverWith({ recordMaxBytes: budget, recordClientBytes: share });
    const outcomes: (RecordingStopped | null)[] = [];
    let refused = 0;
    for (let k = 0; k < 6; k++) {
      const c = client();
      try {
        outcomes.push((await recordEpisodes(c, `conn${k}.arrow`, 1, 500)).stopped);
      } catch (e) {
        expect(e).toMatchObject({ code: 'record_limit', message: expect.stringContaining('--record-max-mib') });
        refused++;
      }
    }
    const names = readdirSync(dir).filter((f) => !f.endsWith('.episodes.arrow'));
    const each = names.map((n) => bytesOf(dir, n));
    // Each connection stopped at its share, or at what was left of the budget; together they stayed within it.
    for (const b of each) expect(b).toBeLessThanOrEqual(share);
    expect(each.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
    expect(outcomes.map((o) => o?.reason)).toEqual(expect.arrayContaining(['client_budget', 'server_budget']));
    expect(refused).toBeGreaterThan(0);
  });

  it('tells a session whose last episode did not fit when it leaves the recording (a reset into another, or none)', async () => {
    const { dir, client } = await serverWith({ recordClientBytes: 100_000 });
    const a = client();
    const s = (await a.reset({ seed: 1, ...record('leave.arrow') })).session;
    // The episode's rows wait in memory (fewer than flushRows); the reset ends it, and it does not fit.
    for (let i = 0; i < 10; i++) expect((await a.step(s, 'market browse --limit 200')) as Stopped).not.toHaveProperty('recording_stopped');
    const r = (await a.reset({ seed: 2, session: s })) as Stopped;
    expect(r.recording_stopped).toMatchObject({ path: 'leave.arrow', reason: 'client_budget' });
    expect(readArrowFile(join(dir, 'leave.arrow')).numRows).toBe(0);
    expect(bytesOf(dir, 'leave.arrow')).toBe(r.recording_stopped?.bytes);
  });

  it('reports the stop in a binary step_batch reply', async () => {
    const { client } = await serverWith({ recordClientBytes: 20_000 });
    const a = client();
    const s = (await a.reset({ seed: 1, ...record('bin.arrow', { max_steps: 2 }) })).session;
    let found: unknown = null;
    for (let k = 0; k < 300 && found === null; k++) {
      // Each batch plays a whole episode: its second step ends it, and the episode is written then (or the recording stops).
      const r = await a.stepBatchArrays([
        { session: s, action: 'company status' },
        { session: s, action: 'company status' },
      ]);
      expect(r.result.errors).toEqual([]);
      if (r.result.recording_stopped !== undefined) found = r.result.recording_stopped;
      else expect((await a.reset({ seed: 2 + k, session: s, ...record('bin.arrow', { max_steps: 2 }) })) as Stopped).not.toHaveProperty('recording_stopped');
    }
    expect(found).toEqual([{ index: 1, recording: { path: 'bin.arrow', reason: 'client_budget', message: expect.stringContaining('--record-client-mib'), bytes: expect.any(Number) } }]);
    // The session steps on, unrecorded, and the stop is not reported again.
    await a.reset({ seed: 1000, session: s, options: { max_steps: 2 } });
    const after = await a.stepBatchArrays([{ session: s, action: 'company status' }]);
    expect(after.result.recording_stopped).toBeUndefined();
  });

  it('records byte-identical files below the budget (the quota only observes)', async () => {
    const plain = await serverWith({});
    const capped = await serverWith({ recordClientBytes: 10_000_000, recordMaxBytes: 20_000_000, recordMaxPerClient: 1 });
    for (const s of [plain, capped]) {
      const c = s.client();
      const r = await c.reset({ seed: 4, ...record('same.arrow', { max_steps: 3 }) });
      for (const cmd of ['market browse --limit 5', 'company status', 'task accept --task-id Task-2']) await c.step(r.session, cmd);
      await c.reset({ seed: 5, session: r.session, ...record('same.arrow') });
      await c.step(r.session, 'employee list');
      await c.closeSession(r.session);
    }
    for (const f of ['same.arrow', 'same.episodes.arrow']) expect(readFileSync(join(capped.dir, f)).equals(readFileSync(join(plain.dir, f)))).toBe(true);
  });
});

describe('ycgym serve recording flags', () => {
  const MAIN = join(fileURLToPath(new URL('../..', import.meta.url)), 'dist', 'src', 'cli', 'main.js');

  it('documents them in the help with their defaults', () => {
    const help = spawnSync(process.execPath, [MAIN, 'serve', '--help'], { encoding: 'utf8' }).stdout;
    expect(help).toMatch(/--record-max-mib <MiB>[\s\S]*default: 16384/);
    expect(help).toMatch(/--record-client-mib <MiB>[\s\S]*default: 2048/);
    expect(help).toMatch(/--record-max-per-client <n>[\s\S]*default: 16/);
    const bad = spawnSync(process.execPath, [MAIN, 'serve', '--record-client-mib', '0'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--record-client-mib');
  });

  it('passes them to the server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-recq-cli-'));
    const child = spawn(process.execPath, [MAIN, 'serve', '--endpoint', 'tcp://127.0.0.1:0', '--quiet', '--record-dir', dir, '--record-max-per-client', '1', '--record-max-mib', '1', '--record-client-mib', '1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const c: { client?: Client } = {};
    try {
      const first = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
      c.client = new Client({ endpoint: (JSON.parse(first) as { endpoint: string }).endpoint, timeoutMs: 10_000 });
      await c.client.reset({ seed: 1, ...record('one.arrow') });
      await expect(c.client.reset({ seed: 1, ...record('two.arrow') })).rejects.toMatchObject({ code: 'record_limit', message: expect.stringContaining('(`ycgym serve --record-max-per-client`, 1)') });
    } finally {
      await c.client?.close();
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
