/**
 * Worker thread of `ycgym run`: plays the episodes the main thread hands it and sends back the episode
 * row plus the raw column buffers of its step rows (transferred, not copied).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { makePolicy } from '../../baselines/index.js';
import { loadPreset } from '../config/load.js';
import { stepBuilder, transferList } from '../export/table-builder.js';
import { playJob, type JobRequest, type JobResult, type WorkerConfig } from '../export/jobs.js';

const cfgIn = workerData as WorkerConfig;
const cfg = loadPreset(cfgIn.preset);
const builder = stepBuilder();

parentPort?.on('message', (msg: JobRequest) => {
  let result: JobResult;
  try {
    result = playJob(cfg, cfgIn, msg, builder, makePolicy);
  } catch (e) {
    parentPort?.postMessage({ index: msg.index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    return;
  }
  parentPort?.postMessage(result, result.steps ? transferList(result.steps) : []);
});
