/**
 * The one wording of a schema violation (`/path: problem`, the first ajv error), below the protocol layer: the in-process
 * `Env` words its reset errors as the server does without loading the protocol's validators.
 */
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

/** Characters of a client's text (an op or field name, a path through its keys) an error message quotes at most. */
export const QUOTED_CHARS = 120;

/**
 * `text` for an error message, `wrap`ped (quoted) and cut after `QUOTED_CHARS` characters with its length said
 * (`'abc'… (1048576 characters)`): an error quotes what the client sent, and a reply must not grow with it.
 */
export function quoted(text: string, wrap: (t: string) => string = (t) => `'${t}'`): string {
  return text.length <= QUOTED_CHARS ? wrap(text) : `${wrap(text.slice(0, QUOTED_CHARS))}… (${text.length} characters)`;
}

/** A JSON path for an error message: its start and end when it is long (client keys make it any length). */
function shownPath(path: string): string {
  if (path.length <= 2 * QUOTED_CHARS) return path;
  return `${path.slice(0, QUOTED_CHARS)}…${path.slice(-QUOTED_CHARS)} (a path of ${path.length} characters)`;
}

/**
 * `/path: problem` for the first ajv error; where that is a union branch of the wrong type (`anyOf`: a command string
 * or an index), the first error at the same place that is not a type error, from the branch of the value's type:
 * `-1` as an action is "must be >= 0", not "must be string".
 */
export function formatErrors(errors: ErrorObject[] | null | undefined, base = ''): string {
  let e = errors?.[0];
  if (e !== undefined && e.keyword === 'type' && errors !== null && errors !== undefined) {
    const at = e.instancePath;
    e = errors.find((x) => x.instancePath === at && x.keyword !== 'type' && x.keyword !== 'anyOf' && x.keyword !== 'oneOf') ?? e;
  }
  const path = shownPath(base + (e?.instancePath ?? '') || '/');
  if (e === undefined) return `${path}: invalid`;
  const p = e.params as Record<string, unknown>;
  let msg: string;
  switch (e.keyword) {
    case 'additionalProperties':
      msg = `unknown field ${quoted(String(p['additionalProperty']))}`;
      break;
    case 'const':
      msg = `must be ${JSON.stringify(p['allowedValue'])}`;
      break;
    case 'enum':
      msg = `must be one of ${(p['allowedValues'] as unknown[]).map((x) => JSON.stringify(x)).join(', ')}`;
      break;
    default:
      msg = e.message ?? 'invalid';
  }
  return `${path}: ${msg}`;
}

/** `${takes}, got <what it is>` unless `args` is an object (not null, not an array): a JavaScript caller may pass anything. */
export function notAnObject(args: unknown, takes: string): string | null {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) return null;
  return `${takes}, got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args}`;
}

/** What is wrong with `value` by a generated validator (`/path: problem`), or null. */
export function schemaProblem(validator: unknown, value: unknown): string | null {
  const check = validator as ValidateFunction;
  return check(value) ? null : formatErrors(check.errors);
}

/**
 * What is wrong with an in-process reset's arguments, or null: not an object, or its seed and options by the
 * protocol's request `op` (its validator). The preset is checked where it is loaded (`presetConfig`).
 */
export function resetRequestProblem(validator: unknown, op: 'reset' | 'turn_reset', args: unknown): string | null {
  const notObject = notAnObject(args, 'reset takes an object { seed, preset?, options? }');
  if (notObject !== null) return notObject;
  const { seed, options } = args as { seed?: unknown; options?: unknown };
  return schemaProblem(validator, options === undefined ? { v: 1, op, seed } : { v: 1, op, seed, options });
}
