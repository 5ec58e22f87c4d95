/**
 * Column layout of the trajectory and episode tables (see docs/trajectories.md): one definition drives the row
 * builders, the Arrow and Parquet schemas (./schema.ts), the generated Python schema, the tests and the
 * documentation. No Arrow import here: bulk-run worker threads build rows with ./table-builder.ts and never load
 * apache-arrow.
 */
import type { TextSink } from '../sim/index.js';

/** Physical kinds of a single value (plain Utf8 strings: no dictionary encoding anywhere). */
export type ScalarKind = 'utf8' | 'int32' | 'int64' | 'float64' | 'bool' | 'timestamp_us';

/**
 * Column kinds: a scalar, or `list_struct`: a list of structs whose fields (`ColumnDef.fields`, never null) are
 * scalars. Arrow type `List<Struct<...>>` with a non-null item field named `item`, which Arrow IPC, Parquet,
 * pyarrow, polars and DuckDB all read (a `Map` is not one polars reads as such).
 */
export type ColumnKind = ScalarKind | 'list_struct';

/** One field of a `list_struct` column's structs (not nullable). */
export interface StructFieldDef {
  readonly name: string;
  readonly kind: ScalarKind;
}

/** One column. */
export interface ColumnDef {
  readonly name: string;
  readonly kind: ColumnKind;
  readonly nullable: boolean;
  readonly doc: string;
  /** `list_struct` only: the fields of the structs, in order. */
  readonly fields?: readonly StructFieldDef[];
}

/** Schema version written into the metadata of every file (`ycgym.schema_version`). */
export const SCHEMA_VERSION = '3';

/** Columns of the step table: one row per observation, the initial one included (N+1 rows per episode). */
export const STEP_COLUMNS: readonly ColumnDef[] = [
  { name: 'run_id', kind: 'utf8', nullable: false, doc: 'Identifier of the run (bulk run or recording) the episode belongs to.' },
  { name: 'episode_id', kind: 'int64', nullable: false, doc: 'Episode number within the run: the index in (policy, seed) order in bulk runs, the recording order when recorded by the server.' },
  { name: 'policy', kind: 'utf8', nullable: false, doc: 'Policy name (bulk runs) or the recorder\'s agent label.' },
  { name: 'preset', kind: 'utf8', nullable: false, doc: 'Preset name.' },
  { name: 'seed', kind: 'int64', nullable: false, doc: 'Episode seed.' },
  { name: 'step', kind: 'int64', nullable: false, doc: 'Number of actions taken before this observation (0 on the initial row).' },
  { name: 'action', kind: 'utf8', nullable: true, doc: 'The command that produced this observation; null on the initial row.' },
  { name: 'observation_text', kind: 'utf8', nullable: false, doc: 'Exact CLI stdout of the command (empty on the initial row).' },
  { name: 'ok', kind: 'bool', nullable: false, doc: 'The command was accepted and applied (true on the initial row).' },
  { name: 'exit_code', kind: 'int32', nullable: false, doc: 'Exit code: 0 ok, 1 rejected, 2 usage error.' },
  { name: 'command', kind: 'utf8', nullable: true, doc: 'Recognised verb (`task accept`), null when unrecognised and on the initial row.' },
  { name: 'sim_time', kind: 'timestamp_us', nullable: false, doc: 'Simulation time after the step (naive, microseconds).' },
  { name: 'funds_cents', kind: 'int64', nullable: false, doc: 'Company funds after the step, cents.' },
  { name: 'monthly_payroll_cents', kind: 'int64', nullable: false, doc: 'Monthly payroll after the step, cents.' },
  { name: 'runway_months', kind: 'float64', nullable: true, doc: 'funds / payroll rounded to 2 decimals; null when payroll is 0.' },
  { name: 'prestige_research', kind: 'float64', nullable: false, doc: 'Prestige level in research.' },
  { name: 'prestige_inference', kind: 'float64', nullable: false, doc: 'Prestige level in inference.' },
  { name: 'prestige_data_environment', kind: 'float64', nullable: false, doc: 'Prestige level in data_environment.' },
  { name: 'prestige_training', kind: 'float64', nullable: false, doc: 'Prestige level in training.' },
  { name: 'active_tasks', kind: 'int32', nullable: false, doc: 'Owned tasks in status active.' },
  { name: 'planned_tasks', kind: 'int32', nullable: false, doc: 'Owned tasks in status planned.' },
  { name: 'completed_tasks', kind: 'int32', nullable: false, doc: 'Owned tasks completed (success or failure).' },
  { name: 'reward', kind: 'float64', nullable: false, doc: 'Change in funds caused by the action, dollars (0 on the initial row).' },
  { name: 'reward_cents', kind: 'int64', nullable: false, doc: 'The same change, exact cents.' },
  { name: 'terminated', kind: 'bool', nullable: false, doc: 'Funds negative or horizon reached after this step.' },
  { name: 'truncated', kind: 'bool', nullable: false, doc: 'The episode ended here without terminating (max steps, the policy stopped, or the session ended).' },
  { name: 'is_first', kind: 'bool', nullable: false, doc: 'Initial row of the episode.' },
  { name: 'is_last', kind: 'bool', nullable: false, doc: 'Last row of the episode.' },
  { name: 'sim_day', kind: 'float64', nullable: false, doc: 'Days since the episode started (fractional; the `sim_day` of the Python observation). Added in schema version 2.' },
  { name: 'days_left', kind: 'float64', nullable: false, doc: 'Days until the horizon end (fractional, <= 0 once reached; the `days_left` of the Python observation). Added in schema version 2.' },
  {
    name: 'trust',
    kind: 'list_struct',
    nullable: false,
    doc: 'Trust of every client after the step, one `{client, trust}` struct per client in client-name order (the `trust` of the observation\'s status block and of the Python `info["status"]`). Added in schema version 3.',
    fields: [
      { name: 'client', kind: 'utf8' },
      { name: 'trust', kind: 'float64' },
    ],
  },
];

