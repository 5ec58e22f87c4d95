/**
 * The server's JSON byte writer (src/server/json-writer.ts) writes exactly the UTF-8 bytes of `JSON.stringify`: over
 * random values (any string: escapes, non-ASCII, lone surrogates; any number; every kind of value `JSON.stringify`
 * leaves out, converts or refuses), over real step results whose output text is an `OutputText` (`Env.stepForWire`,
 * rendered escaped from the command's value) against the plain `Env.step` of a twin, and over whole `step_batch`
 * replies as the server sends them against `JSON.stringify` of the reply a twin handler keeps (error entries, refused
 * entries of a capped reply, entries run one per slice, every kind of request id), and lockstep `step` replies alike;
 * and status blocks written from the simulation (`StatusWire`) over whole episodes and client renames; step results that
 * write themselves (`WireStep`) over whole episodes, and their runs copied from `WireStepMemo` whichever input changes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listPresets } from '../../src/config/load.js';
import { makePolicy } from '../../baselines/index.js';
import { Env, type JsonSink, OutputText, type ResetOptions, type StepInfo, type WireObservation, WireStep, WireStepMemo, WireValue } from '../../src/env/env.js';
import { runEpisode, type SyncEnvLike } from '../../src/env/episode.js';
import type { Simulation } from '../../src/sim/index.js';
import { D } from '../../src/sim/py/decimal.js';
import { JsonWriter } from '../../src/server/json-writer.js';
import { BatchJob, ProtocolHandler } from '../../src/server/protocol-handler.js';
import { SessionManager } from '../../src/server/sessions.js';

/** The writer's bytes equal JSON.stringify's UTF-8, or both refuse the value. */
function expectSame(v: unknown, capacity = 16): void {
  let expected: string | undefined;
  let threw = false;
  try {
    expected = JSON.stringify(v);
  } catch {
    threw = true;
  }
  const w = new JsonWriter(capacity);
  if (threw || expected === undefined) {
    expect(() => w.value(v)).toThrow();
    return;
  }
  w.value(v);
  expect(w.written().toString('utf8')).toBe(expected);
  expect(w.written().equals(Buffer.from(expected, 'utf8'))).toBe(true);
}

const oddChar = fc.constantFrom('\ud800', '\udfff', '\ud83d', '\ude00', '😀', 'é', '\u2028', '\u007f', '\u0000', '\u001f', '"', '\\', '\n', '\t', '\b', '/', 'a', ' ');
const str = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: oddChar, maxLength: 12 }),
  // Long enough for the native path.
  fc.string({ unit: fc.oneof(oddChar, fc.constantFrom('x', 'y')), minLength: 60, maxLength: 200 }),
);
const num = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1e21, 1e-7, 5e-324, 2 ** 53, -(2 ** 31), 2 ** 31, 9, 10, -1, 0.1));

class Thing {
  a = 1;
  constructor(readonly b: unknown) {}
  method(): number {
    return 2;
  }
}

/** Values JSON.stringify leaves out, converts (toJSON, boxes, non-plain objects) or refuses (BigInt). */
const odd = fc.constantFrom<unknown>(
  undefined,
  () => 1,
  Symbol('s'),
  new Date(0),
  new Map([[1, 2]]),
  new Set([1]),
  new Number(3),
  new String('s"'),
  new Boolean(false),
  new Float32Array([1.5, 2]),
  new Thing('x'),
  { toJSON: (k: string) => `key ${k}` },
  { toJSON: () => undefined },
  Object.assign(Object.create(null) as object, { z: 1, a: [2] }),
  new Array(3),
  Object.assign([1, 2], { extra: 3 }),
  { 2: 'two', 1: 'one', b: 'b', a: 'a' },
  10n,
);

const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    num,
    str,
    odd,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(str, tie('value'), { maxKeys: 6 }),
    tie('value').map((v) => ({ toJSON: (k: string) => [k, v] })),
  ),
}));

