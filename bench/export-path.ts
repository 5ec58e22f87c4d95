/**
 * The trajectory export path of a bulk run alone, in process: CPU µs per greedy episode (about 300 step rows, 1.6 MB
 * of observation text) for each part a bulk run adds to playing the episode:
 * - `record`: appending the episode's step rows to a row builder and packing them into a worker's shared slot
 *   (`TableBuilder.pack`, or `finish` + `packTable` in builds without it): a worker thread's part;
 * - `write_zstd`, `write_plain`: writing the episode's step table to an Arrow IPC file, zstd-compressed or plain: the
 *   main thread's part;
 * - `write_parquet`: the same to a Parquet file (queued, drained and closed with the sink);
 * - `record_body`: a worker thread's part in builds whose workers hand Arrow rows over as record batch bodies: appending
 *   the rows, then the episode's zstd-compressed record batch body (`TableBuilder.consume`, ./src/export/ipc-body.ts)
 *   copied into a slot (null for builds without `consume`);
 * - `write_body`: the main thread's part then: writing those bodies, already compressed, to an Arrow IPC file (null for
 *   builds without `ArrowFileSink.writeBody`). `1e6 / write_*_cpu_us` is the most episodes per second one writer thread
 *   takes, whatever the number of workers.
 * The rows are recorded once (greedy, seeds from 100; `text_bytes`: their observation texts' UTF-8 bytes) and fed to
 * every part; files go to a temporary folder; a full garbage collection precedes every timed round.
 *
 * With `--against DIR` (another checkout, built) both builds run in this one process, rounds alternating, and each
 * speedup is the median of the per-round ratios, so load on the machine hits both alike.
 *
 *   npm run build && node dist/bench/export-path.js [--rounds 9] [--episodes 10] [--parts record,write_zstd,write_plain,write_parquet,record_body,write_body] [--against ../other-checkout]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { flagValue, median, medianPairRatio } from './harness.js';

const PARTS = ['record', 'write_zstd', 'write_plain', 'write_parquet', 'record_body', 'write_body'] as const;

// A full garbage collection before each timed round, so that no round pays for the garbage of the one before.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;
type Part = (typeof PARTS)[number];

/** What this bench uses of a build's table builder and sinks (any build since trajectories had a row builder). */
interface Builder {
  append(row: object): void;
  finish(): unknown;
  pack?(into: Uint8Array): unknown;
  consume?<T>(use: (t: unknown) => T): T;
}
/** A record batch body (./src/export/ipc-body.ts). */
interface Body {
  length: number;
  nodes: number[];
  regions: number[];
  byteLength: number;
  chunks: Uint8Array[];
}
interface ExportModules {
  stepBuilder(): Builder;
  packTable(t: unknown, into: Uint8Array): unknown;
  stepSink(path: string, compression?: string): { writeBuffers(t: unknown): void; writeBody?(b: Body, compression: string): void; close(): void };
  recordBatchBody: ((columns: unknown, t: unknown, compress: ((d: Uint8Array) => Uint8Array) | null) => Body | null) | undefined;
  stepColumns: unknown;
  /** zstd at the files' level, as a worker compresses. */
  compress(): Promise<(d: Uint8Array) => Uint8Array>;
  stepParquetSink(path: string): { writeBuffers(t: unknown): void; drain(): Promise<void>; close(): Promise<void> };
  zstdEncoder(): Promise<void>;
}

