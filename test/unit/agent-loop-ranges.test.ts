/**
 * The `[agent]` and `[loop]` numbers a turn run reads (history_keep_rounds, max_turns, auto_advance_after_turns) must
 * be ones `TurnEnv` accepts. The preset schema let `history_keep_rounds = 0` and `max_turns = 0` through, which
 * TurnEnv refuses (`... must be an integer >= 1`): such a preset file loaded and `ycgym play --preset ./x.toml` or an
 * in-process `TurnEnv.reset` failed only then. Now the schema's minimum is 1 for both (the protocol's TurnOptions say
 * the same), and every value at a bound of the preset's ranges starts a turn run that plays turns.
 *
 * What the numbers cost (why their maxima are harmless): history_keep_rounds only trims the chat, whose size a
 * TurnEnv caps in characters (DEFAULT_MAX_CHAT_CHARS) whatever it says; max_turns is a cap; auto_advance_after_turns
 * decides whether a turn ends with one `sim resume`; the other `[agent]` numbers are never read by the environment.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configFromRaw, loadPreset, PresetError, schemaPath } from '../../src/config/load.js';
import { TurnEnv } from '../../src/turns/turns.js';

type Prop = { type?: string | string[]; minimum?: number; maximum?: number };
const schema = JSON.parse(readFileSync(schemaPath(), 'utf8')) as { $defs: Record<string, { properties: Record<string, Prop> }> };

function rawWith(section: 'agent' | 'loop', values: Record<string, unknown>): Record<string, unknown> {
  const cfg = structuredClone(loadPreset('default')) as unknown as Record<string, Record<string, unknown>>;
  return { ...cfg, [section]: { ...cfg[section], ...values } };
}

/** Every number of `[agent]` and `[loop]` with its schema bounds. */
const NUMBERS = (['agent', 'loop'] as const).flatMap((section) =>
  Object.entries(schema.$defs[section]!.properties)
    .filter(([, p]) => p.minimum !== undefined && p.maximum !== undefined)
    .map(([key, p]) => [section, key, p.minimum as number, p.maximum as number] as const),
);

describe('[agent] and [loop] ranges', () => {
  it('history_keep_rounds = 0 and max_turns = 0 are refused naming the field (TurnEnv refused them at reset)', () => {
    for (const [section, key] of [['agent', 'history_keep_rounds'], ['loop', 'max_turns']] as const) {
      let err: unknown;
      try {
        configFromRaw(rawWith(section, { [key]: 0 }), 'x');
      } catch (e) {
        err = e;
      }
      expect(err, key).toBeInstanceOf(PresetError);
      expect((err as PresetError).issues, key).toContain(`/${section}/${key}: must be >= 1`);
    }
  });

  it.each(NUMBERS.flatMap(([section, key, lo, hi]) => [[section, key, lo], [section, key, hi]] as const))('%s.%s = %s starts a turn run that plays', (section, key, value) => {
    const cfg = configFromRaw(rawWith(section, { [key]: value }), 'bound');
    const env = new TurnEnv();
    env.reset({ seed: 1, preset: cfg });
    for (let i = 0; i < 3 && !env.done; i++) env.step({ commands: ['yc-bench company status'] });
    expect(env.messages().length).toBeGreaterThan(1);
  });
});
