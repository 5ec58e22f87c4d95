/**
 * What a TypeScript caller can hand the in-process `Env`: seeds and reset options are checked by the protocol
 * schema's `reset` request (the one source a server checks them by), actions by the session's mode. Before, a seed
 * of 1.5, NaN or "3", a horizon of -1 or a company name of 5 were taken as they came (a world from whatever the
 * generator made of them, or "day is out of range for month"), and a text session ran `String(action)` of any value.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { Env, EnvUsageError } from '../../src/env/env.js';
import { TurnEnv } from '../../src/turns/turns.js';

describe('Env inputs', () => {
  it('refuses seeds and options the protocol refuses, naming the field, and changes nothing', () => {
    const env = new Env();
    const first = env.reset({ seed: 1 });
    const bad: [unknown, Record<string, unknown> | undefined, string][] = [
      [1.5, undefined, '/seed: must be integer'],
      [Number.NaN, undefined, '/seed: must be integer'],
      ['3', undefined, '/seed: must be integer'],
      [2 ** 60, undefined, '/seed: must be <= 9007199254740991'],
      [1, { horizon_years: -1 }, '/options/horizon_years: must be >= 1'],
      [1, { horizon_years: 1.5 }, '/options/horizon_years: must be integer'],
      [1, { company_name: 5 }, '/options/company_name: must be string'],
      [1, { start_date: '2025-1-1' }, '/options/start_date: must match pattern "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"'],
      [1, { max_steps: 0 }, '/options/max_steps: must be >= 1'],
      [1, { actions: 'words' }, '/options/actions: must be one of "text", "discrete"'],
      [1, { turbo: true }, "/options: unknown field 'turbo'"],
    ];
    env.step('company status');
    for (const [seed, options, message] of bad) {
      expect(() => env.reset({ seed, ...(options !== undefined ? { options } : {}) } as never), message).toThrow(new RangeError(message));
    }
    // The episode that was running goes on.
    expect(env.step('company status').info.step).toBe(2);
    expect(new Env().reset({ seed: -7, options: { horizon_years: 3, company_name: 'X', start_date: '2025-03-01' } }).observation.status.horizon_end).toBe('2028-03-01T09:00:00');
    expect(first.info.step).toBe(0);
  });

  it('takes only strings as text actions and only numbers as Discrete actions', () => {
    const text = new Env();
    text.reset({ seed: 1 });
    for (const [action, what] of [[null, 'null'], [{}, 'object'], [undefined, 'undefined'], [true, 'boolean']] as const) {
      expect(() => text.step(action as never)).toThrow(new EnvUsageError('invalid_action', `in text mode the action is a command string, got ${what}`));
    }
    expect(() => text.step(3)).toThrow(/integer actions need the reset option actions: "discrete"/);
    expect(text.step('company status').info.step).toBe(1);
    const discrete = new Env();
    discrete.reset({ seed: 1, options: { actions: 'discrete' } });
    expect(() => discrete.step('sim resume')).toThrow(/in discrete mode the action is an integer index/);
  });
});

describe('TurnEnv inputs', () => {
  it("refuses seeds and options the protocol's turn_reset refuses, naming the field, and changes nothing", () => {
    // Before: a seed of 1.5 and unknown options were taken as they came.
    const env = new TurnEnv();
    env.reset({ seed: 1 });
    env.step(['yc-bench company status']);
    const bad: [unknown, Record<string, unknown> | undefined, string][] = [
      [1.5, undefined, '/seed: must be integer'],
      ['3', undefined, '/seed: must be integer'],
      [1, { turbo: true }, "/options: unknown field 'turbo'"],
      [1, { max_turns: 0 }, '/options/max_turns: must be >= 1'],
      [1, { fixes: { nope: true } }, "/options/fixes: unknown field 'nope'"],
      [1, { fixes: { episode_restart: 1 } }, '/options/fixes/episode_restart: must be boolean'],
      [1, { history_keep_rounds: 0 }, '/options/history_keep_rounds: must be >= 1'],
    ];
    for (const [seed, options, message] of bad) {
      expect(() => env.reset({ seed, ...(options !== undefined ? { options } : {}) } as never), message).toThrow(new RangeError(message));
    }
    expect(env.step(['yc-bench company status']).info.turn).toBe(2);
  });

  it('takes a list of command strings or a turn action object, nothing else, and changes nothing', () => {
    // Before: step(5) played an empty turn, step(null) failed inside ("Cannot read properties of null").
    const env = new TurnEnv();
    env.reset({ seed: 1 });
    const bad: [unknown, string][] = [
      [5, 'the turn action must be a list of command strings or an object (commands, tool_calls, content, reasoning_content), got number'],
      [null, 'the turn action must be a list of command strings or an object (commands, tool_calls, content, reasoning_content), got null'],
      [[5], '/commands/0: must be string'],
      [{ commands: 'company status' }, '/commands: must be array'],
      [{ tool_calls: [{ id: 'a' }] }, "/tool_calls/0: must have required property 'name'"],
      [{ say: 'hi' }, "/: unknown field 'say'"],
    ];
    for (const [action, message] of bad) {
      expect(() => env.step(action as never), message).toThrow(new EnvUsageError('invalid_action', message));
    }
    expect(env.step({ commands: ['yc-bench company status'], content: 'ok' }).info.turn).toBe(1);
  });
});

describe('reset arguments and presets', () => {
  // Before: env.reset() and reset(null) failed with "Cannot read properties of undefined (reading 'seed')", and a preset
  // of 5 or { world: 1 } with "Cannot read properties of undefined (reading 'start_date')" (TurnEnv: 'max_turns').
  const cfg = loadPreset('default');
  const envs: [string, () => { reset(a: never): unknown; step(a: never): { info: unknown } }, unknown][] = [
    ['Env', () => new Env(), 'company status'],
    ['TurnEnv', () => new TurnEnv(), ['yc-bench company status']],
  ];
  for (const [name, make, action] of envs) {
    it(`${name}: a reset without its arguments object or with a preset of the wrong kind is a clear error, and changes nothing`, () => {
      const env = make();
      env.reset({ seed: 1 } as never);
      env.step(action as never);
      for (const args of [undefined, null, 5, 'default']) {
        expect(() => env.reset(args as never)).toThrow(new RangeError(`reset takes an object { seed, preset?, options? }, got ${args === null ? 'null' : typeof args}`));
      }
      const kinds = 'a preset is a built-in preset name, a path to a .toml file, or a config (loadPreset())';
      expect(() => env.reset({ seed: 1, preset: 5 } as never)).toThrow(new RangeError(`${kinds}; got number`));
      expect(() => env.reset({ seed: 1, preset: null } as never)).toThrow(new RangeError(`${kinds}; got null`));
      expect(() => env.reset({ seed: 1, preset: [] } as never)).toThrow(new RangeError(`${kinds}; got an array`));
      expect(() => env.reset({ seed: 1, preset: { world: 1 } } as never)).toThrow(new RangeError(`${kinds}; got an object without the config's sections agent, loop, sim, world, fixes (missing: agent, loop, sim, world, fixes)`));
      expect(() => env.reset({ seed: 1, preset: { ...cfg, world: undefined } } as never)).toThrow(/\(missing: world\)$/);
      // The episode that was running goes on; a modified config is taken.
      expect(JSON.stringify(env.step(action as never).info)).toMatch(/"(step|turn)":2/);
      expect(() => env.reset({ seed: 1, preset: { ...cfg, description: 'mine' } } as never)).not.toThrow();
    });
  }
});