async function modules(root: string): Promise<ExportModules> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const [arrow, builder, parquet, zstd, body, columns] = await Promise.all(
    ['src/export/arrow.js', 'src/export/table-builder.js', 'src/export/parquet.js', 'src/export/zstd.js', 'src/export/ipc-body.js', 'src/export/columns.js'].map((p) => load(p).catch(() => ({}))),
  );
  const compress = async (): Promise<(d: Uint8Array) => Uint8Array> => {
    const c = zstd.directCompressor(await zstd.loadZstdLibrary());
    // The files' level (builds before ZSTD_LEVEL was exported used 1).
    const level: number = zstd.ZSTD_LEVEL ?? 1;
    return (d) => c.compress(d, level);
  };
  return {
    stepBuilder: builder.stepBuilder,
    packTable: builder.packTable,
    stepSink: arrow.stepSink,
    stepParquetSink: parquet.stepParquetSink,
    zstdEncoder: zstd.zstdEncoder,
    recordBatchBody: body.recordBatchBody,
    stepColumns: columns.STEP_COLUMNS,
    compress,
  };
}

/**
 * A row's text as its UTF-8 bytes, a copy: the exporter hands the builder a source that appends the text to the
 * builder's bytes when the row is appended (a view of bytes it reuses in earlier builds, a string in the first ones).
 */
function textBytes(text: unknown): unknown {
  if (text instanceof Uint8Array) return text.slice();
  if (text === null || typeof text !== 'object' || !('appendText' in text)) return text;
  const sink = {
    bytes: Buffer.alloc(1024),
    used: 0,
    string(s: string): void {
      this.bytes = Buffer.concat([this.bytes.subarray(0, this.used), Buffer.from(s, 'utf8')]);
      this.used = this.bytes.length;
    },
  };
  (text as { appendText(sink: object): void }).appendText(sink);
  return sink.bytes.slice(0, sink.used);
}

/** Step rows of `n` greedy episodes as the exporter appends them (observation texts as their UTF-8 bytes). */
async function recordRows(root: string, n: number): Promise<object[][]> {
  const load = (p: string) => import(pathToFileURL(join(root, 'dist', p)).href);
  const [{ loadPreset }, { rollout }, { GreedyPolicy }] = await Promise.all([load('src/config/load.js'), load('src/export/rollout.js'), load('baselines/greedy.js')]);
  const cfg = loadPreset('default');
  const episodes: object[][] = [];
  for (let seed = 100; seed < 100 + n; seed++) {
    const rows: object[] = [];
    // A stand-in builder keeping copies of the rows, texts as their UTF-8 bytes.
    const keep = {
      append: (r: Record<string, unknown>) => {
        rows.push({ ...r, observation_text: textBytes(r['observation_text']) });
      },
      get length() {
        return rows.length;
      },
      setBool: (row: number, column: string, v: boolean) => {
        (rows[row] as Record<string, unknown>)[column] = v;
      },
    };
    rollout(cfg, new GreedyPolicy(), { runId: 'run-bench', episodeId: seed, policy: 'greedy', preset: 'default', seed }, { steps: keep });
    episodes.push(rows);
  }
  return episodes;
}

/** Copy a body's chunks into `into` from offset 0 (a worker's slot); returns the bytes copied. */
function copyChunks(body: Body, into: Uint8Array): number {
  let at = 0;
  for (const c of body.chunks) {
    into.set(c, at);
    at += c.byteLength;
  }
  return at;
}

