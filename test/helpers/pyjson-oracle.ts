/**
 * The Python-compatible JSON writer as it was before the one-pass writer (issue 14, item 1): a test oracle only.
 * The property tests check that `pyJsonDumps` (src/sim/py/pyjson.ts) prints exactly what this prints.
 */
import { FLOAT_KEYS, FLOAT_MAP_KEYS, PyFloat, type Out } from '../../src/sim/py/pyjson.js';
import { pyRepr } from '../../src/sim/py/pyfloat.js';

/**
 * Python's `json.dumps` string (`ensure_ascii=True`), derived independently of the writer under test: JSON.stringify
 * escapes the quote, the backslash and the control characters as Python does (short escapes, `\u001f`, lone
 * surrogates as `\udxxx`); Python also escapes every other code unit outside space..`~` as `\uXXXX` (lowercase).
 */
function encodeString(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function floatText(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return pyRepr(x);
}

function intText(x: number): string {
  if (Number.isSafeInteger(x)) return String(x);
  if (!Number.isFinite(x)) return floatText(x);
  if (Number.isInteger(x)) return Math.abs(x) < 1e21 ? x.toFixed(0) : BigInt(x).toString();
  return pyRepr(x);
}

/** How the numbers under a key print: as given, as Python floats, or as a map of names to floats. */
type Mode = 'plain' | 'float' | 'float-map';

function childMode(k: string): Mode {
  if (FLOAT_KEYS.has(k)) return 'float';
  return FLOAT_MAP_KEYS.has(k) ? 'float-map' : 'plain';
}

/** A newline and the indentation of `level` (not memoised: the oracle favours plainness). */
function pad(indent: number, level: number): string {
  return '\n' + ' '.repeat(indent * level);
}

function dumpValue(x: Out, level: number, mode: Mode, indent: number | null): string {
  if (x === null) return 'null';
  switch (typeof x) {
    case 'boolean':
      return x ? 'true' : 'false';
    case 'number':
      return mode === 'float' ? floatText(x) : intText(x);
    case 'string':
      return encodeString(x);
  }
  if (x instanceof PyFloat) return floatText(x.value);
  if (Array.isArray(x)) {
    const n = x.length;
    if (n === 0) return '[]';
    if (indent === null) {
      let out = '[' + dumpValue(x[0] as Out, level + 1, 'plain', null);
      for (let i = 1; i < n; i++) out += ', ' + dumpValue(x[i] as Out, level + 1, 'plain', null);
      return out + ']';
    }
    const p = pad(indent, level + 1);
    let out = '[' + p + dumpValue(x[0] as Out, level + 1, 'plain', indent);
    for (let i = 1; i < n; i++) out += ',' + p + dumpValue(x[i] as Out, level + 1, 'plain', indent);
    return out + pad(indent, level) + ']';
  }
  const obj = x as { [k: string]: Out };
  let out = '{';
  let first = true;
  const p = indent === null ? '' : pad(indent, level + 1);
  for (const k in obj) {
    const v = obj[k] as Out;
    const m = mode === 'float-map' ? 'float' : childMode(k);
    if (indent === null) out += (first ? '' : ', ') + encodeString(k) + ': ' + dumpValue(v, level + 1, m, null);
    else out += (first ? '' : ',') + p + encodeString(k) + ': ' + dumpValue(v, level + 1, m, indent);
    first = false;
  }
  if (first) return '{}';
  return out + (indent === null ? '}' : pad(indent, level) + '}');
}

/** Python `json.dumps(v, indent=indent)` (ensure_ascii=True); `indent` null gives the compact `", "`/`": "` form. */
/** The old `pyJsonDumps`: Python `json.dumps(v, indent=indent)` (ensure_ascii=True). */
export function oraclePyJsonDumps(v: Out, indent: number | null = 2): string {
  return dumpValue(v, 0, 'plain', indent);
}
