/**
 * The paper's leaderboard beside our runs: the YC-Bench authors' published per-model monthly mean funds
 * (data/leaderboard/yc-bench-data.json, see data/leaderboard/README.md for its source and licence), our runs'
 * funds on the same twelve monthly points, a table of final funds and each run's rank among the models.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/load.js';

/** One published curve: mean funds in dollars over seeds 1-3 at the twelve months. */
export interface PublishedModel {
  name: string;
  /** Twelve values in dollars (2025-01 .. 2025-12); the last is the reported final funds. */
  dollars: number[];
}

/** The shipped leaderboard. */
export interface Leaderboard {
  months: string[];
  models: PublishedModel[];
  path: string;
}

/** Where the shipped data lives. */
export function leaderboardPath(): string {
  return join(packageRoot(), 'data', 'leaderboard', 'yc-bench-data.json');
}

/** Read the published results (null when the data file is not shipped with this installation). */
export function loadLeaderboard(path = leaderboardPath()): Leaderboard | null {
  if (!existsSync(path)) return null;
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, number>>;
  let months: string[] | null = null;
  const models: PublishedModel[] = [];
  for (const [name, byMonth] of Object.entries(raw)) {
    const keys = Object.keys(byMonth).sort();
    if (months === null) months = keys;
    if (keys.join() !== months.join()) throw new Error(`${path}: ${name} has months ${keys.join(',')}, expected ${months.join(',')}`);
    const dollars = keys.map((k) => byMonth[k] as number);
    if (!dollars.every((v) => typeof v === 'number' && Number.isFinite(v))) throw new Error(`${path}: ${name}: non-numeric funds`);
    models.push({ name, dollars });
  }
  return { months: months ?? [], models, path };
}

/** A model's published final mean funds in dollars (its last monthly point). */
export function publishedFinal(lb: Leaderboard, name: string): number {
  const m = lb.models.find((x) => x.name === name);
  if (!m) throw new Error(`no model ${name} in ${lb.path}`);
  return m.dollars[m.dollars.length - 1] as number;
}

/** One episode's funds over time, as read from trajectories.arrow. */
export interface EpisodeFunds {
  policy: string;
  /** Simulated time of each row, microseconds since the epoch (UTC). */
  t: readonly number[];
  funds: readonly number[];
  /** The episode ended in bankruptcy. */
  bankrupt: boolean;
}

const US_PER_MS = 1000;

/**
 * An episode on the published curves' twelve points, in dollars: the funds at the end of each month (the last row
 * before the next month begins), the twelfth point being the final funds; $0 from a bankruptcy on (as the
 * published curves count a bankrupt run).
 */
export function monthlyPoints(e: EpisodeFunds, points = 12): number[] {
  const out: number[] = [];
  const t0 = e.t[0];
  if (t0 === undefined) return out;
  const d0 = new Date(t0 / US_PER_MS);
  const end = e.t[e.t.length - 1] as number;
  let j = 0;
  for (let k = 0; k < points; k++) {
    if (k === points - 1) {
      out.push(e.bankrupt ? 0 : (e.funds[e.funds.length - 1] as number) / 100);
      break;
    }
    const next = Date.UTC(d0.getUTCFullYear(), d0.getUTCMonth() + k + 1, 1) * US_PER_MS;
    if (next > end && e.bankrupt) {
      out.push(0);
      continue;
    }
    while (j + 1 < e.t.length && (e.t[j + 1] as number) < next) j++;
    out.push(Math.max(0, (e.funds[j] as number) / 100));
  }
  return out;
}

/** Mean of several episodes' points, per index. */
export function meanPoints(rows: readonly (readonly number[])[]): number[] {
  if (rows.length === 0) return [];
  const n = Math.min(...rows.map((r) => r.length));
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(rows.reduce((a, r) => a + (r[i] as number), 0) / rows.length);
  return out;
}

/** One row of the ranking: a published model or one of our policies. */
export interface RankRow {
  rank: number;
  name: string;
  source: 'paper' | 'this run';
  final_dollars: number;
}

/** Published models and our policies (name -> mean final dollars) ranked by final funds, best first. */
export function rankAll(lb: Leaderboard, ours: ReadonlyMap<string, number>): RankRow[] {
  const rows: Omit<RankRow, 'rank'>[] = [
    ...lb.models.map((m) => ({ name: m.name, source: 'paper' as const, final_dollars: m.dollars[m.dollars.length - 1] as number })),
    ...[...ours].map(([name, v]) => ({ name, source: 'this run' as const, final_dollars: v })),
  ];
  // Stable order: funds descending, then published before ours, then by name.
  rows.sort((a, b) => b.final_dollars - a.final_dollars || (a.source === b.source ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.source === 'paper' ? -1 : 1));
  return rows.map((r, i) => ({ rank: i + 1, ...r }));
}

function usd(v: number): string {
  const sign = v < 0 ? '-' : '';
  return `${sign}$${Math.round(Math.abs(v)).toLocaleString('en-US')}`;
}

