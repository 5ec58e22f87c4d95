/**
 * Python `json.dumps` compatible text output (ensure_ascii, `indent=2` or compact), and a parser that
 * keeps the int/float distinction of JSON number tokens, so outputs can be compared with the reference exactly.
 */
import { pyRepr } from './pyfloat.js';

/** A Python float that must print with a decimal point (`899.0`) in JSON output. */
export class PyFloat {
  constructor(readonly value: number) {}
}
/**
 * Marks a value the reference prints as a Python float. Outputs stay plain numbers; `pyJsonDumps` restores
 * the float formatting from the key (see FLOAT_KEYS in pyjson.ts), so this is documentation, not a wrapper.
 */
export function F(x: number): number {
  return x;
}
/** JSON-like output value; floats are tagged so text output matches Python's `json.dumps`. */
export type Out = null | boolean | number | string | PyFloat | Out[] | { [k: string]: Out };

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

/**
 * Keys whose numeric values are Python floats in the reference's output (`899.0`, not `899`). Outputs are
 * plain JS values; the float/int distinction is restored from the key when printing (schema-driven typing).
 */
export const FLOAT_KEYS: ReadonlySet<string> = new Set([
  'reward_prestige_delta', 'skill_boost_pct', 'required_qty', 'completed_qty', 'remaining_qty', 'progress_pct',
  'trust_level', 'trust_delta', 'months_runway', 'failure_rate_pct', 'cancel_penalty_per_domain', 'old', 'new', 'delta',
  'work_hours_per_day', 'reward_multiplier', 'loyalty',
]);
/** Keys whose value is an object mapping names to floats (`prestige`, `skill_rates`, `rates`). */
export const FLOAT_MAP_KEYS: ReadonlySet<string> = new Set(['prestige', 'skill_rates', 'rates']);

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
export function pyJsonDumps(v: Out, indent: number | null = 2): string {
  return dumpValue(v, 0, Mode.Plain, indent);
}

/** Tag the floats of a plain output (by key, as `pyJsonDumps` prints them) so it compares exactly with parsed reference output. */
export function typedFromPlain(v: Out, mode: Mode = Mode.Plain): Out {
  if (typeof v === 'number') return mode === Mode.Float ? new PyFloat(v) : v;
  if (Array.isArray(v)) return v.map((e) => typedFromPlain(e, Mode.Plain));
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) {
    const o: { [k: string]: Out } = {};
    for (const k of Object.keys(v)) o[k] = typedFromPlain(v[k] as Out, mode === Mode.FloatMap ? Mode.Float : childMode(k));
    return o;
  }
  return v;
}

/** Convert tagged output to plain JSON values (floats become numbers). */
export function toPlain(v: Out): unknown {
  if (v instanceof PyFloat) return v.value;
  if (Array.isArray(v)) return v.map(toPlain);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) o[k] = toPlain(v[k] as Out);
    return o;
  }
  return v;
}

/** Parse JSON text keeping float tokens (with `.`, `e` or `E`) as PyFloat so int/float types compare exactly. */
export function parseTyped(text: string): Out {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const value = (): Out => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const o: { [k: string]: Out } = {};
      ws();
      if (text[i] === '}') {
        i++;
        return o;
      }
      for (;;) {
        ws();
        const k = value();
        if (typeof k !== 'string') throw new SyntaxError(`bad key at ${i}`);
        ws();
        if (text[i] !== ':') throw new SyntaxError(`expected : at ${i}`);
        i++;
        o[k] = value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return o;
        }
        throw new SyntaxError(`expected , or } at ${i}`);
      }
    }
    if (c === '[') {
      i++;
      const a: Out[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return a;
      }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return a;
        }
        throw new SyntaxError(`expected , or ] at ${i}`);
      }
    }
    if (c === '"') {
      const start = i;
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      return JSON.parse(text.slice(start, i)) as string;
    }
    const m = /^-?(?:\d+)(\.\d+)?([eE][+-]?\d+)?|^true|^false|^null|^NaN|^-?Infinity/.exec(text.slice(i, i + 400));
    if (!m) throw new SyntaxError(`unexpected token at ${i}`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    if (m[0] === 'NaN') return new PyFloat(NaN);
    if (m[0].endsWith('Infinity')) return new PyFloat(m[0].startsWith('-') ? -Infinity : Infinity);
    const n = Number(m[0]);
    return m[1] !== undefined || m[2] !== undefined ? new PyFloat(n) : n;
  };
  const v = value();
  ws();
  if (i !== text.length) throw new SyntaxError(`trailing data at ${i}`);
  return v;
}

/** Deep equality of tagged values: floats equal only floats of the same value, ints only ints. */
export function typedEqual(a: Out, b: Out): boolean {
  if (a instanceof PyFloat || b instanceof PyFloat) {
    return a instanceof PyFloat && b instanceof PyFloat && (a.value === b.value || (Number.isNaN(a.value) && Number.isNaN(b.value)));
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => typedEqual(x, b[i] as Out));
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return false;
    return ka.every((k) => typedEqual(a[k] as Out, b[k] as Out));
  }
  return a === b;
}
