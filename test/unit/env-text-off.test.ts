/**
 * Reset option `text: false` (issue 14, item 1): observations without the output text, everything else unchanged,
 * and the output is never rendered (the JSON text is the costliest part of a step).
 */
import { describe, expect, it } from 'vitest';
import { Env } from '../../src/env/env.js';
import { makePolicy } from '../../baselines/index.js';
import { runEpisode } from '../../src/env/episode.js';
import { BufferSink } from '../helpers/text-sink.js';

describe('reset option text: false', () => {
  it('blanks only the text of every observation; rewards, status, info and frames are those of a run with text', () => {
    for (const actions of ['text', 'discrete'] as const) {
      const on = new Env();
      const off = new Env();
      const a = on.reset({ seed: 7, options: { actions, stall_steps: 0 } });
      const b = off.reset({ seed: 7, options: { actions, stall_steps: 0, text: false } });
      expect(b).toEqual(a);
      const cmds = ['market browse --limit 5', 'task accept --task-id Task-1', 'employee list', 'sim resume', 'nope'];
      for (let i = 0; i < 40; i++) {
        const act = actions === 'text' ? (cmds[i % cmds.length] as string) : (on.actionMask() as boolean[]).findIndex((m, k) => m && k > 0) ?? 0;
        const x = on.step(act === -1 ? 0 : act);
        const y = off.step(act === -1 ? 0 : act);
        expect(y.observation.text).toBe('');
        expect({ ...y, observation: { ...y.observation, text: x.observation.text } }).toEqual(x);
        if (x.terminated || x.truncated) break;
      }
    }
  });

  it('appendLastText appends the UTF-8 bytes of the text a run with text shows, rendered or not (refusals and usage errors too)', () => {
    const bytesOf = (env: Env): Buffer => {
      const sink = new BufferSink('x');
      env.appendLastText(sink);
      return sink.kept.subarray(1);
    };
    for (const actions of ['text', 'discrete'] as const) {
      const on = new Env();
      const off = new Env();
      on.reset({ seed: 11, options: { actions, stall_steps: 0 } });
      off.reset({ seed: 11, options: { actions, stall_steps: 0, text: false } });
      expect(bytesOf(off).length).toBe(0);
      const cmds = ['market browse', 'task accept --task-id Task-2', 'task list', 'sim resume', 'bogus verb', 'task accept --task-id "caf\u00e9 \u00fc"', '--help'];
      for (let i = 0; i < 30; i++) {
        // Discrete: every action index in turn, masked-out ones (refusals) included.
        const act = actions === 'text' ? (cmds[i % cmds.length] as string) : i % (on.actionMask() as boolean[]).length;
        const x = on.step(act);
        off.step(act);
        const want = Buffer.from(x.observation.text, 'utf8');
        expect(bytesOf(off).equals(want)).toBe(true);
        expect(bytesOf(on).equals(want)).toBe(true);
        if (x.terminated || x.truncated) break;
      }
    }
  });

  it('keeps the option through snapshot and restore, and refuses a non-boolean', () => {
    const env = new Env();
    env.reset({ seed: 2, options: { text: false } });
    env.step('company status');
    const snap = env.snapshot();
    expect(snap.text).toBe(false);
    const copy = new Env();
    copy.restore(snap);
    expect(copy.step('company status').observation.text).toBe('');
    expect(new Env().reset({ seed: 2 }) && (() => new Env().reset({ seed: 2, options: { text: 'no' as never } }))).toThrow(/^\/options\/text: must be boolean$/);
  });

  it('plays the golden greedy episode to the same end', () => {
    const run = (text: boolean) => runEpisode(new Env(), makePolicy('greedy'), { seed: 1, options: { text } }, { onStep: () => undefined });
    expect(run(false)).toEqual(run(true));
  });
});
