/**
 * Reading ycgym's trajectory files in TypeScript (package entry `ycgym/arrow`). `ycgym run` writes Arrow IPC files
 * whose buffers are zstd-compressed (the Arrow format's `BodyCompression`); Arrow JS reads those only with a ZSTD
 * codec registered. Importing this entry registers one with apache-arrow (the copy this package resolves, which is
 * the application's own when their versions agree), so `tableFromIPC` reads the files as well as `readArrowFile`.
 * The Parquet files of `--format parquet` are read with parquet-wasm, loaded on first use.
 */
export { readArrowFile } from './export/arrow.js';
export { readParquetBatches, readParquetFile } from './export/parquet.js';
export { EPISODE_SCHEMA, STEP_SCHEMA } from './export/schema.js';
