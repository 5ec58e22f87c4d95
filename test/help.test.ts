/**
 * Help texts and the README's runnable command blocks stay true: every `ycgym` command's `--help` runs and names
 * the command, the preset option reads the same everywhere, and every block of README.md and docs/ray.md marked
 * `<!-- readme: run -->` runs as written (with `ycgym` or `npx ycgym` standing for this checkout's build).
 */
import { execFileSync, execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CLI = resolve('dist/src/cli/main.js');
const help = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8' });

/** Command names listed under "Commands:" of a help text. */
function commands(text: string): string[] {
  const part = text.split('Commands:')[1] ?? '';
  return [...part.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1] as string).filter((c) => c !== 'help');
}

describe('every --help', () => {
  const top = help();
  const names = commands(top);

  it('lists the commands people use', () => {
    for (const c of ['world', 'parity', 'main', 'serve', 'run', 'shard', 'report', 'play', 'presets', 'splits']) expect(names).toContain(c);
  });

  it('runs for every command and subcommand; every --preset reads "preset name or TOML path" (or says what it overrides) with its --config alias', () => {
    for (const c of names) {
      const text = help(c);
      expect(text.startsWith(`Usage: ycgym ${c}`), c).toBe(true);
      for (const sub of commands(text)) expect(help(c, sub).startsWith(`Usage: ycgym ${c} ${sub}`), `${c} ${sub}`).toBe(true);
      if (/^ +--preset </m.test(text)) {
        expect(text, c).toMatch(/--preset <name\|path>\s+(preset name or TOML path|override the preset)/);
        expect(text, c).toContain('--config <name|path>');
      }
    }
  });
});

/** The shell blocks of a Markdown file that follow a `<!-- readme: run -->` line. */
function runBlocks(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/<!-- readme: run -->\n```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

/** A block's command lines, comments dropped. */
function commandLines(block: string): string[] {
  return block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l && !l.startsWith('#'));
}

/**
 * Runs a block's lines in `dir` as a user types them, with `ycgym` (or `npx ycgym`) standing for this checkout's
 * CLI. A line is `ycgym ...`, optionally fed by `echo '...' |`.
 */
function runBlock(block: string, dir: string): void {
  for (const line of commandLines(block)) {
    const m = /^(echo '[^']*' \| )?(npx )?ycgym (.*)$/.exec(line);
    expect(m, line).not.toBeNull();
    execSync(`${m?.[1] ?? ''}"${process.execPath}" "${CLI}" ${m?.[3]}`, { cwd: dir, stdio: 'pipe', encoding: 'utf8' });
  }
}

describe('blocks marked <!-- readme: run --> (README.md, docs/ray.md)', () => {
  it('the README has some, and each runs as written', () => {
    const blocks = runBlocks('README.md');
    expect(blocks.length).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-readme-'));
    try {
      for (const block of blocks) {
        for (const line of commandLines(block)) expect(line.startsWith('npx ycgym '), line).toBe(true);
        runBlock(block, dir);
      }
      expect(readFileSync(join(dir, 'runs', 'readme', 'report.md'), 'utf8')).toContain("## Against the paper's leaderboard");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("docs/ray.md's shard plan / worker / merge block runs as written and merges the whole run", () => {
    const blocks = runBlocks('docs/ray.md');
    expect(blocks).toHaveLength(1);
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-docs-'));
    try {
      runBlock(blocks[0] as string, dir);
      const summary = JSON.parse(readFileSync(join(dir, 'OUT', 'summary.json'), 'utf8')) as Record<string, { episodes: number }>;
      expect(summary.greedy?.episodes).toBe(64);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