/** CPU µs per episode of one part, for one build (null: a part this build does not have). */
async function part(m: ExportModules, p: Part, episodes: object[][], tables: unknown[], dir: string): Promise<(() => Promise<number>) | null> {
  await m.zstdEncoder();
  const arena = new Uint8Array(new SharedArrayBuffer(1 << 25));
  const b = m.stepBuilder();
  const toBody = m.recordBatchBody;
  if (p === 'record_body' || p === 'write_body') {
    const probe = m.stepSink(join(dir, 'probe.arrow'));
    probe.close();
    if (toBody === undefined || b.consume === undefined || probe.writeBody === undefined) return null;
  }
  const compress = await m.compress();
  // The bodies a worker hands over (for write_body): compressed, each in one buffer, as the main thread receives them.
  const bodies =
    p === 'write_body'
      ? tables.map((t) => {
          const body = (toBody as NonNullable<typeof toBody>)(m.stepColumns, t, compress) as Body;
          const bytes = new Uint8Array(body.byteLength);
          copyChunks(body, bytes);
          return { ...body, chunks: [bytes] };
        })
      : [];
  const cpu = (): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  return async () => {
    const c = cpu();
    if (p === 'record') {
      for (const rows of episodes) {
        for (const r of rows) b.append(r);
        if (b.pack) b.pack(arena);
        else m.packTable(b.finish(), arena);
      }
    } else if (p === 'record_body') {
      const consume = b.consume as NonNullable<Builder['consume']>;
      for (const rows of episodes) {
        for (const r of rows) b.append(r);
        consume.call(b, (t) => copyChunks((toBody as NonNullable<typeof toBody>)(m.stepColumns, t, compress) as Body, arena));
      }
    } else if (p === 'write_body') {
      const s = m.stepSink(join(dir, 'steps.arrow'), 'zstd');
      for (const body of bodies) (s.writeBody as NonNullable<typeof s.writeBody>)(body, 'zstd');
      s.close();
    } else if (p === 'write_parquet') {
      const s = m.stepParquetSink(join(dir, 'steps.parquet'));
      for (const t of tables) s.writeBuffers(t);
      await s.close();
    } else {
      const s = m.stepSink(join(dir, 'steps.arrow'), p === 'write_zstd' ? 'zstd' : 'none');
      for (const t of tables) s.writeBuffers(t);
      s.close();
    }
    return (cpu() - c) / episodes.length;
  };
}

/** Per part: CPU µs per episode of this build (and the other's, with the median ratio of paired rounds). */
export async function exportPathBench(rounds: number, n: number, parts: readonly Part[], against: string | null): Promise<Record<string, number | string | null>> {
  const root = resolve(new URL('../..', import.meta.url).pathname);
  const here = await modules(root);
  const other = against !== null ? await modules(resolve(against)) : null;
  const episodes = await recordRows(root, n);
  const tables = episodes.map((rows) => {
    const b = here.stepBuilder();
    for (const r of rows) b.append(r);
    return b.finish();
  });
  const dir = mkdtempSync(join(tmpdir(), 'ycgym-export-path-'));
  const textBytes = episodes.reduce((k, e) => k + e.reduce((m, r) => m + ((r as { observation_text: Uint8Array }).observation_text.byteLength ?? 0), 0), 0);
  const out: Record<string, number | string | null> = { rounds, episodes: n, rows: episodes.reduce((k, e) => k + e.length, 0), text_bytes: textBytes };
  try {
    for (const p of parts) {
      const h = await part(here, p, episodes, tables, dir);
      const o = other ? await part(other, p, episodes, tables, dir) : null;
      if (h === null) {
        out[`${p}_cpu_us`] = null;
        continue;
      }
      // A warm-up round of each, then rounds alternating between the builds, which goes first alternating too (the
      // garbage of a round, collected in the next, would weigh on the build that always ran second).
      await h();
      if (o) await o();
      const a: number[] = [];
      const b: number[] = [];
      for (let k = 0; k < rounds; k++) {
        if (o && k % 2 === 1) {
          collect();
          b.push(await o());
        }
        collect();
        a.push(await h());
        if (o && k % 2 === 0) {
          collect();
          b.push(await o());
        }
      }
      out[`${p}_cpu_us`] = Math.round(median(a));
      if (o) {
        out[`against_${p}_cpu_us`] = Math.round(median(b));
        out[`${p}_speedup_vs_against`] = +medianPairRatio(b, a).toFixed(2);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const val = (name: string) => flagValue(process.argv, name);
  const parts = (val('--parts') ?? PARTS.join(',')).split(',') as Part[];
  for (const p of parts) if (!PARTS.includes(p)) throw new Error(`unknown part ${JSON.stringify(p)} (available: ${PARTS.join(', ')})`);
  const r = await exportPathBench(Number(val('--rounds') ?? 9), Number(val('--episodes') ?? 10), parts, val('--against'));
  console.log(JSON.stringify(r));
}
