/**
 * Help texts and the README's runnable command blocks stay true: every `ycgym` command's `--help` runs and names
 * the command, the preset option reads the same everywhere, and every README block marked `<!-- readme: run -->`
 * runs as written (with `npx ycgym` standing for this checkout's build).
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

describe('README blocks marked <!-- readme: run -->', () => {
  const readme = readFileSync('README.md', 'utf8');
  const blocks = [...readme.matchAll(/<!-- readme: run -->\n```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);

  it('there are some, and each runs as written', () => {
    expect(blocks.length).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), 'ycgym-readme-'));
    try {
      for (const block of blocks) {
        for (const line of block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l && !l.startsWith('#'))) {
          expect(line.startsWith('npx ycgym '), line).toBe(true);
          const cmd = `"${process.execPath}" "${CLI}" ${line.slice('npx ycgym '.length)}`;
          execSync(cmd, { cwd: dir, stdio: 'pipe', encoding: 'utf8' });
        }
      }
      expect(readFileSync(join(dir, 'runs', 'readme', 'report.md'), 'utf8')).toContain("## Against the paper's leaderboard");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
