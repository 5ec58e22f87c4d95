/**
 * Worker thread of `ycgym run`: plays the episodes the main thread hands it and sends back the episode row plus its
 * step rows in one of the worker's shared slots (`WorkerMessage`): as the episode's Arrow IPC record batch body,
 * compressed here (`WorkerConfig.body`: Arrow files), or packed as raw buffers (Parquet). A slot is a
 * SharedArrayBuffer the main thread receives once (again only when it grows); the main thread gives a slot back
 * (`{ free: slot }`) once it has written its rows, and a job waits while every slot is in use. No buffer is created
 * per episode on either side.
 *
 * The thread may start before the main thread has planned the run (./prestart.ts): it loads what its `workerData`
 * names (`WorkerStart.preload`) and takes the run's settings from the first message (`{ config }`), which the main
 * thread posts before any job; jobs and slots given back that come while the settings load wait for them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { makePolicy } from '../../baselines/index.js';
import { presetConfig } from '../config/load.js';
import { STEP_COLUMNS } from '../export/columns.js';
import { recordBatchBodyInto } from '../export/ipc-body.js';
import { stepBuilder } from '../export/table-builder.js';
import { DEFAULT_SLOTS, playJobRows, type JobRequest, type WorkerConfig, type WorkerMessage } from '../export/jobs.js';
import type { ExperimentConfig } from '../sim/index.js';
import { zstdArenaEncoder, type ArenaEncoder } from '../export/zstd-encode.js';
import type { WorkerStart } from './prestart.js';

/** A message from the main thread: the run's settings (first, once), a job, or a slot given back. */
type Incoming = { config: WorkerConfig } | JobRequest | { free: number };

const { preload } = workerData as WorkerStart;
// Loaded while the settings are on their way (./prestart.ts: the main thread may still be loading its own modules).
// A preset that fails here fails again below, when the settings name it, and the main thread's plan reports it first.
try {
  presetConfig(preload.preset);
} catch {
  // reported with the settings
}
const zstdLoading = preload.zstd ? zstdArenaEncoder() : null;
zstdLoading?.catch(() => {}); // awaited with the settings, which rethrows

let cfgIn: WorkerConfig;
let cfg: ExperimentConfig;
let bodyMode: 'zstd' | 'none' | null = null;
// The same encoder and level as the main thread's. Its outputs are views of one arena, valid until the next body:
// copied into the slot before then.
let zstd: ArenaEncoder | null = null;
let compress: ((d: Uint8Array) => Uint8Array) | null = null;
const builder = stepBuilder();

const slots: { sab: SharedArrayBuffer; sent: boolean }[] = [];
const free: number[] = [];
const waiting: JobRequest[] = [];

/** Take the run's settings: its preset (validated and frozen once per worker: the episodes take it as is) and encoder. */
async function configure(c: WorkerConfig): Promise<void> {
  cfgIn = c;
  cfg = presetConfig(c.preset);
  bodyMode = c.trajectories ? (c.body ?? null) : null;
  zstd = bodyMode === 'zstd' ? await (zstdLoading ?? zstdArenaEncoder()) : null;
  compress = zstd === null ? null : zstd.encode;
  for (let k = 0; k < Math.max(1, c.slots ?? DEFAULT_SLOTS); k++) free.push(k);
}

/** Slot `slot` with room for `need` bytes (grown with headroom: episodes of one run are of similar sizes). */
function slotFor(slot: number, need: number): { sab: SharedArrayBuffer; sent: boolean } {
  let s = slots[slot];
  if (s === undefined || s.sab.byteLength < need) {
    s = { sab: new SharedArrayBuffer(Math.max(1 << 20, need + (need >> 1))), sent: false };
    slots[slot] = s;
  }
  return s;
}

function play(job: JobRequest, slot: number): void {
  let msg: WorkerMessage;
  try {
    const r = playJobRows(cfg, cfgIn, job, builder, makePolicy);
    if (!cfgIn.trajectories) {
      free.push(slot);
      msg = { ...r, steps: null, packed: null, body: null };
    } else if (bodyMode !== null) {
      // Straight from the builder's buffers (views, no copy) to the body, copied into the slot while the views hold
      // (uncompressed chunks are views of the builder's buffers): only the (compressed) body is copied.
      msg = builder.consume((t) => {
        zstd?.reset();
        const b = recordBatchBodyInto(STEP_COLUMNS, t, compress, (n) => new Uint8Array(slotFor(slot, n).sab));
        const s = slots[slot] as { sab: SharedArrayBuffer; sent: boolean }; // set by slotFor
        const sab = s.sent ? null : s.sab;
        s.sent = true;
        return { ...r, steps: null, packed: null, body: { slot, sab, ...b } };
      });
    } else {
      const s = slotFor(slot, builder.packedSize());
      // Straight from the builder: no copy of the episode's buffers in between.
      const layout = builder.pack(new Uint8Array(s.sab));
      msg = { ...r, steps: null, packed: { slot, layout, sab: s.sent ? null : s.sab }, body: null };
      s.sent = true;
    }
  } catch (e) {
    free.push(slot);
    parentPort?.postMessage({ index: job.index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    return;
  }
  parentPort?.postMessage(msg);
}

/** Play the waiting jobs while a slot is free. */
function playWaiting(): void {
  for (let job = waiting[0], slot = free[0]; job !== undefined && slot !== undefined; job = waiting[0], slot = free[0]) {
    waiting.shift();
    free.shift();
    play(job, slot);
  }
}

/** Messages that came before the settings were taken in (jobs follow the settings at once). */
let early: Incoming[] | null = [];

function take(msg: Incoming): void {
  if ('config' in msg) return;
  if ('free' in msg) free.push(msg.free);
  else waiting.push(msg);
  playWaiting();
}

parentPort?.on('message', (msg: Incoming) => {
  if (early === null) {
    take(msg);
    return;
  }
  if (!('config' in msg)) {
    early.push(msg);
    return;
  }
  configure(msg.config).then(
    () => {
      const before = early ?? [];
      early = null;
      for (const m of before) take(m);
    },
    // As an error while the worker loads: the worker's 'error' event, which fails the run.
    (e: unknown) => setImmediate(() => {
      throw e;
    }),
  );
});
