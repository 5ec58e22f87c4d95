/**
 * The validators a restore uses are generated ahead of time (src/protocol/restore-validators.generated.ts,
 * src/env/sim-snapshot-validator.generated.ts, by scripts/gen/validators.ts): the protocol's validators hand them out,
 * and each decides as the schema compiled at run time decides, with the same first error, on real values and on
 * values with a field removed or of the wrong type.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { RESTORE_DEFS, SIM_SNAPSHOT_AJV_OPTIONS } from '../../scripts/gen/validators.js';
import { packageRoot } from '../../src/config/load.js';
import { Env } from '../../src/env/env.js';
import { validate as generatedSimSnapshot } from '../../src/env/sim-snapshot-validator.generated.js';
import * as generated from '../../src/protocol/restore-validators.generated.js';
import { getValidators, PROTOCOL_AJV_OPTIONS, protocolSchemaPath, schemaValidator } from '../../src/protocol/protocol.js';
import { TurnEnv } from '../../src/turns/turns.js';

type Validate = ValidateFunction & ((v: unknown) => boolean);

function compiledProtocol(def: string): Validate {
  const schema = JSON.parse(readFileSync(protocolSchemaPath(), 'utf8')) as { $id: string };
  const ajv = new Ajv2020(PROTOCOL_AJV_OPTIONS);
  ajv.addSchema(schema);
  return ajv.getSchema(`${schema.$id}#/$defs/${def}`) as Validate;
}

/** `v` itself, then with each top-level field removed, then with each set to a string and to null. */
function variants(v: Record<string, unknown>): unknown[] {
  const out: unknown[] = [v];
  for (const k of Object.keys(v)) {
    const { [k]: _gone, ...rest } = v;
    out.push(rest, { ...v, [k]: 'x' }, { ...v, [k]: null });
  }
  out.push({ ...v, unexpected_field: 1 }, [], 'x');
  return out;
}

function outcome(f: Validate, value: unknown): unknown {
  const ok = f(value);
  const e = f.errors?.[0];
  return ok ? 'valid' : { instancePath: e?.instancePath, keyword: e?.keyword, message: e?.message };
}

/** Real values of every definition a restore checks. */
function values(): Record<(typeof RESTORE_DEFS)[number], Record<string, unknown>> {
  const env = new Env();
  env.reset({ seed: 3 });
  const step = env.step('market browse');
  const turns = new TurnEnv();
  const start = turns.reset({ seed: 3 });
  return {
    EnvSnapshot: env.snapshot() as unknown as Record<string, unknown>,
    TurnSnapshot: turns.snapshot() as unknown as Record<string, unknown>,
    Observation: JSON.parse(JSON.stringify(step.observation)) as Record<string, unknown>,
    StepInfo: JSON.parse(JSON.stringify(step.info)) as Record<string, unknown>,
    TurnMessagesResult: { messages: start.messages },
    TurnInfo: JSON.parse(JSON.stringify(start.info)) as Record<string, unknown>,
    Status: JSON.parse(JSON.stringify(step.observation.status)) as Record<string, unknown>,
  };
}

describe('generated restore validators', () => {
  it('are the ones the protocol hands out', () => {
    expect(getValidators().snapshot).toBe(generated.EnvSnapshot);
    expect(getValidators().turnSnapshot).toBe(generated.TurnSnapshot);
    expect(Object.keys(generated).sort()).toEqual([...RESTORE_DEFS].sort());
  });

  const vals = values();
  for (const def of RESTORE_DEFS) {
    it(`${def}: decides as the compiled schema, with the same first error`, () => {
      const gen = (generated as unknown as Record<string, Validate>)[def] as Validate;
      const compiled = compiledProtocol(def);
      const check = schemaValidator(def);
      const cases = variants(vals[def]);
      let invalid = 0;
      for (const v of cases) {
        const want = outcome(compiled, v);
        expect(outcome(gen, v)).toEqual(want);
        expect(check(v) === null).toBe(want === 'valid');
        if (want !== 'valid') invalid++;
      }
      expect(outcome(compiled, vals[def])).toBe('valid');
      expect(invalid).toBeGreaterThan(2); // the variants do break the schema
    });
  }

  it('the simulation snapshot: decides as schema/sim-snapshot.schema.json compiled, with the same first error', () => {
    const schema = JSON.parse(readFileSync(join(packageRoot(), 'schema', 'sim-snapshot.schema.json'), 'utf8')) as object;
    const compiled = new Ajv2020(SIM_SNAPSHOT_AJV_OPTIONS).compile(schema) as Validate;
    const sim = vals.EnvSnapshot['sim'] as Record<string, unknown>;
    const state = sim['state'] as Record<string, unknown>;
    const cases = [...variants(sim), ...variants(state).map((s) => ({ ...sim, state: s }))];
    let invalid = 0;
    for (const v of cases) {
      const want = outcome(compiled, v);
      expect(outcome(generatedSimSnapshot as unknown as Validate, v)).toEqual(want);
      if (want !== 'valid') invalid++;
    }
    expect(outcome(compiled, sim)).toBe('valid');
    expect(invalid).toBeGreaterThan(10);
  });
});
