/**
 * `ycgym report DIR`: reads a bulk run's table files (Arrow IPC or Parquet) and summary.json and writes
 * DIR/report.md (summary and per-episode tables) with hand-built SVG plots: funds over simulated time per
 * policy (mean line, min-max band over seeds, on a symmetric log axis so that one bankrupt seed does not
 * squash the others; each bankruptcy marked where it happened) and prestige per domain over time (mean per
 * policy); and the policies against the paper's published leaderboard (src/cli/leaderboard.ts):
 * DIR/leaderboard.svg and a ranking table.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { RecordBatchReader, type RecordBatch, type Table } from 'apache-arrow';
import { readArrowFile } from '../export/arrow.js';
import { readParquetBatches, readParquetFile } from '../export/parquet.js';
import { dollars } from './format.js';
import { summarize, summaryTable, type RunSummary } from './run.js';
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
  /** Where the episode went bankrupt (its last row had negative funds): grid day and funds; null otherwise. */
  bankrupt: { day: number; funds: number } | null;
}

/** The file of a run's table in DIR: TABLE.arrow, else TABLE.parquet; null when neither exists. */
export function tableFile(dir: string, table: 'trajectories' | 'episodes'): string | null {
  for (const ext of ['arrow', 'parquet']) {
    const p = join(dir, `${table}.${ext}`);
    if (existsSync(p)) return p;
  }
  return null;
}

/** Columns the plots read from the step table. */
const SERIES_COLUMNS = ['run_id', 'episode_id', 'policy', 'sim_time', 'funds_cents', ...DOMAINS.map((d) => `prestige_${d}`)];

