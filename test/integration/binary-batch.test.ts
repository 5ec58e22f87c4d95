/**
 * The binary encoding of `step_batch` (src/protocol/binary.ts): over a real server, its arrays and strings equal the
 * JSON replies field for field (Discrete and text sessions, the same seeds and actions, through episode ends and
 * failed entries); its rejections are structured errors; a malformed binary reply is refused by the client decoder.
 */
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { BatchJob, ProtocolHandler, type Handled } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import {
  BINARY_COLUMNS,
  checkBinaryFrames,
  decodeBinaryArrays,
  getValidators,
  type BatchItem,
  type BinaryBatchResult,
  type DecodedBinaryBatch,
  type Reply,
  type StepResult,
} from '../../src/protocol/protocol.js';
import { serverFixture } from '../helpers/server-fixture.js';

const fx = serverFixture();

const DISCRETE = { actions: 'discrete', text: false, max_steps: 40, market_slots: 6, task_slots: 3 } as const;

/** Entry i of a binary reply as the JSON reply's item would have it (status block aside). */
function expectSame(json: BatchItem[], bin: DecodedBinaryBatch): void {
  const { result, arrays } = bin;
  expect(result.n).toBe(json.length);
  const errors = new Map(result.errors.map((e) => [e.index, e.error]));
  const reasons = [null, ...result.terminal_reasons];
  json.forEach((item, i) => {
    if (!item.ok) {
      expect(errors.get(i), `entry ${i}`).toEqual(item.error);
      for (const c of BINARY_COLUMNS) expect(arrays[c.name]?.[i], `${c.name}[${i}] of a failed entry`).toBe(0);
      return;
    }
    expect(errors.has(i)).toBe(false);
    const r: StepResult = item.result;
    expect(arrays['reward']?.[i]).toBe(r.reward);
    expect(arrays['terminated']?.[i]).toBe(r.terminated ? 1 : 0);
    expect(arrays['truncated']?.[i]).toBe(r.truncated ? 1 : 0);
    expect(arrays['ok']?.[i]).toBe(r.observation.ok ? 1 : 0);
    expect(arrays['exit_code']?.[i]).toBe(r.observation.exit_code);
    expect(arrays['reward_cents']?.[i]).toBe(r.info.reward_cents);
    expect(arrays['step']?.[i]).toBe(r.info.step);
    expect(arrays['funds_cents']?.[i]).toBe(r.info.funds_cents);
    expect(reasons[arrays['terminal_reason']?.[i] as number]).toBe(r.info.terminal_reason);
    expect(result.text[i]).toBe(r.observation.text);
    expect(result.command[i]).toBe(r.observation.command);
    expect(result.action_text[i]).toBe(r.info.action_text ?? null);
    const d = r.observation.discrete;
    if (d === undefined) {
      expect(arrays['obs']).toBeUndefined();
      return;
    }
    const w = d.obs.length;
    expect(Array.from((arrays['obs'] as Float32Array).subarray(i * w, (i + 1) * w))).toEqual(Array.from(Float32Array.from(d.obs)));
    const m = d.mask.length;
    expect(Array.from((arrays['mask'] as Uint8Array).subarray(i * m, (i + 1) * m))).toEqual(d.mask.map((b) => (b ? 1 : 0)));
  });
}

async function sessions(n: number, seed0: number, options: Record<string, unknown>): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await fx.client.reset({ seed: seed0 + i, options })).session);
  return out;
}

