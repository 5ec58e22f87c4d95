/**
 * The turn protocol over ZeroMQ (`turn_reset`, `turn_step`, `turn_messages`, `turn_snapshot`, `turn_restore`,
 * `turn_time_series`): a TurnEnv session driven over the wire hands out exactly the chat of an in-process
 * `TurnEnv` given the same actions (the reference recordings' tool calls), snapshots continue exactly, sessions
 * of the two kinds refuse each other's ops, and every reply matches schema/protocol.schema.json.
 */
import { describe, expect, it } from 'vitest';
import { Dealer } from 'zeromq';
import { ProtocolError } from '../../src/client/client.js';
import { statusOf } from '../../src/env/env.js';
import { toolSchemas } from '../../src/turns/tools.js';
import { TurnEnv, type ChatMessage, type TurnAction, type TurnOptions } from '../../src/turns/turns.js';
import { extractTimeSeries } from '../../src/export/rollout-json.js';
import { checkReply, schemaValidator, type Op, type Reply } from '../../src/protocol/protocol.js';
import { serverFixture } from '../helpers/server-fixture.js';
import { commandVerb, type TurnStepReply } from '../../src/server/turn-session.js';
import { runCommand } from '../../src/turns/executor.js';
import { Simulation } from '../../src/sim/index.js';
import { loadPreset } from '../../src/config/load.js';
import { canonMessage, fixture } from '../turns/helpers.js';

interface Recording {
  seed: number;
  max_episodes: number;
  pool: ChatMessage[];
  calls: { messages: number[]; reply: { content: string | null; tool_calls: { id: string; name: string; arguments: string }[] } }[];
}

/** The recordings whose preset changes are turn options (the others change the world config, which the wire does not take). */
const SCENARIOS: { file: string; options: TurnOptions }[] = [
  { file: 'ref-mixed.json.gz', options: { auto_advance_after_turns: 5, max_turns: 26, history_keep_rounds: 20 } },
  { file: 'ref-bankrupt.json.gz', options: { auto_advance_after_turns: 3, max_turns: 60, history_keep_rounds: 6, max_episodes: 2 } },
];

const fx = serverFixture();
const checks = {
  TurnResetResult: schemaValidator('TurnResetResult'),
  TurnStepResult: schemaValidator('TurnStepResult'),
  TurnMessagesResult: schemaValidator('TurnMessagesResult'),
  TurnSnapshotResult: schemaValidator('TurnSnapshotResult'),
  TurnRestoreResult: schemaValidator('TurnRestoreResult'),
  TurnTimeSeriesResult: schemaValidator('TurnTimeSeriesResult'),
};

function valid(def: keyof typeof checks, v: unknown): void {
  expect(checks[def](v), def).toBeNull();
}


async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof ProtocolError) return e.message; // "<code>: <message>"
    throw e;
  }
}

function actionOf(call: Recording['calls'][number]): TurnAction {
  const tc = call.reply.tool_calls;
  return tc.length === 0 ? { content: call.reply.content } : { tool_calls: tc, content: call.reply.content };
}

describe('a TurnEnv over ZeroMQ is the in-process TurnEnv', () => {
  for (const sc of SCENARIOS) {
    it(`${sc.file}: same chat before every call, same results, same ending (and the reference's chat)`, async () => {
      const rec = fixture<Recording>(sc.file);
      const local = new TurnEnv();
      const options = { ...sc.options, ...(rec.max_episodes > 1 ? { max_episodes: rec.max_episodes } : {}) };
      const lr = local.reset({ seed: rec.seed, preset: 'default', options });
      const r = await fx.client.turnReset({ seed: rec.seed, preset: 'default', options });
      valid('TurnResetResult', r);
      expect(r.messages).toEqual(lr.messages);
      expect(r.info).toEqual(lr.info);
      expect(r.tools).toEqual(local.tools());
      expect(r.tool_choice).toBe('auto');
      for (const [k, call] of rec.calls.entries()) {
        const msgs = await fx.client.turnMessages(r.session);
        expect(msgs, `messages before call ${k + 1}`).toEqual(local.messages());
        // ycgym's chat is the reference's (UUIDs aside; these recordings have no same-instant events).
        expect(msgs.map(canonMessage), `reference chat before call ${k + 1}`).toEqual(call.messages.map((i) => canonMessage(rec.pool[i] as ChatMessage)));
        const s = await fx.client.turnStep(r.session, actionOf(call));
        valid('TurnStepResult', s);
        const ls = local.step(actionOf(call));
        expect(s.tool_results).toEqual(ls.toolResults);
        expect(s.next_user_message).toBe(ls.nextUserMessage);
        expect([s.done, s.terminal_reason]).toEqual([ls.done, ls.terminalReason]);
        expect(s.info).toEqual(ls.info);
      }
      expect(local.done).toBe(true);
      expect(await code(fx.client.turnStep(r.session, ['yc-bench company status']))).toMatch(/^episode_over: /);
      await fx.client.closeSession(r.session);
    });
  }

  it('commands shorthand: run_command calls with ids call_{n}_{i}', async () => {
    const local = new TurnEnv();
    local.reset({ seed: 5, preset: 'default' });
    const r = await fx.client.turnReset({ seed: 5 });
    const turns = [['yc-bench market browse --limit 2', 'yc-bench employee list'], [], ['market browse', 'yc-bench sim resume'], ['yc-bench scratchpad write --content "note"']];
    for (const cmds of turns) {
      const s = await fx.client.turnStep(r.session, cmds);
      const ls = local.step(cmds);
      expect(s.tool_results).toEqual(ls.toolResults);
      expect(s.info).toEqual(ls.info);
      expect(await fx.client.turnMessages(r.session)).toEqual(local.messages());
    }
    const msgs = await fx.client.turnMessages(r.session);
    expect(msgs[0]?.content).toContain('## Your Scratchpad Notes\nnote');
    await fx.client.closeSession(r.session);
  });
});

