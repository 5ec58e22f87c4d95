/**
 * Worker thread of `ycgym run`: plays the episodes the main thread hands it and sends back the episode row plus its
 * step rows packed into one of the worker's shared slots (`WorkerMessage`). A slot is a SharedArrayBuffer the main
 * thread receives once (again only when it grows); the main thread gives a slot back (`{ free: slot }`) once it has
 * written its rows, and a job waits while every slot is in use. No buffer is created per episode on either side.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../config/load.js';
import { stepBuilder } from '../export/table-builder.js';
import { DEFAULT_SLOTS, playJobRows, type JobRequest, type WorkerConfig, type WorkerMessage } from '../export/jobs.js';

const cfgIn = workerData as WorkerConfig;
const cfg = loadPreset(cfgIn.preset);
const builder = stepBuilder();

const slots: { sab: SharedArrayBuffer; sent: boolean }[] = [];
const free: number[] = Array.from({ length: Math.max(1, cfgIn.slots ?? DEFAULT_SLOTS) }, (_, k) => k);
const waiting: JobRequest[] = [];

function play(job: JobRequest, slot: number): void {
  let msg: WorkerMessage;
  try {
    const r = playJobRows(cfg, cfgIn, job, builder, makePolicy);
    if (!cfgIn.trajectories) {
      free.push(slot);
      msg = { ...r, steps: null, packed: null };
    } else {
      const need = builder.packedSize();
      let s = slots[slot];
      if (s === undefined || s.sab.byteLength < need) {
        // Grow with headroom: episodes of one run are of similar sizes.
        s = { sab: new SharedArrayBuffer(Math.max(1 << 20, need + (need >> 1))), sent: false };
        slots[slot] = s;
      }
      // Straight from the builder: no copy of the episode's buffers in between.
      const layout = builder.pack(new Uint8Array(s.sab));
      msg = { ...r, steps: null, packed: { slot, layout, sab: s.sent ? null : s.sab } };
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