/** Where each of our policies ranks among the published models, one sentence per policy. */
export function rankSentences(lb: Leaderboard, ours: ReadonlyMap<string, number>): string[] {
  const published = lb.models.map((m) => ({ name: m.name, v: m.dollars[m.dollars.length - 1] as number })).sort((a, b) => b.v - a.v);
  const out: string[] = [];
  for (const [name, v] of ours) {
    const above = published.filter((m) => m.v > v);
    const rank = above.length + 1;
    const next = above[above.length - 1];
    const below = published[above.length];
    const around = [next ? `below ${next.name} (${usd(next.v)})` : 'above every published model', below ? `above ${below.name} (${usd(below.v)})` : 'below every published model'];
    out.push(`\`${name}\` (${usd(v)}) places ${rank} of ${published.length + 1} among the ${published.length} published entries: ${next && below ? around.join(', ') : next ? around[0] : around[1]}.`);
  }
  return out;
}

/** The ranking as a Markdown table. */
export function rankTable(rows: readonly RankRow[]): string {
  const out = ['| rank | model / policy | source | final funds (mean) |', '| ---: | --- | --- | ---: |'];
  for (const r of rows) {
    const name = r.source === 'this run' ? `**${r.name}**` : r.name;
    out.push(`| ${r.rank} | ${name} | ${r.source} | ${usd(r.final_dollars)} |`);
  }
  return out.join('\n');
}

function escXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function tickStep(range: number): number {
  const raw = range / 6;
  const mag = 10 ** Math.floor(Math.log10(raw || 1));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

const OUR_COLORS = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'final'];

/**
 * Our policies' mean monthly funds (thick, coloured) over the published models' curves (thin, grey, labelled at
 * their end where the labels do not collide), on the same axes: twelve points, dollars.
 */
export function leaderboardSvg(lb: Leaderboard, ours: readonly { name: string; points: readonly number[] }[]): string {
  const w = 980;
  const h = 560;
  const ml = 86;
  const mr = 210;
  const mt = 34;
  const mb = 40;
  const pw = w - ml - mr;
  const ph = h - mt - mb;
  const n = lb.months.length;
  let lo = 0;
  let hi = 1;
  for (const arr of [...lb.models.map((m) => m.dollars), ...ours.map((o) => o.points)]) for (const v of arr) hi = Math.max(hi, v);
  const step = tickStep(hi - lo);
  hi = Math.ceil(hi / step) * step;
  const X = (i: number) => ml + (pw * i) / Math.max(1, n - 1);
  const Y = (v: number) => mt + ph - (ph * (v - lo)) / (hi - lo);
  const parts: string[] = [];
  parts.push(`<text x="${ml + pw / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">Funds against the paper's leaderboard (mean over seeds; published: seeds 1-3, default preset)</text>`);
  for (let v = lo; v <= hi + step / 2; v += step) {
    const y = Y(v).toFixed(1);
    parts.push(`<line x1="${ml}" y1="${y}" x2="${ml + pw}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${ml - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" font-size="11" fill="#444">${escXml(usd(v))}</text>`);
  }
  for (let i = 0; i < n; i++) {
    const x = X(i).toFixed(1);
    parts.push(`<line x1="${x}" y1="${mt + ph}" x2="${x}" y2="${mt + ph + 4}" stroke="#444"/>`);
    parts.push(`<text x="${x}" y="${mt + ph + 17}" text-anchor="middle" font-size="11" fill="#444">${MONTHS[i] ?? String(i)}</text>`);
  }
  parts.push(`<rect x="${ml}" y="${mt}" width="${pw}" height="${ph}" fill="none" stroke="#444"/>`);
  const line = (pts: readonly number[], color: string, width: number) =>
    `<polyline points="${pts.map((v, i) => `${X(i).toFixed(1)},${Y(v).toFixed(1)}`).join(' ')}" fill="none" stroke="${color}" stroke-width="${width}"/>`;
  for (const m of lb.models) parts.push(line(m.dollars, '#b0b0b0', 1.2));
  // End labels: published in grey, ours in colour; skip a label that would overlap the previous one.
  const labels = [
    ...lb.models.map((m) => ({ name: m.name, v: m.dollars[n - 1] as number, color: '#777' })),
    ...ours.map((o, i) => ({ name: o.name, v: o.points[n - 1] ?? 0, color: OUR_COLORS[i % OUR_COLORS.length] as string, ours: true })),
  ].sort((a, b) => b.v - a.v);
  let lastY = -Infinity;
  for (const l of labels) {
    const y = Y(l.v);
    if (y - lastY < 11 && !('ours' in l)) continue;
    lastY = y;
    parts.push(`<text x="${ml + pw + 6}" y="${y.toFixed(1)}" dominant-baseline="middle" font-size="10" fill="${l.color}"${'ours' in l ? ' font-weight="bold"' : ''}>${escXml(l.name)} ${escXml(usd(l.v))}</text>`);
  }
  ours.forEach((o, i) => parts.push(line(o.points, OUR_COLORS[i % OUR_COLORS.length] as string, 3)));
  const body = parts.join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif">\n<rect width="${w}" height="${h}" fill="white"/>\n${body}\n</svg>\n`;
}
