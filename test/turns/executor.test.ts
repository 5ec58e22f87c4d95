/**
 * The executor against the reference: every command line recorded from the reference CLI
 * (usage errors, wrapping, Unicode, help screens, policy rejections) gives the same ok/exit/stdout/stderr.
 */
import { describe, expect, it } from 'vitest';
import { loadPreset } from '../../src/config/load.js';
import { executeCommand } from '../../src/turns/executor.js';
import { Simulation } from '../../src/sim/simulation.js';
import { fixture, noUuid } from './helpers.js';

interface Row {
  command: string;
  ok: boolean;
  exit_code: number;
  stdout: string;
  stderr: string;
}

const rows = fixture<Row[]>('ref-cli-errors.json');

describe('executor matches the reference run_command', () => {
  const sim = Simulation.create(loadPreset('default'), { seed: 1 });
  for (const [i, row] of rows.entries()) {
    it(`#${i} ${JSON.stringify(row.command).slice(0, 70)}`, () => {
      const got = executeCommand(sim, row.command);
      expect({ ...got, stdout: noUuid(got.stdout) }).toEqual({
        ok: row.ok,
        exit_code: row.exit_code,
        stdout: noUuid(row.stdout),
        stderr: row.stderr,
        sim_time: null,
        command: row.command,
      });
    });
  }
});
