/**
 * `ycgym report DIR`: reads a bulk run's Arrow files and summary.json and writes DIR/report.md (summary
 * and per-episode tables) with hand-built SVG plots: funds over simulated time per policy (mean line,
 * min-max band over seeds) and prestige per domain over time (mean per policy); and the policies against the
 * paper's published leaderboard (src/cli/leaderboard.ts): DIR/leaderboard.svg and a ranking table.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { RecordBatchReader, type RecordBatch } from 'apache-arrow';
import type { Command } from 'commander';
import { readArrowFile } from '../export/arrow.js';
import { dollars, summarize, summaryTable, type RunSummary } from './run.js';
import { leaderboardSvg, loadLeaderboard, meanPoints, monthlyPoints, rankAll, rankSentences, rankTable } from './leaderboard.js';
import type { EpisodeRow, Outcome } from '../export/schema.js';

const DOMAINS = ['research', 'inference', 'data_environment', 'training'] as const;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];
const US_PER_DAY = 86_400_000_000;

/** One episode's time series, sampled on the report's daily grid. */
interface Series {
  policy: string;
  funds: Float64Array;
  prestige: Record<string, Float64Array>;
}

function numbers(b: RecordBatch, name: string): Float64Array {
  const col = b.getChild(name);
  if (!col) throw new Error(`column ${name} missing`);
  const out = new Float64Array(b.numRows);
  let i = 0;
  for (const d of col.data) {
    const v = d.values as ArrayLike<number | bigint>;
    for (let k = 0; k < d.length; k++) out[i++] = Number(v[d.offset + k] as number | bigint);
  }
  return out;
}

function strings(b: RecordBatch, name: string): string[] {
  const col = b.getChild(name);
  if (!col) throw new Error(`column ${name} missing`);
  return (col.toArray() as unknown[]).map((x) => String(x));
}

/** One episode's rows of the step file (keyed by run id and episode id). */
interface RawEpisode {
  policy: string;
  t: number[];
  funds: number[];
  prestige: Record<string, number[]>;
}

/** Read the step file batch by batch (bounded memory) and sample every episode on a daily grid. */
async function readSeries(path: string): Promise<{ series: Series[]; start: number; days: number; raw: Map<string, RawEpisode> }> {
  const raw = new Map<string, RawEpisode>();
  const fh = await open(path);
  try {
    const reader = await RecordBatchReader.from(fh);
    for await (const b of reader) {
      if (b.numRows === 0) continue;
      const ep = numbers(b, 'episode_id');
      const run = strings(b, 'run_id');
      const pol = strings(b, 'policy');
      const t = numbers(b, 'sim_time');
      const funds = numbers(b, 'funds_cents');
      const pr: Record<string, Float64Array> = {};
      for (const d of DOMAINS) pr[d] = numbers(b, `prestige_${d}`);
      for (let i = 0; i < b.numRows; i++) {
        const key = `${run[i]}\u0000${ep[i]}`;
        let e = raw.get(key);
        if (!e) {
          e = { policy: pol[i] as string, t: [], funds: [], prestige: Object.fromEntries(DOMAINS.map((d) => [d, [] as number[]])) };
          raw.set(key, e);
        }
        e.t.push(t[i] as number);
        e.funds.push(funds[i] as number);
        for (const d of DOMAINS) (e.prestige[d] as number[]).push((pr[d] as Float64Array)[i] as number);
      }
    }
  } finally {
    await fh.close();
  }
  let start = Infinity;
  let end = -Infinity;
  for (const e of raw.values()) {
    start = Math.min(start, e.t[0] as number);
    end = Math.max(end, e.t[e.t.length - 1] as number);
  }
  if (!Number.isFinite(start)) return { series: [], start: 0, days: 0, raw };
  const days = Math.max(1, Math.ceil((end - start) / US_PER_DAY));
  const series: Series[] = [];
  for (const e of raw.values()) {
    const f = new Float64Array(days + 1);
    const p: Record<string, Float64Array> = Object.fromEntries(DOMAINS.map((d) => [d, new Float64Array(days + 1)]));
    let j = 0;
    for (let g = 0; g <= days; g++) {
      const at = start + g * US_PER_DAY;
      while (j + 1 < e.t.length && (e.t[j + 1] as number) <= at) j++;
      f[g] = e.funds[j] as number;
      for (const d of DOMAINS) (p[d] as Float64Array)[g] = (e.prestige[d] as number[])[j] as number;
    }
    series.push({ policy: e.policy, funds: f, prestige: p });
  }
  return { series, start, days, raw };
}

