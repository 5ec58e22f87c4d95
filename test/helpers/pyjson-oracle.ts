/**
 * The Python-compatible JSON writer as it was before the one-pass writer (issue 14, item 1): a test oracle only.
 * The property tests check that `pyJsonDumps` (src/sim/py/pyjson.ts) prints exactly what this prints.
 */
import { FLOAT_KEYS, FLOAT_MAP_KEYS, PyFloat, type Out } from '../../src/sim/py/pyjson.js';
import { pyRepr } from '../../src/sim/py/pyfloat.js';

const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function encodeString(s: string): string {
  if (PLAIN_ASCII.test(s)) return '"' + s + '"';
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
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

const enum Mode {
  Plain = 0,
  Float = 1,
  FloatMap = 2,
}

function childMode(k: string): Mode {
  return FLOAT_KEYS.has(k) ? Mode.Float : FLOAT_MAP_KEYS.has(k) ? Mode.FloatMap : Mode.Plain;
}

const PADS: string[] = [];
function pad(indent: number, level: number): string {
  const n = indent * level;
  let p = PADS[n];
  if (p === undefined) {
    p = '\n' + ' '.repeat(n);
    PADS[n] = p;
  }
  return p;
}

function dumpValue(x: Out, level: number, mode: Mode, indent: number | null): string {
  if (x === null) return 'null';
  switch (typeof x) {
    case 'boolean':
      return x ? 'true' : 'false';
    case 'number':
      return mode === Mode.Float ? floatText(x) : intText(x);
    case 'string':
      return encodeString(x);
  }
  if (x instanceof PyFloat) return floatText(x.value);
  if (Array.isArray(x)) {
    const n = x.length;
    if (n === 0) return '[]';
    if (indent === null) {
      let out = '[' + dumpValue(x[0] as Out, level + 1, Mode.Plain, null);
      for (let i = 1; i < n; i++) out += ', ' + dumpValue(x[i] as Out, level + 1, Mode.Plain, null);
      return out + ']';
    }
    const p = pad(indent, level + 1);
    let out = '[' + p + dumpValue(x[0] as Out, level + 1, Mode.Plain, indent);
    for (let i = 1; i < n; i++) out += ',' + p + dumpValue(x[i] as Out, level + 1, Mode.Plain, indent);
    return out + pad(indent, level) + ']';
  }
  const obj = x as { [k: string]: Out };
  let out = '{';
  let first = true;
  const p = indent === null ? '' : pad(indent, level + 1);
  for (const k in obj) {
    const v = obj[k] as Out;
    const m = mode === Mode.FloatMap ? Mode.Float : childMode(k);
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
  return dumpValue(v, 0, Mode.Plain, indent);
}