/** Columns of the episode table: one row per episode. */
export const EPISODE_COLUMNS: readonly ColumnDef[] = [
  { name: 'run_id', kind: 'utf8', nullable: false, doc: 'Run identifier (as in the step table).' },
  { name: 'episode_id', kind: 'int64', nullable: false, doc: 'Episode number (as in the step table).' },
  { name: 'seed', kind: 'int64', nullable: false, doc: 'Episode seed.' },
  { name: 'policy', kind: 'utf8', nullable: false, doc: 'Policy name.' },
  { name: 'preset', kind: 'utf8', nullable: false, doc: 'Preset name.' },
  { name: 'final_funds_cents', kind: 'int64', nullable: false, doc: 'Funds at the end of the episode, cents.' },
  { name: 'outcome', kind: 'utf8', nullable: false, doc: '`horizon_end`, `bankruptcy` or `truncated`.' },
  { name: 'steps', kind: 'int32', nullable: false, doc: 'Number of actions (the step table has steps + 1 rows for the episode).' },
  { name: 'tasks_succeeded', kind: 'int32', nullable: false, doc: 'Tasks completed before their deadline.' },
  { name: 'tasks_failed', kind: 'int32', nullable: false, doc: 'Tasks completed after their deadline.' },
  { name: 'accepted_from_adversarial', kind: 'int32', nullable: false, doc: 'Accepted tasks whose client is adversarial (loyalty < -0.3; known to the harness, not to the policy).' },
  { name: 'accepted_total', kind: 'int32', nullable: false, doc: 'Accepted tasks.' },
];

/** A text that appends itself, as UTF-8, to a utf8 column's bytes (`TableBuilder.append`), when the row is appended. */
export interface TextSource {
  appendText(sink: TextSink): void;
}

/** One row of the step table. */
export interface StepRow {
  run_id: string;
  episode_id: number;
  policy: string;
  preset: string;
  seed: number;
  step: number;
  action: string | null;
  /**
   * The text, its UTF-8 bytes (the row builder copies them), or a source that appends them to the builder's bytes (the
   * exporter renders the text straight into the column, without a string).
   */
  observation_text: string | Uint8Array | TextSource;
  ok: boolean;
  exit_code: number;
  command: string | null;
  /** µs since 1970-01-01 (naive simulation time). */
  sim_time: number;
  funds_cents: number;
  monthly_payroll_cents: number;
  runway_months: number | null;
  prestige_research: number;
  prestige_inference: number;
  prestige_data_environment: number;
  prestige_training: number;
  active_tasks: number;
  planned_tasks: number;
  completed_tasks: number;
  reward: number;
  reward_cents: number;
  terminated: boolean;
  truncated: boolean;
  is_first: boolean;
  is_last: boolean;
  sim_day: number;
  days_left: number;
  /**
   * Client name -> trust, keys in client-name order (the status block's `trust`); a `list_struct` column also
   * takes an array of `{client, trust}` objects.
   */
  trust: Readonly<Record<string, number>> | readonly { client: string; trust: number }[];
}

/** How an episode ended. */
export type Outcome = 'horizon_end' | 'bankruptcy' | 'truncated';

/** One row of the episode table. */
export interface EpisodeRow {
  run_id: string;
  episode_id: number;
  seed: number;
  policy: string;
  preset: string;
  final_funds_cents: number;
  outcome: Outcome;
  steps: number;
  tasks_succeeded: number;
  tasks_failed: number;
  accepted_from_adversarial: number;
  accepted_total: number;
}

/**
 * Fractional days from instant `b` to instant `a` (µs), computed as Python's
 * `(td.days * 86400 + td.seconds + td.microseconds / 1e6) / 86400.0` of `a - b` (the Python observation's
 * `sim_day` and `days_left`), bit for bit.
 */
export function daysBetween(aUs: number, bUs: number): number {
  const d = aUs - bUs;
  const secs = Math.floor(d / 1e6);
  return (secs + (d - secs * 1e6) / 1e6) / 86400;
}

/** Parse the simulation's `YYYY-MM-DDTHH:MM:SS[.ffffff]` to µs since epoch (NaN when malformed). */
export function isoToMicros(s: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(s);
  if (!m) return NaN;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return ms * 1000 + (m[7] ? Number(m[7].padEnd(6, '0')) : 0);
}
