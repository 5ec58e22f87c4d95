/**
 * The reference CLI's usage-error screen (typer 0.24 `rich_format_error` with rich 14.3 at 80 columns, no
 * colour): the usage line, the "Try ... --help" hint and a rounded "Error" panel whose text rich word-wraps.
 * Wrapping follows rich's `divide_line` / `chop_cells` / `rstrip_end` / `truncate` with rich's own cell-width
 * table, so wide (CJK, emoji) and zero-width characters wrap as in the reference.
 */
import { CELL_WIDTH_RANGES, NARROW_TO_WIDE } from './rich-cells.js';

/** Console width of the reference's rich output when it is not attached to a terminal. */
export const RICH_WIDTH = 80;

const ZWJ = 0x200d;
const VS16 = 0xfe0f;

/** Cells taken by one code point (rich `get_character_cell_size`). */
export function charCells(cp: number): number {
  if ((cp !== 0 && cp < 32) || (cp >= 0x7f && cp < 0xa0)) return 0;
  if (cp >= 0x20 && cp <= 0x7e) return 1;
  const last = CELL_WIDTH_RANGES[CELL_WIDTH_RANGES.length - 1];
  if (last !== undefined && cp > last[1]) return 1;
  let lo = 0;
  let hi = CELL_WIDTH_RANGES.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = CELL_WIDTH_RANGES[mid] as readonly [number, number, number];
    if (cp < r[0]) hi = mid - 1;
    else if (cp > r[1]) lo = mid + 1;
    else return r[2];
  }
  return 1;
}

/** Code points of a string (Python indexes strings by code point). */
function cps(s: string): number[] {
  const out: number[] = [];
  for (const ch of s) out.push(ch.codePointAt(0) as number);
  return out;
}

function fromCps(a: readonly number[]): string {
  let s = '';
  for (const c of a) s += String.fromCodePoint(c);
  return s;
}

/** Grapheme spans `[start, end, cells]` over code points (rich `split_graphemes`). */
function graphemes(text: readonly number[]): [number, number, number][] {
  const spans: [number, number, number][] = [];
  let last: number | null = null;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] as number;
    if (c === ZWJ || c === VS16) {
      if (spans.length === 0) {
        spans.push([i, i + 1, 0]);
        i++;
        continue;
      }
      const span = spans[spans.length - 1] as [number, number, number];
      if (c === ZWJ) {
        i += i < n - 1 ? 2 : 1;
        span[1] = i;
      } else {
        i++;
        if (last !== null && NARROW_TO_WIDE.has(last)) {
          last = null;
          span[2] += 1;
        }
        span[1] = i;
      }
      continue;
    }
    const w = charCells(c);
    if (w) {
      last = c;
      spans.push([i, i + 1, w]);
    } else if (spans.length > 0) {
      (spans[spans.length - 1] as [number, number, number])[1] = i + 1;
    } else spans.push([i, i + 1, 0]);
    i++;
  }
  return spans;
}

/** Cells taken by a string (rich `cell_len`). */
export function cellLen(s: string): number {
  return cellLenCps(cps(s));
}

function cellLenCps(text: readonly number[]): number {
  if (!text.includes(ZWJ) && !text.includes(VS16)) {
    let t = 0;
    for (const c of text) t += charCells(c);
    return t;
  }
  let total = 0;
  for (const g of graphemes(text)) total += g[2];
  return total;
}

/** Fold a word into lines of at most `width` cells (rich `chop_cells`). */
function chopCells(text: readonly number[], width: number): number[][] {
  const lines: number[][] = [];
  let size = 0;
  let offset = 0;
  for (const [start, , cells] of graphemes(text)) {
    if (size + cells > width) {
      lines.push(text.slice(offset, start));
      offset = start;
      size = 0;
    }
    size += cells;
  }
  if (size) lines.push(text.slice(offset));
  return lines;
}

/** Python's `str.isspace` (what `re`'s `\s` matches in a str pattern): JS `\s` minus U+FEFF, plus U+001C..U+001F, U+0085. */
function isSpace(c: number): boolean {
  if (c === 0xfeff) return false;
  return (c >= 0x1c && c <= 0x1f) || c === 0x85 || /\s/u.test(String.fromCodePoint(c));
}

