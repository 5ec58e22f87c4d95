/**
 * Fuzzing the binary `step_batch` encoding: random requests (valid and broken entries, sessions of mixed kinds and
 * shapes, random actions, small reply caps) always get exactly one schema-valid reply whose array frames fit its
 * header, and equal the JSON reply to the same request on a twin server; random frames and headers given to the
 * client decoder either decode or throw a RangeError naming the problem.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';
import { checkBinaryFrames, decodeBinaryArrays, type BatchItem, type BinaryBatchResult, type Reply } from '../../src/protocol/protocol.js';

const presets = listPresets();

/** Two servers with the same sessions (text, Discrete of two shapes), one asked for JSON, one for binary. */
function twins(cap: number): { json: ProtocolHandler; bin: ProtocolHandler; sessions: string[] } {
  const make = (): ProtocolHandler => new ProtocolHandler(new SessionManager({ presets }), { version: '0', presets, maxMessageBytes: 1 << 20 }, { validateReplies: true, maxBatchReplyBytes: cap });
  const json = make();
  const bin = make();
  const sessions: string[] = [];
  const opts = [{ stall_steps: 0 }, { actions: 'discrete', text: false, market_slots: 3, task_slots: 2 }, { actions: 'discrete', market_slots: 4, task_slots: 1, max_steps: 6 }];
  opts.forEach((options, k) => {
    const a = json.handleValue({ v: 1, op: 'reset', seed: 10 + k, options }).reply as { ok: true; result: { session: string } };
    const b = bin.handleValue({ v: 1, op: 'reset', seed: 10 + k, options }).reply as { ok: true; result: { session: string } };
    expect(a.result.session).toBe(b.result.session);
    sessions.push(a.result.session);
  });
  return { json, bin, sessions };
}

const action = fc.oneof(
  fc.integer({ min: 0, max: 60 }),
  fc.constantFrom('company status', 'sim resume', 'market browse --limit 3', 'task list', 'nonsense', ''),
  fc.string({ maxLength: 12 }),
);

describe('binary step_batch fuzz', () => {
  it('random batches: one schema-valid reply, frames that fit it, the JSON reply\'s values', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(2048, 16 * 1024, 1 << 20),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), action), { minLength: 1, maxLength: 24 }),
        (cap, entries) => {
          const { json, bin, sessions } = twins(cap);
          const steps = entries.map(([k, a]) => ({ session: k < sessions.length ? (sessions[k] as string) : k === 3 ? 'nope' : 's999', action: a }));
          const hb = bin.handleValue({ v: 1, id: 1, op: 'step_batch', steps, encoding: 'binary' });
          expect(hb.reply.ok || hb.reply.error.code === 'message_too_large', JSON.stringify(hb.reply).slice(0, 300)).toBe(true);
          if (!hb.reply.ok) {
            expect(hb.arrays).toBeUndefined();
            return;
          }
          const res = hb.reply.result as BinaryBatchResult;
          const frames = hb.arrays as Buffer[];
          expect(checkBinaryFrames(res, frames)).toBeNull();
          const arrays = decodeBinaryArrays(res, frames);
          // The JSON twin runs the same entries, minus those the binary batch refused for their frame shape.
          const shapeRefused = new Set(res.errors.filter((e) => e.error.code === 'invalid_request' && /one frame shape/.test(e.error.message)).map((e) => e.index));
          const kept = steps.filter((_, i) => !shapeRefused.has(i));
          const jr = kept.length === 0 ? null : (json.handleValue({ v: 1, id: 1, op: 'step_batch', steps: kept }).reply as Reply);
          const items = jr !== null && jr.ok ? (jr.result as { results: BatchItem[] }).results : [];
          let j = 0;
          const errors = new Map(res.errors.map((e) => [e.index, e.error]));
          steps.forEach((_, i) => {
            if (shapeRefused.has(i)) return;
            const item = items[j++] as BatchItem;
            // Either reply may reach its cap first (binary counts its arrays for every entry from the start).
            if (errors.get(i)?.code === 'message_too_large') return;
            if (!item.ok) {
              // The JSON reply is larger, so its cap may cut earlier; every other failure is the same.
              if (item.error.code !== 'message_too_large') expect(errors.get(i)).toEqual(item.error);
              return;
            }
            expect(errors.has(i)).toBe(false);
            expect(arrays['reward']?.[i]).toBe(item.result.reward);
            expect(arrays['step']?.[i]).toBe(item.result.info.step);
            expect(arrays['funds_cents']?.[i]).toBe(item.result.info.funds_cents);
            expect(res.text[i]).toBe(item.result.observation.text);
            const d = item.result.observation.discrete;
            if (d !== undefined) expect(Array.from((arrays['obs'] as Float32Array).subarray(i * d.obs.length, (i + 1) * d.obs.length))).toEqual(Array.from(Float32Array.from(d.obs)));
          });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('random headers and frames: the decoder decodes or throws a RangeError', () => {
    const dtype = fc.constantFrom('<f8', '<f4', '|u1', '<i8', '', 'f8');
    const desc = fc.record({ name: fc.constantFrom('reward', 'obs', 'mask', 'x'), dtype, shape: fc.array(fc.integer({ min: -1, max: 4 }), { minLength: 0, maxLength: 3 }) });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4 }), fc.array(desc, { maxLength: 4 }), fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 5 }), (n, arrays, frames) => {
        const res = { encoding: 'binary', n, arrays, errors: [], text: [], command: [], action_text: [], terminal_reasons: [] } as unknown as BinaryBatchResult;
        try {
          const got = decodeBinaryArrays(res, frames);
          expect(Object.keys(got).length).toBe(arrays.length === 0 ? 0 : new Set(arrays.map((a) => a.name)).size);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeError);
        }
      }),
      { numRuns: 300 },
    );
  });
});
