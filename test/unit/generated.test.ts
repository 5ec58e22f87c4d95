/**
 * The generated Python side of the wire contract is current: scripts/gen/python.ts regenerates every file in
 * memory and each must equal the committed copy (edit the TypeScript source, then run `npm run gen`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/config/load.js';
import { generatedFiles, renderProtocolPy } from '../../scripts/gen/python.js';
import { OPS } from '../../src/protocol/protocol.js';

describe('generated files (regenerate: npm run gen)', () => {
  for (const f of generatedFiles()) {
    it(`${f.path} is up to date`, () => {
      const committed = readFileSync(join(packageRoot(), f.path), 'utf8');
      expect(committed === f.text, `${f.path} differs from what scripts/gen/python.ts generates: run \`npm run gen\``).toBe(true);
    });
  }

  it('the check can fail: a hand edit of a generated file or a change of the source is seen', () => {
    const [protocol] = generatedFiles();
    const committed = readFileSync(join(packageRoot(), protocol!.path), 'utf8');
    expect(committed.replace('"hello",', '"helo",')).not.toBe(renderProtocolPy());
    // Every op and the TypedDicts of the op's request and result are in the generated module.
    for (const op of OPS) expect(committed).toContain(`    ${JSON.stringify(op)},\n`);
    // StepResult has an optional key (`recording_stopped`): the generator's form for a type with required and optional keys.
    expect(committed).toContain('class StepResult(_StepResultRequired, total=False):');
    expect(committed).toMatch(/^class _StepResultRequired\(TypedDict\):\n(?:    .*\n)*    observation: Observation\n/m);
    expect(committed).toContain('class HelloResult(TypedDict):');
  });
});