describe('detail, tools, time series', () => {
  it('detail: the status after every call, recognised verbs, the auto-advance, the ended episode', async () => {
    const local = new TurnEnv();
    const options: TurnOptions = { auto_advance_after_turns: 1, max_turns: 2 };
    local.reset({ seed: 7, preset: 'default', options });
    const r = await fx.client.turnReset({ seed: 7, options, detail: true });
    valid('TurnResetResult', r);
    expect(r.detail?.status).toEqual(statusOf(local.simulation as NonNullable<typeof local.simulation>));
    const cmds = ['yc-bench market browse --limit 1', 'yc-bench task accept --task-id nope', 'market browse', 'yc-bench task list --help', 'yc-bench task accept'];
    const s: TurnStepReply = await fx.client.turnStep(r.session, cmds, { detail: true });
    valid('TurnStepResult', s);
    const d = s.detail;
    if (d === undefined) throw new Error('no detail');
    expect(d.calls.map((c) => c.command)).toEqual(['market browse', 'task accept', null, null, null]);
    expect(s.tool_results.map((t) => t.exit_code)).toEqual([0, 1, 2, 0, 2]);
    expect(s.info.auto_advanced).toBe(true);
    expect(d.auto_resume?.command).toBe('sim resume');
    expect(d.episode_time_series).toBeNull();
    local.step(cmds);
    expect(d.status).toEqual(statusOf(local.simulation as NonNullable<typeof local.simulation>));
    const s2 = await fx.client.turnStep(r.session, { tool_calls: [{ id: 'a', name: 'company_status', arguments: '{}' }], content: 'x' }, { detail: true });
    valid('TurnStepResult', s2);
    local.step({ tool_calls: [{ id: 'a', name: 'company_status', arguments: '{}' }], content: 'x' });
    expect(s2.done).toBe(true);
    expect(s2.info.episode_end?.terminal_detail).toBe('max_turns=2 reached');
    expect(s2.detail?.calls.map((c) => c.command)).toEqual(['company status']);
    expect(s2.detail?.episode_time_series).toEqual(JSON.parse(JSON.stringify(extractTimeSeries(local.simulation as NonNullable<typeof local.simulation>))));
    const ts = await fx.client.turnTimeSeries(r.session);
    valid('TurnTimeSeriesResult', { time_series: ts });
    expect(ts).toEqual(s2.detail?.episode_time_series);
    await fx.client.closeSession(r.session);
  });

  it('tools: run_command (default), verbs, all', async () => {
    const t = toolSchemas();
    for (const [choice, want] of [
      [undefined, t.reference],
      ['run_command', t.reference],
      ['verbs', t.verbs],
      ['all', [...t.reference, ...t.verbs]],
    ] as const) {
      const r = await fx.client.turnReset({ seed: 1, ...(choice !== undefined ? { tools: choice } : {}) });
      valid('TurnResetResult', r);
      expect(r.tools).toEqual(want);
      await fx.client.closeSession(r.session);
    }
  });

  it('commandVerb follows the executor (prefix policy, help, usage errors)', () => {
    expect(commandVerb('yc-bench task accept --task-id x', false)).toBe('task accept');
    expect(commandVerb('task accept --task-id x', false)).toBeNull();
    expect(commandVerb('task accept --task-id x', true)).toBe('task accept');
    expect(commandVerb('yc-bench task --help', false)).toBeNull();
    expect(commandVerb("yc-bench task accept 'x", false)).toBeNull();
    expect(commandVerb('yc-bench nope', false)).toBeNull();
    // The turn session takes the verb from the executed command (no re-parsing); both agree on every form.
    const sim = Simulation.create(loadPreset('default'), { seed: 1 });
    const lines = ['yc-bench task accept --task-id x', 'task accept --task-id x', 'yc-bench task --help', "yc-bench task accept 'x", 'yc-bench nope', 'yc-bench sim resume', 'yc-bench market browse --limit nope', 'yc-bench company status', `yc-bench scratchpad write --content ${'y'.repeat(70_000)}`, ''];
    for (const line of lines) for (const accept of [false, true]) expect(runCommand(sim, line, accept).verb, line.slice(0, 40)).toBe(commandVerb(line, accept));
  });
});