describe('binary step_batch over a server', () => {
  it('Discrete sessions: binary equals JSON for the same seeds and actions, through episode ends and refused steps', async () => {
    const n = 6;
    const a = await sessions(n, 11, DISCRETE);
    const b = await sessions(n, 11, DISCRETE);
    let ended = 0;
    let failed = 0;
    for (let round = 0; round < 60; round++) {
      // Both sides take the same actions: resume (index 0), and now and then an index out of range (refused).
      const acts = a.map((_, i) => (round % 7 === 3 && i === 0 ? 1_000_000 : 0));
      const json = await fx.client.stepBatch(a.map((s, i) => ({ session: s, action: acts[i] as number })));
      const bin = await fx.client.stepBatchArrays(b.map((s, i) => ({ session: s, action: acts[i] as number })));
      expectSame(json, bin);
      for (let i = 0; i < n; i++) {
        const it = json[i] as BatchItem;
        if (!it.ok) failed++;
        if (it.ok && (it.result.terminated || it.result.truncated)) {
          ended++;
          await fx.client.reset({ seed: 100 + round * n + i, session: a[i] as string, options: DISCRETE });
          await fx.client.reset({ seed: 100 + round * n + i, session: b[i] as string, options: DISCRETE });
        }
      }
    }
    expect(ended).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
  });

  it('Discrete sessions driven by their masks: binary equals JSON step for step', async () => {
    const n = 4;
    const a = await sessions(n, 5, { ...DISCRETE, max_steps: 1000 });
    const b = await sessions(n, 5, { ...DISCRETE, max_steps: 1000 });
    let acts = a.map(() => 0);
    for (let round = 0; round < 80; round++) {
      const json = await fx.client.stepBatch(a.map((s, i) => ({ session: s, action: acts[i] as number })));
      const bin = await fx.client.stepBatchArrays(b.map((s, i) => ({ session: s, action: acts[i] as number })));
      expectSame(json, bin);
      // The next action: the last valid one of each mask (accepts and assignments, not only resume).
      acts = json.map((it) => {
        if (!it.ok || it.result.observation.discrete === undefined) return 0;
        const m = it.result.observation.discrete.mask;
        return Math.max(0, m.lastIndexOf(true));
      });
      if (json.some((it) => it.ok && (it.result.terminated || it.result.truncated))) break;
    }
  });

  it('text sessions: binary equals JSON (text, command, numbers), with an unknown session failing alone', async () => {
    const opts = { stall_steps: 0 };
    const a = await sessions(3, 21, opts);
    const b = await sessions(3, 21, opts);
    for (const cmd of ['company status', 'market browse --limit 5', 'sim resume', 'employee list', 'nonsense', 'sim resume']) {
      const json = await fx.client.stepBatch([...a.map((s) => ({ session: s, action: cmd })), { session: 'nope', action: cmd }]);
      const bin = await fx.client.stepBatchArrays([...b.map((s) => ({ session: s, action: cmd })), { session: 'nope', action: cmd }]);
      expectSame(json, bin);
      expect(bin.arrays['obs']).toBeUndefined();
      expect(bin.result.errors.map((e) => [e.index, e.error.code])).toEqual([[3, 'unknown_session']]);
    }
  });

  it('sessions of another frame shape fail alone, not executed', async () => {
    const [d] = await sessions(1, 1, DISCRETE);
    const [d2] = await sessions(1, 1, { ...DISCRETE, market_slots: 7 });
    const [t] = await sessions(1, 1, {});
    const bin = await fx.client.stepBatchArrays([
      { session: d as string, action: 0 },
      { session: t as string, action: 'company status' },
      { session: d2 as string, action: 0 },
      { session: d as string, action: 0 },
    ]);
    expect(bin.result.errors.map((e) => [e.index, e.error.code])).toEqual([
      [1, 'invalid_request'],
      [2, 'invalid_request'],
    ]);
    expect(bin.result.errors[0]?.error.message).toMatch(/one frame shape/);
    expect(Array.from(bin.arrays['step'] as Float64Array)).toEqual([1, 0, 0, 2]);
    // Not executed: their next step is their first.
    const [r1, r2] = await fx.client.stepBatch([
      { session: t as string, action: 'company status' },
      { session: d2 as string, action: 0 },
    ]);
    expect(r1?.ok && r1.result.info.step).toBe(1);
    expect(r2?.ok && r2.result.info.step).toBe(1);
  });
});

