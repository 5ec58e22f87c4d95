/**
 * Arrow schemas of the trajectory and episode tables, from the one column layout of ./columns.ts (re-exported).
 */
import { Bool, Field, Float64, Int32, Int64, List, Schema, Struct, TimestampMicrosecond, Utf8, type DataType } from 'apache-arrow';
import { EPISODE_COLUMNS, SCHEMA_VERSION, STEP_COLUMNS, type ColumnDef, type ScalarKind } from './columns.js';

export * from './columns.js';

/** The Arrow type of a column: the item field of a `list_struct` list is named `item` and is not nullable. */
export function columnType(c: Pick<ColumnDef, 'name' | 'kind' | 'fields'>): DataType {
  if (c.kind !== 'list_struct') return arrowType(c.kind);
  if (!c.fields || c.fields.length === 0) throw new Error(`list_struct column ${c.name} has no fields`);
  return new List(new Field('item', new Struct(c.fields.map((f) => new Field(f.name, arrowType(f.kind), false))), false));
}

function arrowType(kind: ScalarKind): DataType {
  switch (kind) {
    case 'utf8':
      return new Utf8();
    case 'int32':
      return new Int32();
    case 'int64':
      return new Int64();
    case 'float64':
      return new Float64();
    case 'bool':
      return new Bool();
    case 'timestamp_us':
      return new TimestampMicrosecond();
  }
}

/** Arrow schema of a column list, tagged with the format version and the table name. */
export function arrowSchema(cols: readonly ColumnDef[], table: 'steps' | 'episodes'): Schema {
  const meta = new Map<string, string>([
    ['ycgym.schema', table],
    ['ycgym.schema_version', SCHEMA_VERSION],
  ]);
  return new Schema(
    cols.map((c) => new Field(c.name, columnType(c), c.nullable)),
    meta,
  );
}

/** Arrow schema of the step table. */
export const STEP_SCHEMA: Schema = arrowSchema(STEP_COLUMNS, 'steps');
/** Arrow schema of the episode table. */
export const EPISODE_SCHEMA: Schema = arrowSchema(EPISODE_COLUMNS, 'episodes');