/** Break offsets (code points) for one line (rich `divide_line`, fold mode). */
function divideLine(text: readonly number[], width: number): number[] {
  const breaks: number[] = [];
  let offset = 0;
  let pos = 0;
  const n = text.length;
  while (pos < n) {
    // A "word" is \s*\S+\s* (leading and trailing whitespace included).
    let stripped = pos;
    while (stripped < n && isSpace(text[stripped] as number)) stripped++;
    if (stripped >= n) break;
    while (stripped < n && !isSpace(text[stripped] as number)) stripped++;
    let end = stripped;
    while (end < n && isSpace(text[end] as number)) end++;
    let start = pos;
    const word = text.slice(pos, end);
    const wordLen = cellLenCps(text.slice(pos, stripped));
    if (width - offset >= wordLen) offset += cellLenCps(word);
    else if (wordLen > width) {
      const folded = chopCells(word, width);
      folded.forEach((line, k) => {
        if (start) breaks.push(start);
        if (k === folded.length - 1) offset = cellLenCps(line);
        else start += line.length;
      });
    } else if (offset && start) {
      breaks.push(start);
      offset = cellLenCps(word);
    }
    pos = end;
  }
  return breaks;
}

/** Crop or pad a line to exactly `width` cells (rich `truncate` + `Segment.set_shape`). */
function fitCells(line: readonly number[], width: number): string {
  let cells = 0;
  const out: number[] = [];
  for (const [s, e, w] of graphemes(line)) {
    if (cells + w > width) break;
    for (let k = s; k < e; k++) out.push(line[k] as number);
    cells += w;
  }
  return fromCps(out) + ' '.repeat(Math.max(0, width - cells));
}

/** Expand tabs to the next multiple of 8 cells (rich `Text.expand_tabs`). */
function expandTabs(line: string): string {
  if (!line.includes('\t')) return line;
  let out = '';
  let cell = 0;
  const parts = line.split('\t');
  parts.forEach((part, k) => {
    if (k < parts.length - 1) {
      const p = `${part} `;
      cell += cellLen(p);
      const rem = cell % 8;
      const pad = rem ? 8 - rem : 0;
      out += p + ' '.repeat(pad);
      cell += pad;
    } else out += part;
  });
  return out;
}

/** rich `Text(...)` drops BEL, BS, VT, FF and CR. */
function stripControl(s: string): string {
  return s.replace(/[\x07\x08\x0b\x0c\x0d]/g, '');
}

/** Word-wrap text to `width` cells and pad every line to exactly `width` (rich Text in a Panel). */
export function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const raw of stripControl(text).split('\n')) {
    const line = cps(expandTabs(raw));
    const breaks = divideLine(line, width);
    const bounds = [0, ...breaks, line.length];
    for (let k = 0; k + 1 < bounds.length; k++) {
      let piece = line.slice(bounds[k], bounds[k + 1]);
      // rstrip_end: drop trailing whitespace beyond the width (counted in characters, as rich does).
      if (piece.length > width) {
        let ws = 0;
        while (ws < piece.length && isSpace(piece[piece.length - 1 - ws] as number)) ws++;
        piece = piece.slice(0, piece.length - Math.min(ws, piece.length - width));
      }
      lines.push(fitCells(piece, width));
    }
  }
  return lines;
}

/**
 * The stderr text of a click usage error as the reference prints it: `usage` (the "Usage: ..." and "Try ..."
 * lines, omitted when click raised the error without a context) and the message in an "Error" panel.
 */
export function richUsageError(message: string, usage: readonly string[]): string {
  const inner = RICH_WIDTH - 4;
  const title = ' Error ';
  const top = `╭─${title}${'─'.repeat(RICH_WIDTH - 3 - title.length)}╮`;
  const body = wrapText(message, inner).map((l) => `│ ${l} │`);
  const bottom = `╰${'─'.repeat(RICH_WIDTH - 2)}╯`;
  return [...usage, top, ...body, bottom].map((l) => `${l}\n`).join('');
}