describe('binary step_batch: rejections and bounds', () => {
  const presets = listPresets();
  const handler = (maxBatchReplyBytes?: number): ProtocolHandler =>
    new ProtocolHandler(new SessionManager({ presets }), { version: '0', presets, maxMessageBytes: 1 << 20 }, { validateReplies: true, ...(maxBatchReplyBytes !== undefined ? { maxBatchReplyBytes } : {}) });
  const err = (r: Reply): [string, string] => {
    if (r.ok) throw new Error(`expected an error, got ${JSON.stringify(r).slice(0, 200)}`);
    return [r.error.code, r.error.message];
  };

  it('an unknown encoding is invalid_request naming the field', () => {
    const h = handler();
    for (const encoding of ['msgpack', 1, null, true, 'BINARY']) {
      const [code, msg] = err(h.handleValue({ v: 1, id: 1, op: 'step_batch', steps: [{ session: 's1', action: 'x' }], encoding }).reply);
      expect(code).toBe('invalid_request');
      expect(msg).toMatch(/^\/encoding: /);
    }
  });

  it('encoding is a step_batch field only', () => {
    const h = handler();
    const [code, msg] = err(h.handleValue({ v: 1, id: 1, op: 'step', session: 's1', action: 'x', encoding: 'binary' }).reply);
    expect([code, msg]).toEqual(['invalid_request', "/: unknown field 'encoding'"]);
  });

  it('arrays over the reply cap refuse the whole request with message_too_large; nothing runs', () => {
    const h = handler(64 * 1024);
    const s = (h.handleValue({ v: 1, op: 'reset', seed: 1, options: DISCRETE }).reply as { result: { session: string } }).result.session;
    const many = Array.from({ length: 200 }, () => ({ session: s, action: 0 }));
    const [code, msg] = err(h.handleValue({ v: 1, id: 2, op: 'step_batch', steps: many, encoding: 'binary' }).reply);
    expect(code).toBe('message_too_large');
    expect(msg).toMatch(/send fewer entries/);
    const r = h.handleValue({ v: 1, id: 3, op: 'step_batch', steps: [{ session: s, action: 0 }], encoding: 'binary' });
    expect(r.reply.ok).toBe(true);
    expect((r.arrays ?? []).length).toBe(11);
    expect(new Float64Array(new Uint8Array(r.arrays?.[6] as Buffer).buffer)[0]).toBe(1); // step 1: nothing ran before
  });

  it('texts past the reply cap fail the later entries alone with message_too_large', () => {
    const h = handler(32 * 1024);
    const s = (h.handleValue({ v: 1, op: 'reset', seed: 1, options: { stall_steps: 0 } }).reply as { result: { session: string } }).result.session;
    const steps = Array.from({ length: 40 }, () => ({ session: s, action: 'market browse --limit 50' }));
    const r = h.handleValue({ v: 1, id: 2, op: 'step_batch', steps, encoding: 'binary' });
    const res = (r.reply as { result: BinaryBatchResult }).result;
    expect(res.errors.length).toBeGreaterThan(0);
    expect(res.errors.every((e) => e.error.code === 'message_too_large')).toBe(true);
    const first = res.errors[0]?.index as number;
    expect(res.errors.map((e) => e.index)).toEqual(Array.from({ length: 40 - first }, (_, k) => first + k));
    // As with JSON: entries run while the reply is below the cap, so it ends at most one entry past it.
    const longest = Math.max(...res.text.map((t) => Buffer.byteLength(JSON.stringify(t))));
    expect(r.frame.length + (r.arrays ?? []).reduce((a, f) => a + f.length, 0)).toBeLessThan(32 * 1024 + longest + 1024);
  });

  it('the header validates against the schema; the client decoder refuses frames that do not fit it', () => {
    const h = handler();
    const s = (h.handleValue({ v: 1, op: 'reset', seed: 1, options: DISCRETE }).reply as { result: { session: string } }).result.session;
    const r = h.handleValue({ v: 1, id: 2, op: 'step_batch', steps: [{ session: s, action: 0 }, { session: s, action: 0 }], encoding: 'binary' });
    expect(getValidators().replies.step_batch(r.reply)).toBe(true);
    const res = (r.reply as { result: BinaryBatchResult }).result;
    const frames = r.arrays as Buffer[];
    expect(checkBinaryFrames(res, frames)).toBeNull();
    expect(decodeBinaryArrays(res, frames)['step']).toEqual(Float64Array.from([1, 2]));
    expect(() => decodeBinaryArrays(res, frames.slice(1))).toThrow(/lists 11 arrays, the reply has 10/);
    expect(() => decodeBinaryArrays(res, [frames[0]?.subarray(1) as Buffer, ...frames.slice(1)])).toThrow(/array reward: 15 bytes/);
    expect(() => decodeBinaryArrays({ ...res, arrays: res.arrays.map((a, k) => (k === 0 ? { ...a, dtype: '<i8' as never } : a)) }, frames)).toThrow(/unknown dtype/);
    expect(() => decodeBinaryArrays({ ...res, n: 3 }, frames)).toThrow(/malformed binary/);
  });
});