describe('snapshots', () => {
  it('turn_snapshot / turn_restore continue exactly (new session and in place)', async () => {
    const rec = fixture<Recording>('ref-mixed.json.gz');
    const options: TurnOptions = { max_turns: 26 };
    const r = await fx.client.turnReset({ seed: 1, options });
    const half = 13;
    for (const call of rec.calls.slice(0, half)) await fx.client.turnStep(r.session, actionOf(call));
    const snap = await fx.client.turnSnapshot(r.session);
    valid('TurnSnapshotResult', { snapshot: snap });
    expect(snap.format).toBe('ycgym-turns');
    const copy = await fx.client.turnRestore(snap, undefined, { detail: true });
    valid('TurnRestoreResult', copy);
    expect(copy.session).not.toBe(r.session);
    expect(copy.messages).toEqual(await fx.client.turnMessages(r.session));
    for (const call of rec.calls.slice(half)) {
      const a = await fx.client.turnStep(r.session, actionOf(call));
      const b = await fx.client.turnStep(copy.session, actionOf(call));
      expect(b).toEqual(a);
      if (!a.done) expect(await fx.client.turnMessages(copy.session)).toEqual(await fx.client.turnMessages(r.session));
    }
    // In place: the original session goes back to the middle of the run.
    const back = await fx.client.turnRestore(snap, r.session);
    valid('TurnRestoreResult', back);
    expect(back.session).toBe(r.session);
    expect(back.info.turn).toBe(half);
    const s = await fx.client.turnStep(r.session, actionOf(rec.calls[half] as Recording['calls'][number]));
    expect(s.info.turn).toBe(half + 1);
    await fx.client.closeSession(r.session);
    await fx.client.closeSession(copy.session);
  });

  it('bad snapshots are bad_snapshot and leave the target session as it was', async () => {
    const r = await fx.client.turnReset({ seed: 2 });
    await fx.client.turnStep(r.session, ['yc-bench company status']);
    const snap = await fx.client.turnSnapshot(r.session);
    const before = await fx.client.turnMessages(r.session);
    const env = await fx.client.reset({ seed: 2 });
    const envSnap = await fx.client.snapshot(env.session);
    const broken: unknown[] = [
      { ...snap, format: 'ycgym-env' },
      { ...snap, version: 2 },
      envSnap,
      { ...snap, sim: { ...snap.sim, state: { ...snap.sim.state, fundsCents: 'lots' } } },
      { ...snap, state: { ...snap.state, session: [{ role: 'wizard', content: 'x' }] } },
      { ...snap, settings: { ...snap.settings, history_keep_rounds: 0 } },
      { ...snap, extra: 1 },
    ];
    for (const b of broken) {
      expect(await code(fx.client.request('turn_restore', { snapshot: b, session: r.session }))).toMatch(/^bad_snapshot: /);
      expect(await code(fx.client.request('turn_restore', { snapshot: b }))).toMatch(/^bad_snapshot: /);
    }
    expect(await fx.client.turnMessages(r.session)).toEqual(before);
    // An Env snapshot is not a turn snapshot and vice versa.
    expect(await code(fx.client.restore(snap as never))).toMatch(/^bad_snapshot: /);
    await fx.client.closeSession(r.session);
    await fx.client.closeSession(env.session);
  });
});