describe('JsonWriter writes what JSON.stringify writes', () => {
  it('random values', () => {
    fc.assert(fc.property(value, (v) => expectSame(v)), { numRuns: 5000 });
  });

  it('random values under every key kind, from a nearly full buffer', () => {
    fc.assert(fc.property(fc.dictionary(str, value, { minKeys: 1, maxKeys: 8 }), fc.integer({ min: 1, max: 100 }), (v, cap) => expectSame({ v: [v, v] }, cap)), { numRuns: 2000 });
  });

  it('objects that share keys in other orders, other keys after the same key, or skip a key (the next-key hint)', () => {
    const shapes: Record<string, unknown>[] = [
      { a: 1, b: 2, c: 3 },
      { a: 1, c: 3, b: 2 },
      { a: 1, b: undefined, c: 3 },
      { b: 2, a: 1 },
      { a: 1, b: 2, d: 4 },
      { a: 1 },
      { a: 1, b: 2, c: 3 },
      { x: { a: 1, b: 2 }, a: [{ b: 2, a: 1 }, { a: 1, b: 2, c: { c: 3, a: 1 } }] },
    ];
    for (let round = 0; round < 3; round++) for (const v of shapes) expectSame(v);
    fc.assert(fc.property(fc.array(fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.oneof(fc.integer(), fc.constant(undefined)), { maxKeys: 5 }), { maxLength: 6 }), (v) => expectSame(v)), { numRuns: 1000 });
  });

  it('output texts: their escaped bytes between quotes', () => {
    fc.assert(
      fc.property(str, fc.boolean(), (s, nested) => {
        const t = new OutputText({ text: s, appendEscapedText: (sink) => sink.string(JSON.stringify(s).slice(1, -1)) });
        expectSame(nested ? { observation: { text: t, ok: true } } : t);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses cycles and BigInt as JSON.stringify does', () => {
    const cyc: Record<string, unknown> = { a: 1 };
    cyc['self'] = { cyc };
    expect(() => JSON.stringify(cyc)).toThrow();
    expect(() => new JsonWriter().value(cyc)).toThrow();
    expect(() => new JsonWriter().value({ a: [1n] })).toThrow();
  });
});

const presets = listPresets();

/** Command lines: outputs of every kind (indented, compact errors, usage text, help), escapes, non-ASCII, a lone surrogate. */
const line = fc.oneof(
  fc.constantFrom(
    'company status',
    'market browse',
    'market browse --limit 3',
    'task list',
    'sim resume',
    'employee list',
    'client list',
    'task accept --task-id Task-1',
    'task accept --task-id Task-2',
    'task assign --task-id Task-1 --employees Emp_1,Emp_2',
    'task dispatch --task-id Task-1',
    'finance ledger',
    'report monthly',
    'client history',
    '--help',
    'company status --bad',
    'bogus ☃ \ud800 "q" \\',
    '',
  ),
  fc.string({ unit: oddChar, maxLength: 10 }),
);

const resetOptions = fc.constantFrom<ResetOptions>(
  { stall_steps: 0 },
  { stall_steps: 0, text: false },
  { stall_steps: 0, admissible_commands: true, market_slots: 3, task_slots: 2 },
  { actions: 'discrete', market_slots: 3, task_slots: 2, max_steps: 30 },
  { actions: 'discrete', text: false, admissible_commands: true },
);

describe('step results with output texts (Env.stepForWire)', () => {
  it('encode as the plain step results of a twin env, both by JSON.stringify and by the writer', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), resetOptions, fc.array(fc.oneof(line, fc.integer({ min: 0, max: 40 })), { minLength: 1, maxLength: 25 }), (seed, options, actions) => {
        const a = new Env();
        const b = new Env();
        a.reset({ seed, options });
        b.reset({ seed, options });
        const discrete = options.actions === 'discrete';
        for (const act of actions) {
          const action = discrete ? (typeof act === 'number' ? act : 0) : typeof act === 'string' ? act : 'company status';
          let wire;
          let plain;
          try {
            wire = a.stepForWire(action);
          } catch (e) {
            expect(() => b.step(action)).toThrow((e as Error).message);
            continue;
          }
          plain = b.step(action);
          const expected = JSON.stringify({ ok: true, result: plain });
          const w = new JsonWriter(64);
          w.value({ ok: true, result: wire });
          expect(w.written().toString('utf8')).toBe(expected);
          expect(JSON.stringify({ ok: true, result: wire })).toBe(expected);
          if (plain.terminated || plain.truncated) break;
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('step results written by themselves (Env.stepForWire: WireStep)', () => {
  it('write the bytes of the plain step result of a twin env over whole episodes, every option, to the last step', () => {
    const cases: [number, string, string, ResetOptions][] = [
      [1, 'default', 'greedy', { text: false }],
      [2, 'default', 'random', { max_steps: 30 }],
      [3, 'multi', 'throughput', { admissible_commands: true, market_slots: 3, task_slots: 2 }],
      [4, 'default', 'expert', { stall_steps: 3 }],
    ];
    let ends = 0;
    let wakes = 0;
    for (const [seed, preset, policyName, options] of cases) {
      const a = new Env();
      const b = new Env();
      a.reset({ seed, preset, options });
      let last: { terminated: boolean; truncated: boolean } | null = null;
      const driver: SyncEnvLike = {
        reset: (args) => b.reset(args),
        step: (action) => {
          const wire = a.stepForWire(action);
          const plain = b.step(action);
          // The fast path: the result writes itself (not walked as a plain object).
          expect(wire).toBeInstanceOf(WireValue);
          const expected = JSON.stringify(plain);
          const w = new JsonWriter(16);
          w.value(wire);
          expect(w.written().toString('utf8')).toBe(expected);
          expect(JSON.stringify(wire)).toBe(expected);
          wakes += plain.observation.status.events.length;
          last = plain;
          return plain;
        },
      };
      runEpisode(driver, makePolicy(policyName), { seed, preset, options }, { onStep: () => undefined });
      const end = last as { terminated: boolean; truncated: boolean } | null;
      if (end !== null && (end.terminated || end.truncated)) ends++;
    }
    expect(ends).toBe(cases.length);
    expect(wakes).toBeGreaterThan(0);
  });

  it('write the Discrete frame and action text of a Discrete step as the plain result has them', () => {
    const a = new Env();
    const b = new Env();
    const options: ResetOptions = { actions: 'discrete', market_slots: 3, task_slots: 2, max_steps: 40, admissible_commands: true };
    a.reset({ seed: 9, options });
    b.reset({ seed: 9, options });
    for (let k = 0; k < 40; k++) {
      const mask = b.actionMask() as boolean[];
      const action = k % 7 === 6 ? mask.indexOf(false) : mask.lastIndexOf(true);
      const wire = a.stepForWire(action < 0 ? 0 : action);
      const plain = b.step(action < 0 ? 0 : action);
      expect(Object.keys(plain.info)).toContain('admissible_commands');
      expect(plain.observation.discrete).toBeDefined();
      const w = new JsonWriter(16);
      w.value(wire);
      expect(w.written().toString('utf8')).toBe(JSON.stringify(plain));
      if (plain.terminated || plain.truncated) break;
    }
  });
});

describe("a WireStep's runs copied while their inputs are the same (WireStepMemo)", () => {
  /** A status block stand-in: the memo's runs lie on both sides of it. */
  class Block extends WireValue {
    constructor(private readonly n: number) {
      super();
    }
    toJSON(): unknown {
      return { n: this.n };
    }
    writeJson(out: JsonSink): void {
      out.ascii(`{"n":${this.n}}`);
    }
  }
  // Small domains: consecutive steps often repeat a field, and often change one alone.
  const step = fc.record({
    text: fc.constantFrom('', 'ok', 'caf\u00e9 "x"\n'),
    ok: fc.boolean(),
    exit: fc.constantFrom(0, 1, 2),
    command: fc.constantFrom(null, 'company status', 'task accept', 'caf\u00e9'),
    reward: fc.constantFrom(0, -0, 1.5, 0.1 + 0.2, -12.34, 1e21),
    terminated: fc.boolean(),
    truncated: fc.boolean(),
    rewardCents: fc.constantFrom(0, 150, -1234, 2 ** 40),
    step: fc.nat({ max: 3000 }),
    funds: fc.constantFrom(0, -5, 10 ** 12, 2 ** 31),
    reason: fc.constantFrom(null, 'bankruptcy', 'horizon_end', 'max_steps', 'stall'),
    actionText: fc.constantFrom(undefined, 'company status', 'task accept --task-id Task-1'),
    admissible: fc.constantFrom(undefined, [], ['company status', 'caf\u00e9']),
    block: fc.nat({ max: 2 }),
  });

  it('write the bytes of JSON.stringify of the plain result, step after step, whichever inputs change', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
        const memo = new WireStepMemo();
        for (const x of steps) {
          const info: StepInfo = { reward_cents: x.rewardCents, step: x.step, funds_cents: x.funds, terminal_reason: x.reason as StepInfo['terminal_reason'] };
          if (x.actionText !== undefined) info.action_text = x.actionText;
          if (x.admissible !== undefined) info.admissible_commands = [...x.admissible];
          const obs: WireObservation = { text: x.text, ok: x.ok, exit_code: x.exit, command: x.command, status: new Block(x.block) };
          const wire = new WireStep(obs, x.reward, x.terminated, x.truncated, info, memo);
          const plain = { observation: { text: x.text, ok: x.ok, exit_code: x.exit, command: x.command, status: { n: x.block } }, reward: x.reward, terminated: x.terminated, truncated: x.truncated, info };
          const w = new JsonWriter(16);
          w.value(wire);
          expect(w.written().toString('utf8')).toBe(JSON.stringify(plain));
          expect(JSON.stringify(wire)).toBe(JSON.stringify(plain));
        }
      }),
      { numRuns: 400 },
    );
  });
});

/** Two handlers with the same sessions (text, text without output, Discrete, one that ends after two steps). */
function twins(cap: number): { sent: ProtocolHandler; kept: ProtocolHandler; sessions: string[] } {
  const make = (): ProtocolHandler => new ProtocolHandler(new SessionManager({ presets }), { version: '0', presets, maxMessageBytes: 1 << 20 }, { maxBatchReplyBytes: cap });
  const sent = make();
  const kept = make();
  const sessions: string[] = [];
  const opts: ResetOptions[] = [{ stall_steps: 0 }, { text: false }, { actions: 'discrete', market_slots: 3, task_slots: 2 }, { max_steps: 2, admissible_commands: true }];
  opts.forEach((options, k) => {
    const a = sent.handleValue({ v: 1, op: 'reset', seed: 20 + k, options }).reply as { ok: true; result: { session: string } };
    kept.handleValue({ v: 1, op: 'reset', seed: 20 + k, options });
    sessions.push(a.result.session);
  });
  return { sent, kept, sessions };
}

const requestId = fc.oneof(fc.constant(undefined), fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.string({ unit: oddChar, maxLength: 8 }).filter((s) => !/[\ud800-\udfff]/.test(s)), fc.string({ maxLength: 8 }));

describe('step_batch replies as the server sends them', () => {
  it('are the bytes of JSON.stringify of the reply a twin keeps, capped, sliced, with errors', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(4096, 32 * 1024, 1 << 20),
        fc.boolean(),
        requestId,
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.oneof(line, fc.integer({ min: 0, max: 40 }))), { minLength: 1, maxLength: 20 }),
        (cap, sliced, id, entries) => {
          const { sent, kept, sessions } = twins(cap);
          const steps = entries.map(([k, a]) => ({ session: k < sessions.length ? (sessions[k] as string) : k === 4 ? 'nope' : 's999', action: a }));
          const req = { v: 1, op: 'step_batch', steps, ...(id !== undefined ? { id } : {}) };
          const expected = JSON.stringify(kept.handleValue(req).reply);
          const job = sent.beginPayload(Buffer.from(JSON.stringify(req)), 1 << 20);
          if (!(job instanceof BatchJob)) {
            expect(job.frame.toString('utf8')).toBe(expected);
            return;
          }
          // Sliced: one entry per call (a deadline in the past), as a busy server runs it.
          let h = job.run(sliced ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY);
          while (h === null) h = job.run(Number.NEGATIVE_INFINITY);
          expect(h.body).toBeInstanceOf(Buffer);
          expect(h.frame.toString('utf8')).toBe(expected);
          expect(h.frame.equals(Buffer.from(expected, 'utf8'))).toBe(true);
          expect(job.replyBytes).toBe(h.frame.length - Buffer.byteLength(`{"v":1,"id":${JSON.stringify(id ?? null)},"ok":true,"result":{"results":]}}`));
        },
      ),
      { numRuns: 80 },
    );
  });
});