describe('binary step_batch: the reply frame as the server sends it', () => {
  it('is the bytes of JSON.stringify of the reply, its texts written as the entries run (one session stepped twice)', () => {
    const presets = listPresets();
    const make = (): ProtocolHandler => new ProtocolHandler(new SessionManager({ presets }), { version: '0', presets, maxMessageBytes: 1 << 20 }, {});
    // `wire` answers as the server does (beginPayload, the batch run to its end, no results kept); `plain` keeps them.
    const wire = make();
    const plain = make();
    const options = [{ stall_steps: 0 }, { stall_steps: 0, company_name: 'Caf\u00e9 "Q\\uote" \u20ac \ud83d\ude00' }, { stall_steps: 0, text: false }];
    const ids = options.map((o, k) => {
      const a = wire.handleValue({ v: 1, op: 'reset', seed: 30 + k, options: o }).reply as { ok: true; result: { session: string } };
      const b = plain.handleValue({ v: 1, op: 'reset', seed: 30 + k, options: o }).reply as { ok: true; result: { session: string } };
      expect(a.ok && b.ok && a.result.session === b.result.session).toBe(true);
      return a.result.session;
    });
    const [s0, s1, s2] = ids as [string, string, string];
    const steps = [
      { session: s0, action: 'market browse --limit 2' },
      { session: s0, action: 'company status' },
      { session: s1, action: 'company status' },
      { session: 'nope', action: 'company status' },
      { session: s1, action: 'market browse --limit 4' },
      { session: s2, action: 'company status' },
      { session: s0, action: 'nonsense \u00fc "x" \\ \ud800' },
      { session: s1, action: 'employee list' },
    ];
    for (const id of [7, 'r"\u00e9\\1']) {
      const req = { v: 1, id, op: 'step_batch', steps, encoding: 'binary' };
      const begun = wire.beginPayload(Buffer.from(JSON.stringify(req), 'utf8'), 1 << 20);
      const sent = begun instanceof BatchJob ? (begun.run(Number.POSITIVE_INFINITY) as Handled) : begun;
      const kept = plain.handleValue(req);
      expect(kept.reply.ok, JSON.stringify(kept.reply).slice(0, 300)).toBe(true);
      expect(sent.frame.toString('utf8')).toBe(JSON.stringify(kept.reply));
      expect(sent.frame.equals(Buffer.from(JSON.stringify(kept.reply), 'utf8'))).toBe(true);
      expect((sent.arrays ?? []).map((f) => f.toString('hex'))).toEqual((kept.arrays ?? []).map((f) => f.toString('hex')));
      const texts = (kept.reply as { result: BinaryBatchResult }).result.text;
      expect(texts[0]).not.toBe(texts[1]);
      expect(texts[3]).toBe('');
      expect(texts[5]).toBe('');
    }
  });
});
