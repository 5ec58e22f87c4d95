/**
 * Load experiment presets in the reference's TOML format.
 *
 * Behaviour follows the reference loader (yc_bench/config/loader.py):
 *  - an argument ending in `.toml` or containing a path separator is a file path,
 *    anything else names a built-in preset in the package's `presets/` directory;
 *  - `extends = "name"` deep-merges the named built-in preset underneath the file
 *    (the file wins; tables merge recursively; arrays and scalars are replaced).
 *
 * Deliberate differences from the reference:
 *  - `extends` chains are resolved recursively (a base may itself extend another
 *    preset), with cycle detection; the reference resolves only one level;
 *  - unknown keys are errors (pydantic silently ignores them), NaN/Infinity are
 *    rejected, and a zero divisor in the derived parameters is a clear error;
 *  - there are NO environment-variable overrides (the reference applies
 *    YC_BENCH_MODEL, YC_BENCH_TEMPERATURE, ... last). A run is fully described
 *    by its preset file, which keeps runs reproducible.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { parse as parseToml } from 'smol-toml';
import { validate as validatePreset } from './preset-validator.generated.js';
import { deriveWorld, DIST_FIELDS, installConfigValidator, type DistType, type ExperimentConfig, formatFixedPy, isoformat, LAST_EXACT_INSTANT, LAST_START_DATE, LATEST_RUN_END, latestDeadline, MAX_HORIZON_YEARS, pyRound, runBounds, salaryShareTotal, type WorldConfig, type WorldInput } from '../sim/index.js';

/** A preset that could not be read, merged or validated; `issues` lists every problem found. */
export class PresetError extends Error {
  /** Label of the offending source (a file path as given, or a built-in preset name). */
  readonly source: string;
  /** The individual problems, each prefixed with a JSON pointer where one applies. */
  readonly issues: readonly string[];

  /** Build the error; the message is `preset "<source>": <issue>; <issue>...`. */
  constructor(source: string, issues: readonly string[]) {
    super(`preset "${source}": ${issues.join('; ')}`);
    this.name = 'PresetError';
    this.source = source;
    this.issues = issues;
  }
}

/** A TOML table as produced by the parser (before validation). */
type Table = Record<string, unknown>;

/** The shape ajv guarantees after validation with defaults, before derivation. */
type ValidatedRaw = Omit<ExperimentConfig, 'world'> & { world: WorldInput; extends?: string };

const PACKAGE_NAME = 'ycgym';
const DIST_TYPES = Object.keys(DIST_FIELDS);

let cachedRoot: string | undefined;