describe('step replies as the server sends them', () => {
  it('are the text of JSON.stringify of the reply a twin gives in-process, errors and every kind of id included', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(requestId, fc.integer({ min: 0, max: 5 }), fc.oneof(line, fc.integer({ min: 0, max: 40 }))), { minLength: 1, maxLength: 12 }), (calls) => {
        const { sent, kept, sessions } = twins(1 << 20);
        for (const [id, k, action] of calls) {
          const req = { v: 1, op: 'step', session: k < sessions.length ? (sessions[k] as string) : 'nope', action, ...(id !== undefined ? { id } : {}) };
          const expected = JSON.stringify(kept.handleValue(req).reply);
          const h = sent.beginPayload(Buffer.from(JSON.stringify(req)), 1 << 20);
          if (h instanceof BatchJob) throw new Error('a step is no batch');
          // A string: the server hands strings to ZeroMQ (a Buffer would go zero-copy, at a cost per reply).
          expect(typeof h.body).toBe('string');
          expect(h.body).toBe(expected);
          expect(h.frame.equals(Buffer.from(expected, 'utf8'))).toBe(true);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('status blocks written from the simulation (StatusWire)', () => {
  /** The writer's bytes of `a`'s wire status against JSON.stringify of twin `b`'s plain status, step after step. */
  function playTwins(seed: number, preset: string, policyName: string, rename?: (step: number) => string[] | null): { steps: number; trustChanges: number; prestigeChanges: number; events: number } {
    const a = new Env();
    const b = new Env();
    const options = { stall_steps: 0 };
    a.reset({ seed, preset, options });
    let trustChanges = 0;
    let prestigeChanges = 0;
    let events = 0;
    let lastTrust = '';
    let lastPrestige = '';
    const driver: SyncEnvLike = {
      reset: (args) => b.reset(args),
      step: (action) => {
        const names = rename?.(stepCount) ?? null;
        if (names !== null) {
          for (const env of [a, b]) (env.simulation as Simulation).state.clients.forEach((c, i) => ((c as { name: string }).name = names[i % names.length] as string));
        }
        const wire = a.stepForWire(action);
        const plain = b.step(action);
        stepCount++;
        expect(wire.observation.status).not.toHaveProperty('sim_time');
        const w = new JsonWriter(16);
        w.value(wire.observation.status);
        const expected = JSON.stringify(plain.observation.status);
        expect(w.written().toString('utf8')).toBe(expected);
        expect(JSON.stringify(wire.observation.status)).toBe(expected);
        const s = plain.observation.status;
        if (JSON.stringify(s.trust) !== lastTrust) trustChanges++;
        if (JSON.stringify(s.prestige) !== lastPrestige) prestigeChanges++;
        lastTrust = JSON.stringify(s.trust);
        lastPrestige = JSON.stringify(s.prestige);
        events += s.events.length;
        return plain;
      },
    };
    let stepCount = 0;
    runEpisode(driver, makePolicy(policyName), { seed, preset, options }, { onStep: () => undefined });
    return { steps: stepCount, trustChanges, prestigeChanges, events };
  }

  it('equal JSON.stringify of statusOf over whole episodes (prestige, trust, events, bankruptcy change)', () => {
    let trust = 0;
    let prestige = 0;
    let events = 0;
    for (const [seed, preset, policy] of [[1, 'default', 'greedy'], [2, 'default', 'expert'], [3, 'multi', 'throughput'], [4, 'default', 'random']] as const) {
      const r = playTwins(seed, preset, policy);
      expect(r.steps).toBeGreaterThan(10);
      trust += r.trustChanges;
      prestige += r.prestigeChanges;
      events += r.events;
    }
    // The episodes exercise every memo: trust and prestige changed many times, and wake events were written.
    expect(trust).toBeGreaterThan(10);
    expect(prestige).toBeGreaterThan(10);
    expect(events).toBeGreaterThan(10);
  });

  it('are written again when any one figure changes between steps that change nothing else (the kept head is not reused)', () => {
    // Twin envs stepped with "company status" (which changes nothing); before some steps one figure of the block is
    // changed in both simulations. Each changed figure must show in the next block, and an unchanged block stays the same.
    type State = Simulation['state'];
    type Mutable<T> = { -readonly [K in keyof T]: T[K] };
    const changes: [string, ((s: Mutable<State>) => void) | 'accept'][] = [
      ['funds', (s) => void (s.fundsCents += 1)],
      ['funds only in the cents (runway unchanged)', (s) => void (s.fundsCents += 1)],
      ['time', (s) => void (s.simTime += 3_600_000_000)],
      ['payroll', (s) => void ((s.employees[0] as { salaryCents: number }).salaryCents += 100)],
      ['prestige', (s) => void ((s.prestige as Record<string, unknown>)['research'] = D('2.5'))],
      ['trust', (s) => void ((s.clients[0] as { trust: unknown }).trust = D('0.75'))],
      ['a task planned', 'accept'],
      ['the planned task active', (s) => void ((s.tasks.find((x) => x.owned && x.status === 'planned') as { status: string }).status = 'active')],
      ['the active task completed', (s) => void ((s.tasks.find((x) => x.owned && x.status === 'active') as { status: string }).status = 'completed_success')],
      ['another task planned', 'accept'],
      ['it active', (s) => void ((s.tasks.find((x) => x.owned && x.status === 'planned') as { status: string }).status = 'active')],
      ['it cancelled (only the active count changes)', (s) => void ((s.tasks.find((x) => x.owned && x.status === 'active') as { status: string }).status = 'cancelled')],
      ['it completed (only the completed count changes)', (s) => void ((s.tasks.find((x) => x.owned && x.status === 'cancelled') as { status: string }).status = 'completed_fail')],
      ['horizon', (s) => void (s.horizonEnd += 86_400_000_000)],
      ['bankrupt', (s) => void (s.fundsCents = -1)],
    ];
    const a = new Env();
    const b = new Env();
    a.reset({ seed: 11, options: { stall_steps: 0 } });
    b.reset({ seed: 11, options: { stall_steps: 0 } });
    let previous = '';
    const step = (): string => {
      const w = new JsonWriter(16);
      w.value(a.stepForWire('company status').observation.status);
      const expected = JSON.stringify(b.step('company status').observation.status);
      expect(w.written().toString('utf8')).toBe(expected);
      return expected;
    };
    previous = step();
    for (const [what, change] of changes) {
      expect(step(), `nothing changed (before: ${what})`).toBe(previous);
      if (change === 'accept') {
        // Through the command (the simulation lists owned tasks when it claims them): the first market task it takes.
        const ids = (a.simulation as Simulation).state.tasks.filter((x) => !x.owned).map((x) => x.id);
        let accepted = false;
        for (const id of ids) {
          accepted = a.stepForWire(`task accept --task-id Task-${id}`).observation.ok;
          expect(b.step(`task accept --task-id Task-${id}`).observation.ok).toBe(accepted);
          if (accepted) break;
        }
        expect(accepted).toBe(true);
      } else {
        for (const env of [a, b]) change((env.simulation as Simulation).state as Mutable<State>);
      }
      const now = step();
      expect(now, what).not.toBe(previous);
      previous = now;
    }
  });

  it('follow client renames: escapes, non-ASCII, lone surrogates, duplicate, numeric and __proto__ names', () => {
    const sets = [['Ünïcødé "Q"\\', 'line\nbreak', '😀', '\ud800 lone'], ['same', 'same', 'b', 'a'], ['10', '2', '__proto__', 'x'], ['\u2028', 'constructor', 'toString', '']];
    playTwins(5, 'default', 'greedy', (step) => (step % 7 === 3 ? (sets[(step / 7) % sets.length | 0] as string[]) : null));
    // Renames that keep the clients' order (the same trust values in the same places): the names still change.
    const names = new Env();
    names.reset({ seed: 6 });
    const original = (names.simulation as Simulation).state.clients.map((c) => c.name);
    playTwins(6, 'default', 'greedy', (step) => (step % 5 === 2 ? original.map((n) => `${n} "${step}"`) : null));
  });
});
