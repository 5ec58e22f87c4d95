/**
 * The table file formats and the body compressions of Arrow IPC files, apart from the writers (./arrow.ts,
 * ./parquet.ts) so that the CLI's options and the server can name them without loading Arrow: `ycgym serve` loads the
 * writer only when it records, the CLI only when a command writes or reads tables.
 */

/** File formats of the step and episode tables (also the files' extension). */
export const TABLE_FORMATS = ['arrow', 'parquet'] as const;
/** A file format of the step and episode tables. */
export type TableFormat = (typeof TABLE_FORMATS)[number];

/** Body compression of an Arrow IPC file: zstd per buffer (Arrow's `BodyCompression`), or none. */
export type ArrowCompression = 'zstd' | 'none';
export const ARROW_COMPRESSIONS: readonly ArrowCompression[] = ['zstd', 'none'];

/** `value` as an `ArrowCompression`, else a RangeError naming `what` and the codecs available. */
export function arrowCompression(value: unknown, what = 'compression'): ArrowCompression {
  if (!ARROW_COMPRESSIONS.includes(value as ArrowCompression)) throw new RangeError(`unknown ${what} ${JSON.stringify(value)} (available: ${ARROW_COMPRESSIONS.join(', ')})`);
  return value as ArrowCompression;
}
