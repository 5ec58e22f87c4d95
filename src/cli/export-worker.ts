/**
 * Worker thread of `ycgym run`: plays the episodes the main thread hands it and sends back the episode row plus its
 * step rows in one of the worker's shared slots (`WorkerMessage`): as the episode's Arrow IPC record batch body,
 * compressed here (`WorkerConfig.body`: Arrow files), or packed as raw buffers (Parquet). A slot is a
 * SharedArrayBuffer the main thread receives once (again only when it grows); the main thread gives a slot back
 * (`{ free: slot }`) once it has written its rows, and a job waits while every slot is in use. No buffer is created
 * per episode on either side.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { makePolicy } from '../../baselines/index.js';
import { presetConfig } from '../config/load.js';
import { STEP_COLUMNS } from '../export/columns.js';
import { recordBatchBodyInto } from '../export/ipc-body.js';
import { stepBuilder } from '../export/table-builder.js';
import { DEFAULT_SLOTS, playJobRows, type JobRequest, type WorkerConfig, type WorkerMessage } from '../export/jobs.js';
import { zstdArenaEncoder } from '../export/zstd-encode.js';

const cfgIn = workerData as WorkerConfig;
// Validated and frozen once per worker (presetConfig): the episodes' Simulation.create take it as is.
const cfg = presetConfig(cfgIn.preset);
const builder = stepBuilder();
const bodyMode = cfgIn.trajectories ? (cfgIn.body ?? null) : null;
// Loaded before the first job (messages wait on the port meanwhile): the same encoder and level as the main thread's.
// Its outputs are views of one arena, valid until the next body: copied into the slot before then.
const zstd = bodyMode === 'zstd' ? await zstdArenaEncoder() : null;
const compress = zstd === null ? null : zstd.encode;

const slots: { sab: SharedArrayBuffer; sent: boolean }[] = [];
const free: number[] = Array.from({ length: Math.max(1, cfgIn.slots ?? DEFAULT_SLOTS) }, (_, k) => k);
const waiting: JobRequest[] = [];

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

parentPort?.on('message', (msg: JobRequest | { free: number }) => {
  if ('free' in msg) free.push(msg.free);
  else waiting.push(msg);
  for (let job = waiting[0], slot = free[0]; job !== undefined && slot !== undefined; job = waiting[0], slot = free[0]) {
    waiting.shift();
    free.shift();
    play(job, slot);
  }
});
