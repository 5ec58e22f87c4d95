/**
 * `ycgym play` driven through a real pseudo-terminal (tmux): browse the market, accept a task, quit.
 * Uses test/play-entry.mjs (registerPlay on a commander program) and the compiled dist/ (rebuilt when stale).
 * Skipped, with a message, when tmux is missing and cannot be installed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TurnEnv } from '../../src/turns/turns.js';
import { makeCompleter } from '../../src/cli/play.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function haveTmux(): boolean {
  return spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0;
}

function ensureTmux(): string | null {
  if (haveTmux()) return null;
  const apt = spawnSync('apt-get', ['install', '-y', '-qq', 'tmux'], { stdio: 'ignore', timeout: 180_000 });
  if (apt.status === 0 && haveTmux()) return null;
  return 'tmux is not installed and `apt-get install -y tmux` failed: skipping the pseudo-terminal test of `ycgym play`';
}

function newestMtime(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Build dist/ when it is older than the sources play depends on. */
function ensureBuilt(): void {
  const out = join(ROOT, 'dist/src/cli/play.js');
  const src = Math.max(...['src/cli', 'src/env', 'src/sim', 'src/config'].map((d) => newestMtime(join(ROOT, d))));
  if (existsSync(out) && statSync(out).mtimeMs >= src) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.json')], { stdio: 'ignore', timeout: 240_000 });
}

const skipReason = ensureTmux();
const SOCK = `ycgym-play-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCK, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-J', '-S', '-400', '-t', 'play');

async function waitFor(pattern: RegExp, ms = 20_000): Promise<string> {
  const end = Date.now() + ms;
  let s = '';
  while (Date.now() < end) {
    s = screen();
    if (pattern.test(s)) return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${pattern}; screen:\n${s}`);
}

describe.skipIf(skipReason !== null)('ycgym play in a terminal', () => {
  beforeAll(() => {
    ensureBuilt();
    const cmd = `cd ${JSON.stringify(ROOT)} && node test/play-entry.mjs play --seed 1; echo "[exit $?]"; sleep 60`;
    tmux('new-session', '-d', '-s', 'play', '-x', '200', '-y', '60', 'sh', '-c', cmd);
  }, 300_000);
  afterAll(() => {
    spawnSync('tmux', ['-L', SOCK, 'kill-server'], { stdio: 'ignore' });
  });

  it('shows the turn context, renders tables, accepts a task and quits', async () => {
    let s = await waitFor(/\[turn 1\] yc-bench>/);
    expect(s).toContain('## Simulation Start — Take Immediate Action');
    expect(s).toContain('- funds: $200,000.00');
    tmux('send-keys', '-t', 'play', 'market browse --limit 3', 'Enter');
    s = await waitFor(/3 shown \(offset 0, limit 3\)/);
    expect(s).toMatch(/TASK\s+CLIENT\s+PRESTIGE\s+TRUST\s+REWARD/);
    expect(s).toMatch(/Task-10\s+Vanguard ML\s+1\s+0\s+\$20,919/);
    tmux('send-keys', '-t', 'play', 'yc-bench task accept --task-id Task-10', 'Enter');
    s = await waitFor(/"status": "planned"/);
    expect(s).toContain('"replacement_task_id": "Task-9000"');
    tmux('send-keys', '-t', 'play', 'quit', 'Enter');
    s = await waitFor(/\[exit 0\]/);
  }, 60_000);
});

if (skipReason !== null) {
  describe('ycgym play in a terminal', () => {
    it.skip(skipReason, () => undefined);
  });
}

describe('play tab completion', () => {
  const env = new TurnEnv();
  env.reset({ seed: 1 });
  env.step(['yc-bench task accept --task-id Task-10']);
  const complete = makeCompleter(env);
  const c = (line: string) => (complete as (l: string) => [string[], string])(line);

  it('groups, commands and options', () => {
    expect(c('ta')).toEqual([['task'], 'ta']);
    expect(c('task as')).toEqual([['assign', 'assign-all'], 'as']);
    expect(c('yc-bench market browse --l')).toEqual([['--limit'], '--l']);
    expect(c('market browse --limit 3 ')[0]).toEqual(['--domain', '--reward-min-cents', '--offset', '--help']);
    expect(c('market browse --domain r')).toEqual([['research'], 'r']);
  });

  it('task ids (market tasks for accept, owned ones otherwise) and employee names', () => {
    expect(c('task inspect --task-id ')).toEqual([['Task-10'], '']);
    expect(c('task accept --task-id Task-11')[0]).toContain('Task-119');
    expect(c('task accept --task-id Task-11')[0]).not.toContain('Task-10');
    expect(c('task assign --task-id Task-10 --employees Emp_1,Emp_')[0]).toEqual(['Emp_1,Emp_2', 'Emp_1,Emp_3', 'Emp_1,Emp_4', 'Emp_1,Emp_5', 'Emp_1,Emp_6', 'Emp_1,Emp_7', 'Emp_1,Emp_8']);
  });
});