/** Record batches of a step file: Arrow IPC streamed batch by batch, Parquet with only the plotted columns. */
async function* stepBatches(path: string): AsyncGenerator<RecordBatch> {
  if (path.endsWith('.parquet')) {
    yield* readParquetBatches(path, SERIES_COLUMNS);
    return;
  }
  const fh = await open(path);
  try {
    const reader = await RecordBatchReader.from(fh);
    for await (const b of reader) yield b;
  } finally {
    await fh.close();
  }
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
  {
    for await (const b of stepBatches(path)) {
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
    const lastFunds = e.funds[e.funds.length - 1] as number;
    const bankrupt = lastFunds < 0 ? { day: Math.min(days, ((e.t[e.t.length - 1] as number) - start) / US_PER_DAY), funds: lastFunds } : null;
    series.push({ policy: e.policy, funds: f, prestige: p, bankrupt });
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
/**
 * Symmetric log scale: linear within ±`c` of 0, logarithmic beyond, so that values of very different
 * magnitudes and signs (a bankrupt seed's debt beside the others' funds) share one readable axis.
 */
export function symlog(v: number, c: number): number {
  return Math.sign(v) * Math.log10(1 + Math.abs(v) / c);
}

/** Inverse of `symlog`. */
export function symlogInverse(y: number, c: number): number {
  return Math.sign(y) * c * (10 ** Math.abs(y) - 1);
}

/** Tick values of a symlog axis between lo and hi: 0 and ±c·10^k. */
function symlogTicks(lo: number, hi: number, c: number): number[] {
  const out: number[] = [];
  for (let k = 12; k >= 0; k--) if (-c * 10 ** k >= lo) out.push(-c * 10 ** k);
  if (lo <= 0 && hi >= 0) out.push(0);
  for (let k = 0; k <= 12; k++) if (c * 10 ** k <= hi) out.push(c * 10 ** k);
  return out;
}

/** A point marked on a panel (x in grid days, y in data units). */
interface Mark {
  x: number;
  y: number;
  color: string;
  title: string;
}

function panel(o: { ox: number; oy: number; w: number; h: number; title: string; yFmt: (v: number) => string; lines: Line[]; days: number; start: number; yMin?: number; symlog?: number; marks?: Mark[] }): string {
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
  for (const m of o.marks ?? []) {
    lo = Math.min(lo, m.y);
    hi = Math.max(hi, m.y);
  }
  if (hi <= lo) hi = lo + 1;
  const X = (d: number) => o.ox + ml + (pw * d) / Math.max(1, o.days);
  let Y: (v: number) => number;
  let ticks: number[];
  const c = o.symlog;
  if (c !== undefined) {
    // Round the ends out to the next tick (0 or ±c·10^k).
    const out = (v: number) => (v === 0 ? 0 : Math.sign(v) * c * 10 ** Math.ceil(Math.log10(Math.max(1, Math.abs(v) / c))));
    lo = Math.min(0, out(lo));
    hi = Math.max(0, out(hi));
    if (hi <= lo) hi = c;
    const a = symlog(lo, c);
    const b = symlog(hi, c);
    Y = (v: number) => o.oy + mt + ph - (ph * (symlog(v, c) - a)) / (b - a);
    ticks = symlogTicks(lo, hi, c);
  } else {
    const step = niceStep(hi - lo, 6);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    Y = (v: number) => o.oy + mt + ph - (ph * (v - lo)) / (hi - lo);
    ticks = [];
    for (let v = lo; v <= hi + step / 2; v += step) ticks.push(v);
  }
  const parts: string[] = [];
  parts.push(`<text x="${o.ox + ml + pw / 2}" y="${o.oy + 17}" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`);
  for (const v of ticks) {
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
  for (const m of o.marks ?? []) {
    const x = X(m.x);
    const y = Y(m.y);
    const d = 5;
    parts.push(`<path d="M${(x - d).toFixed(1)},${(y - d).toFixed(1)}L${(x + d).toFixed(1)},${(y + d).toFixed(1)}M${(x - d).toFixed(1)},${(y + d).toFixed(1)}L${(x + d).toFixed(1)},${(y - d).toFixed(1)}" stroke="${m.color}" stroke-width="2.5"><title>${esc(m.title)}</title></path>`);
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

/** Linear part of the funds axis: ±$10,000 (in cents); beyond it the axis is logarithmic. */
const FUNDS_SYMLOG_CENTS = 1_000_000;

/**
 * Funds over time: per policy the mean over episodes with a min-max band, on a symmetric log axis; each
 * bankruptcy is marked with a cross (in its policy's colour) where its episode ended, after which the
 * episode's funds stay at their last value.
 */
export function fundsSvg(series: Series[], policies: string[], start: number, days: number): string {
  const marks: Mark[] = [];
  const lines: Line[] = policies.map((p, i) => {
    const mine = series.filter((s) => s.policy === p);
    const a = aggregate(mine, (s) => s.funds);
    const color = COLORS[i % COLORS.length] as string;
    for (const s of mine) if (s.bankrupt) marks.push({ x: s.bankrupt.day, y: s.bankrupt.funds, color, title: `${p}: bankrupt at ${dollars(s.bankrupt.funds)}` });
    const n = mine.filter((s) => s.bankrupt).length;
    return { label: n > 0 ? `${p} (${n} bankrupt ×)` : p, color, ys: a.mean, band: { lo: a.lo, hi: a.hi } };
  });
  const w = 900;
  const h = 480;
  const body = panel({ ox: 0, oy: 0, w: w - 150, h, title: 'Funds over simulated time (mean, min-max band; symlog axis; × bankruptcy)', yFmt: (v) => dollars(v), lines, days, start, symlog: FUNDS_SYMLOG_CENTS, marks });
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

/** The rows of an episodes.arrow or episodes.parquet file, as the bulk runner produced them (int64 columns as numbers). */
export function readEpisodes(path: string): EpisodeRow[] {
  const t: Table = path.endsWith('.parquet') ? readParquetFile(path) : readArrowFile(path);
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

/** `read()` of the file `path`, its failure named by the file and what it was read as. */
async function reading<T>(path: string, as: string, read: () => T | Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    throw new Error(`${path}: cannot read it as ${as}: ${(e as Error).message}`);
  }
}

/** Build DIR/report.md and its SVG plots; returns the written paths. */
export async function writeReport(dir: string): Promise<string[]> {
  const epPath = tableFile(dir, 'episodes');
  if (epPath === null) throw new Error(`${join(dir, 'episodes.arrow')} (or .parquet) not found (run \`ycgym run --out ${dir}\` first)`);
  const episodes = await reading(epPath, 'a table', () => readEpisodes(epPath));
  const sumPath = join(dir, 'summary.json');
  const policies = [...new Set(episodes.map((e) => e.policy))];
  const summary: RunSummary = existsSync(sumPath) ? await reading(sumPath, 'JSON', () => JSON.parse(readFileSync(sumPath, 'utf8')) as RunSummary) : summarize(episodes, policies);
  const written: string[] = [];
  const md: string[] = ['# ycgym run report', ''];
  const presets = [...new Set(episodes.map((e) => e.preset))];
  const seeds = [...new Set(episodes.map((e) => e.seed))].sort((a, b) => a - b);
  md.push(`Preset: ${presets.join(', ')}. Seeds: ${seeds.length} (${seeds[0] ?? '-'}..${seeds[seeds.length - 1] ?? '-'}). Episodes: ${episodes.length}.`, '');
  md.push('## Summary', '', summaryTable(summary), '');
  const trajPath = tableFile(dir, 'trajectories');
  let raw: Map<string, RawEpisode> | null = null;
  if (trajPath !== null) {
    const read = await reading(trajPath, 'a table', () => readSeries(trajPath));
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
    md.push('_No trajectories.arrow or trajectories.parquet in this directory: no plots._', '');
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