/** Absolute path of the package root (the nearest ancestor of this module with a package.json named "ycgym"). */
export function packageRoot(): string {
  if (cachedRoot !== undefined) return cachedRoot;
  const start = dirname(fileURLToPath(import.meta.url));
  let dir = start;
  for (;;) {
    const pkgPath = join(dir, 'package.json');
    if (existsSync(pkgPath)) {
      const pkg: unknown = JSON.parse(readFileSync(pkgPath, 'utf8'));
      if (isTable(pkg) && pkg['name'] === PACKAGE_NAME) {
        cachedRoot = dir;
        return dir;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${start}`);
    dir = parent;
  }
}

/** Absolute path of the built-in presets directory. */
export function presetDir(): string {
  return join(packageRoot(), 'presets');
}

/** Absolute path of the preset JSON Schema file. */
export function schemaPath(): string {
  return join(packageRoot(), 'schema', 'preset.schema.json');
}

/** Names of the built-in presets (file names in presets/ without `.toml`), sorted. */
export function listPresets(): string[] {
  return readdirSync(presetDir())
    .filter((f) => f.endsWith('.toml') && f.length > '.toml'.length)
    .map((f) => f.slice(0, -'.toml'.length))
    .sort();
}

/** The preset a built-in preset names with `extends` (null when it has none). */
export function presetBase(name: string): string | null {
  const base = builtinRaw(name)['extends'];
  return typeof base === 'string' ? base : null;
}

/** Load a built-in preset by name, or a TOML file by path, into a validated config (a fresh copy each call). */
export function loadPreset(nameOrPath: string): ExperimentConfig {
  if (isFilePath(nameOrPath)) return loadPresetFile(nameOrPath);
  return structuredClone(builtinConfig(nameOrPath));
}

/** The object-valued sections of an `ExperimentConfig`. */
const CONFIG_SECTIONS = ['agent', 'loop', 'sim', 'world', 'fixes'] as const;

/**
 * The config an episode runs on: `undefined` is the default preset, a name or path is loaded, a config object is
 * validated as the loader validates a preset (`configFromRaw`: the schema's ranges, the rules between
 * fields, defaults filled and derived fields recomputed), so an in-process config cannot reach a state the loader
 * refuses (a `PresetError` naming the problems). A built-in preset comes back as its one shared, deep-frozen config
 * (no copy: every reset of an env or a turn session asks for one, and the world cache recognises the same object
 * without serialising it again); a TOML path is read again on every call, so an edited file takes effect on the next
 * episode; a config object comes back as a deep-frozen validated copy, the same one while the object is unchanged
 * (validated once, then compared with a copy of it as validated, a deep comparison per call, some tens of µs for the default preset: a config changed in place after a
 * reset is validated again and runs its new world, where the world cache, keyed on the object, ran the old one).
 */
export function presetConfig(p: string | ExperimentConfig | undefined): ExperimentConfig {
  if (p === undefined) return builtinConfig('default');
  if (typeof p === 'string') return isFilePath(p) ? known(loadPresetFile(p)) : builtinConfig(p);
  // From JavaScript anything may come: a config must at least have its sections (a RangeError here, not a TypeError
  // from deep inside the simulation).
  const kinds = 'a preset is a built-in preset name, a path to a .toml file, or a config (loadPreset())';
  const v: unknown = p;
  if (v === null || typeof v !== 'object') throw new RangeError(`${kinds}; got ${v === null ? 'null' : typeof v}`);
  if (Array.isArray(v)) throw new RangeError(`${kinds}; got an array`);
  const missing = CONFIG_SECTIONS.filter((k) => {
    const s = (v as Record<string, unknown>)[k];
    return s === null || typeof s !== 'object';
  });
  if (missing.length > 0) throw new RangeError(`${kinds}; got an object without the config's sections ${CONFIG_SECTIONS.join(', ')} (missing: ${missing.join(', ')})`);
  if (validatedConfigs.has(p)) return p;
  const hit = configCopies.get(p);
  if (hit !== undefined && (plainEqual(p, hit.given) ?? isDeepStrictEqual(p, hit.given))) return hit.cfg;
  let given: unknown;
  let validated: ExperimentConfig;
  try {
    given = structuredClone(p);
    validated = configFromRaw(given, IN_PROCESS);
  } catch (err) {
    // structuredClone's DataCloneError (a function, a symbol inside): not a config the loader could have read.
    if (err instanceof PresetError) throw err;
    throw new PresetError(IN_PROCESS, [`not a plain data value: ${(err as Error).message}`]);
  }
  const cfg = known(validated);
  configCopies.set(p, { given, cfg });
  return cfg;
}

/**
 * `isDeepStrictEqual(a, b)` for a `b` of plain data (a `structuredClone` of a config: objects of `Object.prototype`, arrays,
 * primitives) while `a` is plain data too, walked without the general comparison's bookkeeping (most of a reset's cost
 * of a config object that is unchanged): primitives compared with `Object.is`, objects by their own enumerable keys,
 * in the same order. `undefined` where `a` holds anything else (another prototype, a symbol key, an array with holes or
 * extra keys, keys in another order): the caller asks `isDeepStrictEqual` then. `b`'s depth bounds the walk, whatever cycles `a` holds.
 */
function plainEqual(a: unknown, b: unknown): boolean | undefined {
  if (typeof a !== 'object' || a === null) return Object.is(a, b);
  if (typeof b !== 'object' || b === null) return false;
  if (Array.isArray(a)) {
    if (Object.getPrototypeOf(a) !== Array.prototype || !Array.isArray(b) || Object.getPrototypeOf(b) !== Array.prototype) return undefined;
    if (Object.keys(a).length !== a.length || Object.keys(b).length !== b.length || Object.getOwnPropertySymbols(a).length > 0) return undefined;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      const r = plainEqual(a[i], b[i]);
      if (r !== true) return r;
    }
    return true;
  }
  if (Object.getPrototypeOf(a) !== Object.prototype || Array.isArray(b) || Object.getPrototypeOf(b) !== Object.prototype) return undefined;
  // `b`, a structuredClone, has no symbol keys and only enumerable properties.
  if (Object.getOwnPropertySymbols(a).length > 0) return undefined;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  // The same keys in the same order (a config unchanged since its copy was taken) let the values be read in that order,
  // not looked up by key; any other order is left to the general comparison.
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return undefined;
  const va = Object.values(a);
  const vb = Object.values(b);
  if (va.length !== ka.length || vb.length !== kb.length) return undefined;
  for (let i = 0; i < va.length; i++) {
    const r = plainEqual(va[i], vb[i]);
    if (r !== true) return r;
  }
  return true;
}

/**
 * A config read from the outside (a snapshot's), validated as `configFromRaw` validates it, then deep-frozen and known
 * as validated: `Simulation.restore` and `Simulation.create` take it without validating it again.
 */
export function validatedConfigFromRaw(raw: unknown, sourceLabel: string): ExperimentConfig {
  return known(configFromRaw(raw, sourceLabel));
}

/** Deep-freeze a config `configFromRaw` returned and remember it as validated. */
function known(cfg: ExperimentConfig): ExperimentConfig {
  deepFreeze(cfg);
  validatedConfigs.add(cfg);
  return cfg;
}

/** The label of an in-process config in a `PresetError`. */
const IN_PROCESS = 'config';

/** Deep-frozen configs this module validated (the built-in presets, the copies of config objects). */
const validatedConfigs = new WeakSet<object>();

/** Per config object given to `presetConfig`: a copy of it as validated, and the validated config. */
const configCopies = new WeakMap<object, { given: unknown; cfg: ExperimentConfig }>();

// `Simulation.create` and `Simulation.restore` take config objects (no names, no paths) through this one validator.
installConfigValidator((cfg: unknown) => {
  if (typeof cfg !== 'object') throw new RangeError(`a simulation's config is a config object (loadPreset()); got ${typeof cfg}`);
  return presetConfig(cfg as ExperimentConfig);
});

function loadPresetFile(path: string): ExperimentConfig {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new PresetError(path, [`config file not found: ${abs}`]);
  if (statSync(abs).isDirectory()) throw new PresetError(path, [`${abs} is a directory, not a TOML config file`]);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    throw new PresetError(path, [`cannot read ${abs}: ${(e as Error).message}`]);
  }
  const raw = resolveExtends(parseTomlText(text, path), path, builtinRaw, []);
  return configFromRaw(raw, path);
}

/** A built-in preset's validated config: built once, deep-frozen, shared. */
function builtinConfig(name: string): ExperimentConfig {
  let cfg = builtinConfigCache.get(name);
  if (cfg === undefined) {
    const raw = resolveExtends(builtinRaw(name), name, builtinRaw, [name]);
    cfg = known(configFromRaw(raw, name));
    builtinConfigCache.set(name, cfg);
  }
  return cfg;
}

/**
 * Parse, merge and validate preset TOML text; `resolveBase(name)` returns the TOML text of a preset named by `extends`.
 * `sourceLabel` names the text in error messages.
 */
export function loadPresetFromText(
  text: string,
  sourceLabel: string,
  resolveBase: (name: string) => string,
): ExperimentConfig {
  const getBase = (name: string): Table => parseTomlText(resolveBase(name), name);
  const raw = resolveExtends(parseTomlText(text, sourceLabel), sourceLabel, getBase, []);
  return configFromRaw(raw, sourceLabel);
}

/** Validate an already merged raw preset object (one with `extends` is rejected), fill defaults and derive parameters. */
export function configFromRaw(raw: unknown, sourceLabel: string): ExperimentConfig {
  if (isTable(raw) && Object.hasOwn(raw, 'extends')) {
    throw new PresetError(sourceLabel, ['/extends: not resolved here; use loadPreset or loadPresetFromText']);
  }
  // ajv fills defaults in place, so never let it touch the caller's (or a cached) object.
  const data: unknown = structuredClone(raw);
  const validate = presetValidator();
  if (!validate(data)) {
    const issues = formatAjvErrors(validate.errors ?? []);
    throw new PresetError(sourceLabel, issues.length > 0 ? issues : ['invalid preset']);
  }
  const { world: rawWorld, ...rest } = data;

  let world: WorldConfig;
  try {
    world = deriveWorld(rawWorld);
  } catch (err) {
    if (err instanceof RangeError) throw new PresetError(sourceLabel, [err.message]);
    throw err;
  }

  // Same check, same order and same message as the reference's _salary_shares_sum_to_one.
  const total = salaryShareTotal(world);
  if (Math.abs(total - 1.0) > 1e-6) {
    throw new PresetError(sourceLabel, [
      `/world: salary tier shares must sum to 1.0, got ${formatFixedPy(total, 6)}`,
    ]);
  }

  const ordered = orderIssues(world);
  // The deadline rule reads the workday's length and the distributions' bounds: only once they are in order.
  const order = [...ordered, ...(ordered.length === 0 ? deadlineIssues(world) : []), ...simIssues(rest.sim)];
  if (order.length > 0) throw new PresetError(sourceLabel, order);

  return {
    name: rest.name,
    description: rest.description,
    agent: rest.agent,
    loop: rest.loop,
    sim: rest.sim,
    world,
    fixes: rest.fixes,
  };
}

// ---------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------

/**
 * The rules between fields that JSON Schema cannot state (presets/README.md, Ranges): every bound pair in order (a
 * trust_min above trust_max made trust / trust_max exceed 1: NaN trust or an overflow in the gain's power), each
 * trust_max that keeps trust, rounded to 3 decimals, at most itself; each
 * triangular's mode between its bounds (else its `c` is out of [0, 1] and, with close bounds, infinite: a client
 * multiplier of Infinity gave NaN rewards), and a workday that ends after it starts (a deadline is business days times
 * its length: a negative span, which the calendar refuses).
 */
function orderIssues(w: WorldConfig): string[] {
  const issues: string[] = [];
  const atLeast = (path: string, lowName: string, low: number, highName: string, high: number): void => {
    if (!(high >= low)) issues.push(`${path}/${highName}: must be at least ${lowName} (${low}), got ${high}`);
  };
  const between = (path: string, names: [string, string, string], low: number, mode: number, high: number): void => {
    if (!(low <= mode && mode <= high)) issues.push(`${path}/${names[1]}: must lie between ${names[0]} (${low}) and ${names[2]} (${high}), got ${mode}`);
  };
  atLeast('/world', 'prestige_min', w.prestige_min, 'prestige_max', w.prestige_max);
  atLeast('/world', 'trust_min', w.trust_min, 'trust_max', w.trust_max);
  // Trust is kept to 3 decimals: a trust_max that rounds up there let trust (capped at trust_max, then rounded) exceed
  // it, and the next success's gain raised 1 - trust/trust_max < 0 to a fractional power (an internal error).
  const tmax = pyRound(w.trust_max, 3);
  if (tmax > w.trust_max) issues.push(`/world/trust_max: trust is kept to 3 decimals and ${w.trust_max} rounds up to ${tmax}, above itself; give it at most 3 decimals`);
  between('/world', ['client_reward_mult_low', 'client_reward_mult_mode', 'client_reward_mult_high'], w.client_reward_mult_low, w.client_reward_mult_mode, w.client_reward_mult_high);
  for (const tier of ['salary_junior', 'salary_mid', 'salary_senior'] as const) {
    const t = w[tier];
    atLeast(`/world/${tier}`, 'min_cents', t.min_cents, 'max_cents', t.max_cents);
    atLeast(`/world/${tier}`, 'rate_min', t.rate_min, 'rate_max', t.rate_max);
  }
  for (const [name, d] of Object.entries(w.dist)) {
    const path = `/world/dist/${name}`;
    if (d.type === 'triangular') between(path, ['low', 'mode', 'high'], d.low, d.mode, d.high);
    else if (d.type !== 'constant') atLeast(path, 'low', d.low, 'high', d.high);
  }
  if (!(w.workday_end_hour > w.workday_start_hour)) issues.push(`/world/workday_end_hour: must be greater than workday_start_hour (${w.workday_start_hour}), got ${w.workday_end_hour}`);
  return issues;
}

/**
 * Every deadline a config can give must stay an exact instant (at most 2**53 - 1 µs, 2255-06-05) from the latest run
 * end any start date and horizon can have (reset options may choose them: 100 years from the last start date). The
 * schema's ranges alone allowed a deadline in year ~9650 (required prestige 100 × prestige_qty_scale 2 × 100,000 units
 * at deadline_qty_per_day 10: inexact times), and past year 9999 with a 24-hour workday (the accept was an internal
 * error that closed a server's session). Shipped presets are thousands of times below the bound.
 */
function deadlineIssues(w: WorldConfig): string[] {
  const d = latestDeadline(w);
  if (d.hours <= d.maxHours) return [];
  const lastExact = isoformat(LAST_EXACT_INSTANT).slice(0, 10);
  const runEnd = isoformat(LATEST_RUN_END).slice(0, 10);
  return [
    `/world/deadline_qty_per_day: a task's deadline can be ${d.days} business days of ${d.span} hours (${d.hours} business hours) after its acceptance, ` +
      `max(deadline_min_biz_days ${w.deadline_min_biz_days}, int(${d.maxQty} units / deadline_qty_per_day ${w.deadline_qty_per_day})) days of workday_end_hour ${w.workday_end_hour} - workday_start_hour ${w.workday_start_hour} hours, ` +
      `with up to ${d.maxQty} units of a domain (required_qty's largest draw ${d.qty} × (1 + prestige_qty_scale ${w.prestige_qty_scale} × (required_prestige's largest draw ${d.prestige} - 1)), at least 200); ` +
      `at most ${d.maxHours} business hours after the latest run end (${runEnd}: ${LAST_START_DATE} plus ${MAX_HORIZON_YEARS} years) keep a deadline an exact microsecond, by ${lastExact}: ` +
      `raise deadline_qty_per_day or lower the others`,
  ];
}

/**
 * The run a `[sim]` table describes must be one `Simulation.create` can start: a start date in its range whose horizon
 * has an image (else a preset loaded, or a turn snapshot restored, and the run failed only when created: at reset, or
 * at a turn session's restart after a bankruptcy, which closed the session as `internal`).
 */
function simIssues(sim: ExperimentConfig['sim']): string[] {
  try {
    runBounds(sim.start_date, sim.horizon_years);
    return [];
  } catch (err) {
    if (err instanceof RangeError) return [`/sim/start_date: ${err.message}`];
    throw err;
  }
}

const builtinRawCache = new Map<string, Table>();
const builtinConfigCache = new Map<string, ExperimentConfig>();

/** Python's `Path(p).suffix == ".toml" or os.sep in p or "/" in p`. */
function isFilePath(nameOrPath: string): boolean {
  return extname(nameOrPath) === '.toml' || nameOrPath.includes(sep) || nameOrPath.includes('/');
}

/** Parsed (deep-frozen, cached) TOML of a built-in preset; unknown names list the available presets. */
function builtinRaw(name: string): Table {
  const hit = builtinRawCache.get(name);
  if (hit !== undefined) return hit;
  const available = listPresets();
  if (!available.includes(name)) {
    const list = `[${available.map((n) => `'${n}'`).join(', ')}]`;
    throw new PresetError(name, [
      `Unknown preset '${name}'. Available presets: ${list}. Pass a file path ending in .toml for a custom config.`,
    ]);
  }
  const table = deepFreeze(parseTomlText(readFileSync(join(presetDir(), `${name}.toml`), 'utf8'), name));
  builtinRawCache.set(name, table);
  return table;
}

/** Parse TOML text into a table, turning syntax errors into PresetErrors. */
function parseTomlText(text: string, label: string): Table {
  try {
    return parseToml(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    throw new PresetError(label, [`TOML syntax error: ${msg}`]);
  }
}

/** Merge the `extends` chain of `raw` (resolving bases with `getBase`), detecting cycles; `chain` holds the names visited. */
function resolveExtends(
  raw: Table,
  label: string,
  getBase: (name: string) => Table,
  chain: readonly string[],
): Table {
  if (!Object.hasOwn(raw, 'extends')) return raw;
  const baseName = raw['extends'];
  if (typeof baseName !== 'string') throw new PresetError(label, ['/extends: must be string']);
  if (chain.includes(baseName)) {
    throw new PresetError(label, [`extends cycle: ${[...chain, baseName].join(' -> ')}`]);
  }
  const base = resolveExtends(getBase(baseName), baseName, getBase, [...chain, baseName]);
  const own: Table = {};
  for (const [key, value] of Object.entries(raw)) if (key !== 'extends') setOwn(own, key, value);
  return deepMerge(base, own);
}

/**
 * The reference's `_deep_merge`: a new table with `override` on top of `base`, tables merged recursively.
 *
 * One refinement keeps strict key checking usable: when a file switches a `world.dist.*` spec
 * to another family, the base's parameters that the new family does not have are dropped
 * (pydantic ignores them silently; here they would be "unknown key" errors). Parameters the new
 * family does have are still inherited, exactly as in the reference.
 */
function deepMerge(base: Table, override: Table, path: readonly string[] = []): Table {
  const out: Table = {};
  for (const [key, value] of Object.entries(familyCompatible(base, override, path))) setOwn(out, key, value);
  for (const [key, value] of Object.entries(override)) {
    const prev = Object.hasOwn(out, key) ? out[key] : undefined;
    setOwn(out, key, isTable(prev) && isTable(value) ? deepMerge(prev, value, [...path, key]) : value);
  }
  return out;
}

/** For a `world.dist.<name>` spec whose family the override changes, the base without the old family's extra keys. */
function familyCompatible(base: Table, override: Table, path: readonly string[]): Table {
  if (path.length !== 3 || path[0] !== 'world' || path[1] !== 'dist') return base;
  const newType = override['type'];
  if (typeof newType !== 'string' || newType === base['type'] || !Object.hasOwn(DIST_FIELDS, newType)) return base;
  const allowed = DIST_FIELDS[newType as DistType];
  const kept: Table = {};
  for (const [key, value] of Object.entries(base)) if (allowed.includes(key)) setOwn(kept, key, value);
  return kept;
}

/** Define an own data property (safe even for a key named `__proto__`). */
function setOwn(obj: Table, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A TOML table: a non-null, non-array, non-date object. */
function isTable(v: unknown): v is Table {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/**
 * The preset schema's validator (defaults filled in, strict numbers, discriminated unions): ajv's standalone code,
 * generated ahead of time from schema/preset.schema.json by scripts/gen/validators.ts (no schema compile at start).
 */
function presetValidator(): ValidateFunction<ValidatedRaw> {
  return validatePreset as unknown as ValidateFunction<ValidatedRaw>;
}

/** Escape one JSON-pointer segment. */
function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Render one ajv error as `<json pointer>: <problem>`. */
function formatAjvError(e: ErrorObject): string {
  const params: Record<string, unknown> = e.params;
  const at = (path: string): string => (path === '' ? '/' : path);
  const expected = DIST_TYPES.map((t) => JSON.stringify(t)).join(', ');
  switch (e.keyword) {
    case 'additionalProperties':
      return `${e.instancePath}/${pointerSegment(String(params['additionalProperty']))}: unknown key`;
    case 'discriminator': {
      const tag = String(params['tag']);
      if (params['error'] === 'tag') return `${e.instancePath}/${tag}: must be a string, one of ${expected}`;
      return `${e.instancePath}/${tag}: unknown distribution type ${JSON.stringify(params['tagValue'])}; expected one of ${expected}`;
    }
    case 'const':
      return `${at(e.instancePath)}: must be ${JSON.stringify(params['allowedValue'])}`;
    default:
      return `${at(e.instancePath)}: ${e.message ?? `failed ${e.keyword}`}`;
  }
}

/**
 * Render all ajv errors: unknown keys first (a typo also shows up as a missing key), missing
 * keys of one table grouped into one issue, everything else in ajv's order, duplicates dropped.
 */
function formatAjvErrors(errors: readonly ErrorObject[]): string[] {
  const unknown: string[] = [];
  // Entries are either finished messages or the path of a table whose missing keys are grouped.
  const ordered: Array<{ text: string } | { missingAt: string }> = [];
  const missing = new Map<string, string[]>();
  for (const e of errors) {
    if (e.keyword === 'additionalProperties') {
      unknown.push(formatAjvError(e));
    } else if (e.keyword === 'required') {
      const params: Record<string, unknown> = e.params;
      let keys = missing.get(e.instancePath);
      if (keys === undefined) {
        keys = [];
        missing.set(e.instancePath, keys);
        ordered.push({ missingAt: e.instancePath });
      }
      keys.push(String(params['missingProperty']));
    } else {
      ordered.push({ text: formatAjvError(e) });
    }
  }
  const rendered = ordered.map((entry) => {
    if ('text' in entry) return entry.text;
    const path = entry.missingAt;
    const keys = missing.get(path) ?? [];
    const [only] = keys;
    if (keys.length === 1 && only !== undefined) return `${path}/${pointerSegment(only)}: missing required key`;
    return `${path === '' ? '/' : path}: missing required keys: ${keys.join(', ')}`;
  });
  return [...new Set([...unknown, ...rendered])];
}

/** Freeze an object graph in place and return it. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