describe('two kinds of sessions', () => {
  it('a turn op on an Env session and an Env op on a turn session are invalid_request; close works for both', async () => {
    const env = await fx.client.reset({ seed: 1 });
    const turns = await fx.client.turnReset({ seed: 1 });
    const e = env.session;
    const t = turns.session;
    const onEnv = [() => fx.client.turnStep(e, []), () => fx.client.turnMessages(e), () => fx.client.turnSnapshot(e), () => fx.client.turnTimeSeries(e), () => fx.client.turnReset({ seed: 1, session: e })];
    for (const p of onEnv) expect(await code(p())).toBe(`invalid_request: session ${e} is an Env session: turn_* ops need a turn-protocol session (turn_reset without session creates one)`);
    const batch = async (): Promise<void> => {
      const x = await fx.client.stepBatch([{ session: t, action: 'company status' }]);
      if (x[0] !== undefined && !x[0].ok) throw new ProtocolError(x[0].error.code, x[0].error.message);
    };
    const onTurns = [() => fx.client.step(t, 'company status'), () => fx.client.snapshot(t), () => fx.client.reset({ seed: 1, session: t }), batch];
    for (const p of onTurns) expect(await code(p())).toMatch(new RegExp(`^invalid_request: session ${t.replace('.', '\\.')} is a turn-protocol session \\(TurnEnv\\): use turn_step`));
    const envSnap = await fx.client.snapshot(e);
    expect(await code(fx.client.restore(envSnap, t))).toMatch(/^invalid_request: /);
    const turnSnap = await fx.client.turnSnapshot(t);
    expect(await code(fx.client.turnRestore(turnSnap, e))).toMatch(/^invalid_request: /);
    // Both sessions are untouched by the refused requests.
    expect((await fx.client.step(e, 'company status')).observation.ok).toBe(true);
    expect((await fx.client.turnStep(t, ['yc-bench company status'])).tool_results[0]?.ok).toBe(true);
    await fx.client.closeSession(e);
    await fx.client.closeSession(t);
    expect(await code(fx.client.turnMessages(t))).toMatch(/^unknown_session: /);
  });

  it('refused requests: schema, preset, options', async () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ seed: 1, options: { history_keep_rounds: 0 } }, /^invalid_request: \/options\/history_keep_rounds: must be >= 1/],
      [{ seed: 1, options: { fixes: { nope: true } } }, /^invalid_request: \/options\/fixes: unknown field 'nope'/],
      [{ seed: 1, options: { max_steps: 3 } }, /^invalid_request: \/options: unknown field 'max_steps'/],
      [{ seed: 1, tools: 'some' }, /^invalid_request: \/tools: must be one of/],
      [{ seed: 1, preset: 'nope' }, /^bad_preset: /],
      [{ seed: 1, preset: '/etc/passwd' }, /^bad_preset: /],
      [{ seed: 1, options: { start_date: '2024-02-29', horizon_years: 1 } }, /^invalid_request: \/options: /],
      [{ seed: 1, session: 's999999' }, /^unknown_session: /],
    ];
    for (const [fields, want] of bad) expect(await code(fx.client.request('turn_reset', fields))).toMatch(want);
    const r = await fx.client.turnReset({ seed: 1 });
    const steps: [unknown, RegExp][] = [
      [{ commands: ['x'], tool_calls: [] }, /^invalid_request: \/action: /],
      [{ content: 1 }, /^invalid_request: \/action/],
      [{ tool_calls: [{ id: 'a', name: 'run_command' }] }, /^invalid_request: \/action/],
      [{ commands: [1] }, /^invalid_request: \/action/],
    ];
    for (const [action, want] of steps) expect(await code(fx.client.request('turn_step', { session: r.session, action }))).toMatch(want);
    await fx.client.closeSession(r.session);
  });

  it('every raw reply of the turn ops matches its schema', async () => {
    const d = new Dealer({ linger: 0, receiveTimeout: 10_000 });
    d.connect(fx.server.endpoint);
    let id = 0;
    const call = async (req: Record<string, unknown>): Promise<Reply> => {
      await d.send(JSON.stringify({ v: 1, id: ++id, ...req }));
      const [frame] = await d.receive();
      const rep = JSON.parse((frame as Buffer).toString('utf8')) as Reply;
      expect(checkReply(rep.ok ? (req['op'] as Op) : null, rep), JSON.stringify(rep).slice(0, 300)).toBeNull();
      return rep;
    };
    const r = await call({ op: 'turn_reset', seed: 3, detail: true, tools: 'all' });
    if (!r.ok) throw new Error('reset failed');
    const session = (r.result as { session: string }).session;
    await call({ op: 'turn_step', session, action: { commands: ['yc-bench market browse --limit 1', 'yc-bench sim resume'] }, detail: true });
    await call({ op: 'turn_step', session, action: { tool_calls: [{ id: 'q', name: 'market_browse', arguments: '{"limit": 2}' }], content: null, reasoning_content: '' } });
    await call({ op: 'turn_step', session, action: { commands: [], content: 'hello' } });
    await call({ op: 'turn_messages', session });
    const snap = await call({ op: 'turn_snapshot', session });
    if (!snap.ok) throw new Error('snapshot failed');
    await call({ op: 'turn_restore', snapshot: (snap.result as { snapshot: unknown }).snapshot, detail: true });
    await call({ op: 'turn_time_series', session });
    await call({ op: 'turn_step', session: 'nope', action: { commands: [] } });
    await call({ op: 'close', session });
    d.close();
  });
});
