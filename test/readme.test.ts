import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = readFileSync('README.md', 'utf8');
function block(lang: string): string {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(readme);
  if (!m) throw new Error(`no ${lang} block in README`);
  return m[1] as string;
}

describe('README examples run as written', () => {
  it('the TypeScript example (type-free, so it also runs as an ES module against the built package)', () => {
    const dir = mkdtempSync('.readme-');
    try {
      writeFileSync(`${dir}/example.mjs`, block('ts'));
      const out = execFileSync(process.execPath, [`${dir}/example.mjs`], { encoding: 'utf8' });
      expect(out).toContain('sim resume -> ');
      expect(out.trim().split('\n')).toHaveLength(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('the runEpisode example prints what its comment says', () => {
    const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    const code = blocks.find((b) => b.includes('runEpisode('));
    expect(code).toBeDefined();
    const dir = mkdtempSync('.readme-');
    try {
      writeFileSync(`${dir}/episode.mjs`, code as string);
      const lines = execFileSync(process.execPath, [`${dir}/episode.mjs`], { encoding: 'utf8' }).trim().split('\n');
      const promised = /\/\/ (.*) \(the policy stopped\)/.exec(code as string)?.[1];
      expect(lines.at(-1)).toBe(promised);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it("docs/turn-protocol.md's TypeScript API example runs as written", () => {
    const code = /```ts\n([\s\S]*?)```/.exec(readFileSync('docs/turn-protocol.md', 'utf8'))?.[1];
    expect(code).toContain('new TurnEnv()');
    const dir = mkdtempSync('.readme-');
    try {
      writeFileSync(`${dir}/turns.mjs`, `${code as string}\nconsole.log(JSON.stringify([messages.length, r.toolResults.length, r.done, env.tools().length]));\n`);
      const out = execFileSync(process.execPath, [`${dir}/turns.mjs`], { encoding: 'utf8' });
      expect(out.trim()).toBe('[2,2,false,1]');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('the Python example is bindings/python/examples/train_loop.py (which pytest runs)', () => {
    const file = readFileSync('bindings/python/examples/train_loop.py', 'utf8');
    expect(file.replace(/^"""[\s\S]*?"""\n+/, '')).toBe(block('python'));
    expect(block('python').split('\n').filter((l) => l.trim() && !l.startsWith('import') && !l.startsWith('#')).length).toBeLessThanOrEqual(20);
  });
  it('the masked Discrete example is bindings/python/examples/masked_random.py (which pytest runs)', () => {
    const blocks = [...readme.matchAll(/```python\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    const file = readFileSync('bindings/python/examples/masked_random.py', 'utf8');
    expect(blocks).toContain(file.replace(/^"""[\s\S]*?"""\n+/, ''));
  });
});
