/**
 * The contract every environment implementation inherits (STYLE rule 4): replay each scripted episode in
 * fixtures/*.json and require exactly the recorded results; every result also matches the protocol schema.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { EnvLike, EnvSnapshot } from '../../src/env/env.js';
import { schemaValidator } from '../../src/protocol/protocol.js';
import { resetDigest, stepDigest } from './digest.mjs';

type Op =
  | { op: 'reset'; seed: number; preset?: string; options?: Record<string, unknown>; expect?: unknown; expect_error?: string }
  | { op: 'step'; action: string; expect?: unknown; expect_error?: string }
  | { op: 'snapshot'; label: string; expect_error?: string }
  | { op: 'restore'; label: string; expect?: unknown; expect_error?: string };

/** One scripted episode (format documented in README.md). */
export interface Fixture {
  format: 'ycgym-contract-fixture';
  version: 1;
  name: string;
  description: string;
  script: Op[];
}

const FIXTURE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

/** Every fixture, sorted by name. */
export function loadFixtures(): Fixture[] {
  return readdirSync(FIXTURE_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(FIXTURE_DIR, f), 'utf8')) as Fixture);
}

const checkStep = schemaValidator('StepResult');
const checkObservation = schemaValidator('Observation');
const checkInfo = schemaValidator('StepInfo');
const checkSnapshot = schemaValidator('EnvSnapshot');

function errorCode(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code : `(no code: ${String(e)})`;
}

/** Replay one fixture on `env`; throws with the fixture name and op index on the first difference. */
export async function replayFixture(fx: Fixture, env: EnvLike): Promise<void> {
  const snaps = new Map<string, EnvSnapshot>();
  for (const [i, op] of fx.script.entries()) {
    const where = `${fx.name} op #${i} (${op.op}${op.op === 'step' ? ` ${JSON.stringify(op.action.slice(0, 60))}` : ''})`;
    let actual: unknown;
    try {
      switch (op.op) {
        case 'reset': {
          const r = await env.reset({ seed: op.seed, ...(op.preset !== undefined ? { preset: op.preset } : {}), ...(op.options !== undefined ? { options: op.options } : {}) });
          expect(checkObservation(r.observation), where).toBeNull();
          expect(checkInfo(r.info), where).toBeNull();
          actual = resetDigest(r);
          break;
        }
        case 'step': {
          const r = await env.step(op.action);
          expect(checkStep(r), where).toBeNull();
          actual = stepDigest(r);
          break;
        }
        case 'snapshot': {
          const s = await env.snapshot();
          expect(checkSnapshot(JSON.parse(JSON.stringify(s))), where).toBeNull();
          snaps.set(op.label, s);
          break;
        }
        case 'restore': {
          const s = snaps.get(op.label);
          if (s === undefined) throw new Error(`${where}: no snapshot labelled ${op.label}`);
          const r = await env.restore(s);
          actual = resetDigest(r);
          break;
        }
      }
    } catch (e) {
      if (op.expect_error === undefined) throw new Error(`${where}: unexpected error ${errorCode(e)}: ${(e as Error).message}`);
      expect(errorCode(e), where).toBe(op.expect_error);
      continue;
    }
    expect(op.expect_error, `${where}: expected error ${op.expect_error ?? ''} but the op succeeded`).toBeUndefined();
    if ('expect' in op && op.expect !== undefined) expect(actual, where).toStrictEqual(op.expect);
  }
}

/** The contract suite for one implementation: each fixture replayed on a fresh environment from `makeEnv`. */
export function envContract(name: string, makeEnv: () => Promise<EnvLike>): void {
  describe(`env contract: ${name}`, () => {
    const fixtures = loadFixtures();
    it('has fixtures', () => {
      expect(fixtures.length).toBeGreaterThanOrEqual(8);
    });
    for (const fx of fixtures) {
      it(fx.name, async () => {
        const env = await makeEnv();
        try {
          await replayFixture(fx, env);
        } finally {
          await env.close();
        }
      });
    }
  });
}
