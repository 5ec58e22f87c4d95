/**
 * docs/protocol.md's `ycgym serve` synopsis names every option of the command (src/cli/serve.ts's option table, what
 * `ycgym serve --help` prints) and nothing else. It had fallen behind: --max-sessions-per-client, --curve-allow, the
 * recording options, --pipe-fds, --pipe-spin-us and --exit-on-stdin-eof were missing.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerServe } from '../../src/cli/serve.js';

/** The synopsis: the code span of docs/protocol.md's bullet that starts with `ycgym serve [`. */
function synopsis(): string {
  const doc = readFileSync('docs/protocol.md', 'utf8');
  const m = /^- `(ycgym serve \[[^`]*)`/m.exec(doc);
  if (m === null) throw new Error('no `ycgym serve [...]` synopsis in docs/protocol.md');
  return m[1] as string;
}

describe("docs/protocol.md's serve synopsis", () => {
  it('names exactly the options of `ycgym serve` (its --help), each once', () => {
    const program = new Command();
    registerServe(program);
    const serve = program.commands.find((c) => c.name() === 'serve');
    if (serve === undefined) throw new Error('no serve command');
    const cli = serve.options.map((o) => o.long).filter((f): f is string => f !== undefined && f !== '--help');
    const named = [...synopsis().matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]);
    expect(new Set(named).size, `a flag named twice in: ${synopsis()}`).toBe(named.length);
    expect([...named].sort()).toEqual([...cli].sort());
  });

  it("names each option's argument as the help does (an option that takes a value shows one)", () => {
    const program = new Command();
    registerServe(program);
    const serve = program.commands.find((c) => c.name() === 'serve');
    if (serve === undefined) throw new Error('no serve command');
    const text = synopsis();
    for (const o of serve.options) {
      if (o.long === undefined || o.long === '--help') continue;
      const m = new RegExp(`${o.long}( [A-Z0-9,]+)?[\\] ]`).exec(`${text} `);
      expect(m, `${o.long} in the synopsis`).not.toBeNull();
      expect(m?.[1] !== undefined, `${o.long} takes a value: ${o.required || o.optional}`).toBe(o.required || o.optional);
    }
  });
});
