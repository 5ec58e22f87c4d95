import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { leaderboardPath, leaderboardSvg, loadLeaderboard, meanPoints, monthlyPoints, publishedFinal, rankAll, rankSentences, rankTable } from '../../src/cli/leaderboard.js';

const lb = loadLeaderboard();
if (lb === null) throw new Error('data/leaderboard/yc-bench-data.json is missing');

describe("the paper's leaderboard data", () => {
  it('is the upstream file byte for byte (the hash data/leaderboard/README.md names)', () => {
    const sha = createHash('sha256').update(readFileSync(leaderboardPath())).digest('hex');
    expect(sha).toBe('d8cf7347a48c8646945f15984eca8d934d7d5c12a0ca0dccd3613b3fff5a63da');
    expect(readFileSync('data/leaderboard/README.md', 'utf8')).toContain(sha);
  });

  it("recomputes the paper's reported final means from the monthly data", () => {
    expect(lb.months).toEqual(['2025-01', '2025-02', '2025-03', '2025-04', '2025-05', '2025-06', '2025-07', '2025-08', '2025-09', '2025-10', '2025-11', '2025-12']);
    expect(lb.models).toHaveLength(19);
    // The paper's 13 entries start at the $200,000 starting funds; the 6 added later at their end-of-January funds.
    const later = ['claude-opus-4-7', 'gpt-5.5-2026-04-23', 'deepseek-v4-pro', 'kimi-k2.6', 'qwen3.6-plus', 'glm-5.1'];
    for (const m of lb.models) expect(m.dollars[0] === 200_000).toBe(!later.includes(m.name));
    // The abstract: "Claude Opus 4.6 achieving the highest average final funds at $1.27M, followed by GLM-5 at $1.21M".
    expect((publishedFinal(lb, 'claude-opus-4-6') / 1e6).toFixed(2)).toBe('1.27');
    expect((publishedFinal(lb, 'glm-5') / 1e6).toFixed(2)).toBe('1.21');
    expect(publishedFinal(lb, 'greedy_bot')).toBe(0); // bankrupt on all three seeds
    const paper12 = ['glm-5', 'kimi-k2.5', 'qwen3.5-397b-a17b', 'claude-opus-4-6', 'claude-sonnet-4-6', 'gemini-3-flash-preview', 'gemini-3.1-flash-lite-preview', 'gemini-3.1-pro-preview', 'gpt-5.4-mini', 'gpt-5.4-nano', 'gpt-5.4', 'grok-4.20-beta'];
    const best = paper12.map((n) => [n, publishedFinal(lb, n)] as const).sort((a, b) => b[1] - a[1]);
    expect(best[0]?.[0]).toBe('claude-opus-4-6');
    expect(best[1]?.[0]).toBe('glm-5');
  });
});

describe('runs on the published axes', () => {
  const us = (iso: string) => Date.parse(iso) * 1000;

  it('monthly points: the funds at the end of each month, the final funds last; $0 after a bankruptcy', () => {
    const t = [us('2025-01-01T09:00:00Z'), us('2025-01-20T12:00:00Z'), us('2025-02-03T10:00:00Z'), us('2025-12-31T17:00:00Z')];
    const ok = monthlyPoints({ policy: 'p', t, funds: [20_000_000, 21_000_000, 19_000_000, 50_000_000], bankrupt: false });
    expect(ok).toEqual([210_000, 190_000, 190_000, 190_000, 190_000, 190_000, 190_000, 190_000, 190_000, 190_000, 190_000, 500_000]);
    const broke = monthlyPoints({ policy: 'p', t: t.slice(0, 3), funds: [20_000_000, 1_000_000, -500_000], bankrupt: true });
    expect(broke).toEqual([10_000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(meanPoints([ok, broke])[11]).toBe(250_000);
  });

  it('ranks our policies among the published entries, and draws them on the same axes', () => {
    const ours = new Map([['mine', 1_300_000], ['bad', -5]]);
    const rows = rankAll(lb, ours);
    expect(rows).toHaveLength(21);
    expect(rows.find((r) => r.name === 'mine')?.rank).toBe(3); // after opus-4-7 and glm-5.1, before opus-4-6
    expect(rows[rows.length - 1]?.name).toBe('bad');
    expect(rankSentences(lb, new Map([['mine', 1_300_000]]))).toEqual([
      '`mine` ($1,300,000) places 3 of 20 among the 19 published entries: below glm-5.1 ($1,510,772), above claude-opus-4-6 ($1,269,734).',
    ]);
    expect(rankSentences(lb, new Map([['top', 9e6]]))[0]).toContain('places 1 of 20 among the 19 published entries: above claude-opus-4-7');
    expect(rankTable(rows)).toContain('| 3 | **mine** | this run | $1,300,000 |');
    const svg = leaderboardSvg(lb, [{ name: 'mine', points: Array.from({ length: 12 }, (_, i) => 200_000 + i * 100_000) }]);
    expect((svg.match(/<polyline/g) ?? []).length).toBe(20);
    expect(svg).toContain('>mine $1,300,000</text>');
  });
});