interface Line {
  label: string;
  color: string;
  ys: ArrayLike<number>;
  band?: { lo: ArrayLike<number>; hi: ArrayLike<number> };
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function niceStep(range: number, target: number): number {
  const raw = range / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

function monthTicks(start: number, days: number): { x: number; label: string }[] {
  const out: { x: number; label: string }[] = [];
  const names = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const d0 = new Date(start / 1000);
  for (let k = 0; k < 40; k++) {
    const t = Date.UTC(d0.getUTCFullYear(), d0.getUTCMonth() + k, 1) * 1000;
    const x = (t - start) / US_PER_DAY;
    if (x < 0) continue;
    if (x > days) break;
    const m = new Date(t / 1000);
    out.push({ x, label: `${names[m.getUTCMonth()]}${m.getUTCMonth() === 0 ? ` ${m.getUTCFullYear()}` : ''}` });
  }
  return out;
}

/** One line chart panel as SVG elements (placed at ox, oy). */
function panel(o: { ox: number; oy: number; w: number; h: number; title: string; yFmt: (v: number) => string; lines: Line[]; days: number; start: number; yMin?: number }): string {
  const ml = 78;
  const mr = 12;
  const mt = 26;
  const mb = 34;
  const pw = o.w - ml - mr;
  const ph = o.h - mt - mb;
  let lo = o.yMin ?? Infinity;
  let hi = -Infinity;
  for (const l of o.lines) {
    for (const arr of [l.ys, l.band?.lo, l.band?.hi]) {
      if (!arr) continue;
      for (let i = 0; i < arr.length; i++) {
        lo = Math.min(lo, arr[i] as number);
        hi = Math.max(hi, arr[i] as number);
      }
    }
  }
  if (!Number.isFinite(lo)) {
    lo = 0;
    hi = 1;
  }
  if (hi <= lo) hi = lo + 1;
  const step = niceStep(hi - lo, 6);
  lo = Math.floor(lo / step) * step;
  hi = Math.ceil(hi / step) * step;
  const X = (d: number) => o.ox + ml + (pw * d) / Math.max(1, o.days);
  const Y = (v: number) => o.oy + mt + ph - (ph * (v - lo)) / (hi - lo);
  const parts: string[] = [];
  parts.push(`<text x="${o.ox + ml + pw / 2}" y="${o.oy + 17}" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`);
  for (let v = lo; v <= hi + step / 2; v += step) {
    const y = Y(v).toFixed(1);
    parts.push(`<line x1="${o.ox + ml}" y1="${y}" x2="${o.ox + ml + pw}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${o.ox + ml - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" font-size="11" fill="#444">${esc(o.yFmt(v))}</text>`);
  }
  if (lo < 0 && hi > 0) parts.push(`<line x1="${o.ox + ml}" y1="${Y(0).toFixed(1)}" x2="${o.ox + ml + pw}" y2="${Y(0).toFixed(1)}" stroke="#999" stroke-dasharray="4 3"/>`);
  let lastLabel = -Infinity;
  for (const t of monthTicks(o.start, o.days)) {
    const px = X(t.x);
    const x = px.toFixed(1);
    parts.push(`<line x1="${x}" y1="${o.oy + mt + ph}" x2="${x}" y2="${o.oy + mt + ph + 4}" stroke="#444"/>`);
    // Skip labels that would overlap the previous one (narrow panels).
    if (px - lastLabel < 6.5 * (t.label.length + 4)) continue;
    lastLabel = px;
    parts.push(`<text x="${x}" y="${o.oy + mt + ph + 17}" text-anchor="middle" font-size="11" fill="#444">${esc(t.label)}</text>`);
  }
  parts.push(`<rect x="${o.ox + ml}" y="${o.oy + mt}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`);
  for (const l of o.lines) {
    if (l.band) {
      const up: string[] = [];
      const down: string[] = [];
      for (let i = 0; i < l.band.hi.length; i++) up.push(`${X(i).toFixed(1)},${Y(l.band.hi[i] as number).toFixed(1)}`);
      for (let i = l.band.lo.length - 1; i >= 0; i--) down.push(`${X(i).toFixed(1)},${Y(l.band.lo[i] as number).toFixed(1)}`);
      parts.push(`<polygon points="${up.join(' ')} ${down.join(' ')}" fill="${l.color}" fill-opacity="0.15" stroke="none"/>`);
    }
    const pts: string[] = [];
    for (let i = 0; i < l.ys.length; i++) pts.push(`${X(i).toFixed(1)},${Y(l.ys[i] as number).toFixed(1)}`);
    parts.push(`<polyline points="${pts.join(' ')}" fill="none" stroke="${l.color}" stroke-width="2"/>`);
  }
  return parts.join('\n');
}

function legend(x: number, y: number, items: { label: string; color: string }[]): string {
  return items
    .map((it, i) => `<rect x="${x}" y="${y + i * 18}" width="14" height="10" fill="${it.color}"/><text x="${x + 20}" y="${y + i * 18 + 9}" font-size="12">${esc(it.label)}</text>`)
    .join('\n');
}

function svgDoc(w: number, h: number, body: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif">\n<rect width="${w}" height="${h}" fill="white"/>\n${body}\n</svg>\n`;
}

function aggregate(series: Series[], pick: (s: Series) => Float64Array): { mean: Float64Array; lo: Float64Array; hi: Float64Array } {
  const n = (series[0] ? pick(series[0]) : new Float64Array(0)).length;
  const mean = new Float64Array(n);
  const lo = new Float64Array(n).fill(Infinity);
  const hi = new Float64Array(n).fill(-Infinity);
  for (const s of series) {
    const a = pick(s);
    for (let i = 0; i < n; i++) {
      const v = a[i] as number;
      mean[i] = (mean[i] as number) + v / series.length;
      lo[i] = Math.min(lo[i] as number, v);
      hi[i] = Math.max(hi[i] as number, v);
    }
  }
  return { mean, lo, hi };
}

/** Funds over time: per policy the mean over episodes with a min-max band. */
export function fundsSvg(series: Series[], policies: string[], start: number, days: number): string {
  const lines: Line[] = policies.map((p, i) => {
    const a = aggregate(series.filter((s) => s.policy === p), (s) => s.funds);
    return { label: p, color: COLORS[i % COLORS.length] as string, ys: a.mean, band: { lo: a.lo, hi: a.hi } };
  });
  const w = 900;
  const h = 480;
  const body = panel({ ox: 0, oy: 0, w: w - 150, h, title: 'Funds over simulated time (mean, min-max band over seeds)', yFmt: (v) => dollars(v), lines, days, start });
  return svgDoc(w, h, body + '\n' + legend(w - 140, 40, lines));
}

/** Prestige per domain over time: one panel per domain, mean per policy. */
export function prestigeSvg(series: Series[], policies: string[], start: number, days: number): string {
  const pw = 450;
  const ph = 300;
  const parts: string[] = [];
  DOMAINS.forEach((d, k) => {
    const lines: Line[] = policies.map((p, i) => ({ label: p, color: COLORS[i % COLORS.length] as string, ys: aggregate(series.filter((s) => s.policy === p), (s) => s.prestige[d] as Float64Array).mean }));
    parts.push(panel({ ox: (k % 2) * pw, oy: Math.floor(k / 2) * ph, w: pw, h: ph, title: `Prestige: ${d} (mean over seeds)`, yFmt: (v) => v.toFixed(1), lines, days, start, yMin: 1 }));
  });
  const items = policies.map((p, i) => ({ label: p, color: COLORS[i % COLORS.length] as string }));
  return svgDoc(2 * pw + 150, 2 * ph, parts.join('\n') + '\n' + legend(2 * pw + 10, 40, items));
}

/** The rows of an episodes.arrow file, as the bulk runner produced them (int64 columns as numbers). */
export function readEpisodes(path: string): EpisodeRow[] {
  const t = readArrowFile(path);
  return t.toArray().map((r) => {
    const o = r as Record<string, unknown>;
    return {
      run_id: String(o['run_id']),
      episode_id: Number(o['episode_id']),
      seed: Number(o['seed']),
      policy: String(o['policy']),
      preset: String(o['preset']),
      final_funds_cents: Number(o['final_funds_cents']),
      outcome: String(o['outcome']) as Outcome,
      steps: Number(o['steps']),
      tasks_succeeded: Number(o['tasks_succeeded']),
      tasks_failed: Number(o['tasks_failed']),
      accepted_from_adversarial: Number(o['accepted_from_adversarial']),
      accepted_total: Number(o['accepted_total']),
    };
  });
}

/**
 * The report's "against the paper's leaderboard" section (appended to `md`): each policy's mean final funds ranked
 * among the published models, and DIR/leaderboard.svg (our monthly means over the published curves) when the
 * trajectories are there. Bankrupt episodes count as $0, as in the published data. Returns the files written.
 */
function leaderboardSection(dir: string, md: string[], episodes: readonly EpisodeRow[], policies: readonly string[], raw: Map<string, RawEpisode> | null): string[] {
  const lb = loadLeaderboard();
  if (lb === null) return [];
  md.push("## Against the paper's leaderboard", '');
  md.push(
    `The YC-Bench authors' published mean funds over seeds 1-3 of the \`default\` preset ([data](${'https://github.com/collinear-ai/yc-bench/blob/main/docs/static/data.json'}), shipped in data/leaderboard/, MIT).` +
      ' Our policies: mean over this run\'s episodes, a bankruptcy counting as $0 as in the published data.',
    '',
  );
  const presets = [...new Set(episodes.map((e) => e.preset))];
  const seeds = [...new Set(episodes.map((e) => e.seed))].sort((a, b) => a - b);
  if (presets.some((p) => p !== 'default')) md.push(`_This run used preset ${presets.join(', ')}, not \`default\`: the comparison is only indicative._`, '');
  if (seeds.join() !== '1,2,3') md.push(`_This run's seeds are ${seeds.length === 0 ? 'none' : `${seeds[0]}..${seeds[seeds.length - 1]} (${seeds.length})`}, the published means are over seeds 1-3._`, '');
  const finals = new Map<string, number>();
  for (const p of policies) {
    const eps = episodes.filter((e) => e.policy === p);
    if (eps.length > 0) finals.set(p, eps.reduce((a, e) => a + (e.outcome === 'bankruptcy' ? 0 : e.final_funds_cents / 100), 0) / eps.length);
  }
  const written: string[] = [];
  if (raw !== null && raw.size > 0) {
    const outcome = new Map(episodes.map((e) => [`${e.run_id}\u0000${e.episode_id}`, e.outcome]));
    const ours = policies.map((p) => {
      const rows: number[][] = [];
      for (const [key, e] of raw) if (e.policy === p) rows.push(monthlyPoints({ policy: p, t: e.t, funds: e.funds, bankrupt: outcome.get(key) === 'bankruptcy' }));
      return { name: p, points: meanPoints(rows) };
    }).filter((o) => o.points.length === lb.months.length);
    if (ours.length > 0) {
      writeFileSync(join(dir, 'leaderboard.svg'), leaderboardSvg(lb, ours));
      written.push(join(dir, 'leaderboard.svg'));
      md.push('![funds against the leaderboard](leaderboard.svg)', '');
    }
  }
  md.push(...rankSentences(lb, finals).map((s) => `- ${s}`), '');
  md.push(rankTable(rankAll(lb, finals)), '');
  return written;
}

/** Build DIR/report.md and its SVG plots; returns the written paths. */
export async function writeReport(dir: string): Promise<string[]> {
  const epPath = join(dir, 'episodes.arrow');
  if (!existsSync(epPath)) throw new Error(`${epPath} not found (run \`ycgym run --out ${dir}\` first)`);
  const episodes = readEpisodes(epPath);
  const sumPath = join(dir, 'summary.json');
  const policies = [...new Set(episodes.map((e) => e.policy))];
  const summary: RunSummary = existsSync(sumPath) ? (JSON.parse(readFileSync(sumPath, 'utf8')) as RunSummary) : summarize(episodes, policies);
  const written: string[] = [];
  const md: string[] = ['# ycgym run report', ''];
  const presets = [...new Set(episodes.map((e) => e.preset))];
  const seeds = [...new Set(episodes.map((e) => e.seed))].sort((a, b) => a - b);
  md.push(`Preset: ${presets.join(', ')}. Seeds: ${seeds.length} (${seeds[0] ?? '-'}..${seeds[seeds.length - 1] ?? '-'}). Episodes: ${episodes.length}.`, '');
  md.push('## Summary', '', summaryTable(summary), '');
  const trajPath = join(dir, 'trajectories.arrow');
  let raw: Map<string, RawEpisode> | null = null;
  if (existsSync(trajPath)) {
    const read = await readSeries(trajPath);
    const { series, start, days } = read;
    raw = read.raw;
    const order = Object.keys(summary).filter((p) => series.some((s) => s.policy === p));
    for (const p of new Set(series.map((s) => s.policy))) if (!order.includes(p)) order.push(p);
    if (series.length > 0) {
      writeFileSync(join(dir, 'funds.svg'), fundsSvg(series, order, start, days));
      writeFileSync(join(dir, 'prestige.svg'), prestigeSvg(series, order, start, days));
      written.push(join(dir, 'funds.svg'), join(dir, 'prestige.svg'));
      md.push('## Funds over time', '', '![funds over time](funds.svg)', '', '## Prestige per domain', '', '![prestige per domain](prestige.svg)', '');
    }
  } else {
    md.push('_No trajectories.arrow in this directory: no plots._', '');
  }
  written.push(...leaderboardSection(dir, md, episodes, policies, raw));
  md.push('## Episodes', '', '| policy | seed | final funds | outcome | steps | tasks ok | tasks failed | accepted (adversarial) |', '| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |');
  for (const e of episodes) {
    md.push(`| ${e.policy} | ${e.seed} | ${dollars(e.final_funds_cents)} | ${e.outcome} | ${e.steps} | ${e.tasks_succeeded} | ${e.tasks_failed} | ${e.accepted_total} (${e.accepted_from_adversarial}) |`);
  }
  md.push('');
  writeFileSync(join(dir, 'report.md'), md.join('\n'));
  written.unshift(join(dir, 'report.md'));
  return written;
}

/** Register `ycgym report` on a commander program. */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description('write DIR/report.md and SVG plots from the Arrow files of `ycgym run --out DIR`')
    .argument('<dir>', 'output directory of `ycgym run`')
    .action(async (dir: string) => {
      const files = await writeReport(dir);
      process.stdout.write(`wrote ${files.join(', ')}\n`);
    });
}
