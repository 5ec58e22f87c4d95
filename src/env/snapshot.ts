/**
 * Validation of simulation snapshots coming from outside the process (files, the network): the JSON
 * Schema in schema/sim-snapshot.schema.json, referential integrity, and a re-validated config. A snapshot
 * that passes restores into a simulation whose invariants hold; anything else is a clear error.
 */
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { validatedConfigFromRaw } from '../config/load.js';
import { FIRST_START_DATE, isoformat, LAST_EXACT_INSTANT, LAST_START_DATE, latestDeadline, runBounds, type SimSnapshot } from '../sim/index.js';
import { validate as simSnapshotSchema } from './sim-snapshot-validator.generated.js';

const FIRST_START = runBounds(FIRST_START_DATE, 1).start;
const { start: LAST_START, horizonEnd: LAST_HORIZON_END } = runBounds(LAST_START_DATE, 100);

/** A snapshot that cannot be restored. */
export class SnapshotError extends Error {}

/** schema/sim-snapshot.schema.json's validator, generated ahead of time (scripts/gen/validators.ts: no compile at run time). */
const schemaValidator = simSnapshotSchema as unknown as ValidateFunction;

/** Check a parsed snapshot and return it typed (with its config re-validated), or throw `SnapshotError`. */
export function validateSimSnapshot(x: unknown): SimSnapshot {
  const v = schemaValidator;
  if (!v(x)) {
    const e = v.errors?.[0];
    throw new SnapshotError(`invalid snapshot: ${e ? `${e.instancePath || '/'} ${e.message ?? ''}` : 'schema violation'}`.trim());
  }
  const snap = x as SimSnapshot;
  let config;
  try {
    config = validatedConfigFromRaw(snap.config, 'snapshot config');
  } catch (err) {
    throw new SnapshotError(`invalid snapshot config: ${(err as Error).message}`);
  }
  const s = snap.state;
  const fail = (m: string): never => {
    throw new SnapshotError(`invalid snapshot: ${m}`);
  };
  s.employees.forEach((e, i) => e.id !== i && fail(`/state/employees/${i}/id must be ${i}`));
  s.clients.forEach((c, i) => c.id !== i && fail(`/state/clients/${i}/id must be ${i}`));
  s.ledger.forEach((l, i) => l.id !== i && fail(`/state/ledger/${i}/id must be ${i}`));
  // A deadline stays an exact instant (the config's rule, src/config/load.ts deadlineIssues): a market task needs at
  // most what the config can draw (a forged 1e20 units made its accept an internal error past year 9999), and no
  // deadline lies past 2**53 µs.
  const mostQty = latestDeadline(config.world).maxQty;
  s.tasks.forEach((t, i) => {
    if (t.id !== i) fail(`/state/tasks/${i}/id must be ${i}`);
    if (t.deadline !== null && t.deadline > LAST_EXACT_INSTANT) fail(`/state/tasks/${i}/deadline must be at most ${isoformat(LAST_EXACT_INSTANT)} (2**53 µs, the last exact instant)`);
    if (t.status === 'market') {
      for (const r of t.reqs) if (!(Number(r.required) <= mostQty)) fail(`/state/tasks/${i}/reqs: a market task needs at most ${mostQty} units of a domain under the snapshot's config (its largest draw), got ${r.required}`);
    }
    if (t.clientId !== null && t.clientId >= s.clients.length) fail(`/state/tasks/${i}/clientId out of range`);
    t.assignments.forEach((a, j) => a.employeeId >= s.employees.length && fail(`/state/tasks/${i}/assignments/${j}/employeeId out of range`));
    const seen = new Set<string>();
    for (const r of t.reqs) {
      if (seen.has(r.domain)) fail(`/state/tasks/${i}/reqs: duplicate domain ${r.domain}`);
      seen.add(r.domain);
      if (r.required.startsWith('-') || r.completed.startsWith('-') || Number(r.completed) > Number(r.required)) fail(`/state/tasks/${i}/reqs: quantities must satisfy 0 <= completed <= required`);
    }
  });
  for (const [i, e] of s.events.entries()) {
    if (e.taskId !== null && e.taskId >= s.tasks.length) fail(`/state/events/${i}/taskId out of range`);
    if (e.seq >= s.nextEventSeq) fail(`/state/events/${i}/seq must be below nextEventSeq`);
  }
  for (const [i, l] of s.ledger.entries()) {
    if (l.refId !== null && l.refType === 'task' && l.refId >= s.tasks.length) fail(`/state/ledger/${i}/refId out of range`);
    if (l.refId !== null && l.refType === 'employee' && l.refId >= s.employees.length) fail(`/state/ledger/${i}/refId out of range`);
  }
  const ledgerSum = s.ledger.reduce((a, l) => a + l.amountCents, 0);
  if (s.fundsCents !== s.initialFundsCents + ledgerSum) fail('/state/fundsCents must equal initialFundsCents plus the ledger');
  if (!(s.startTime <= s.simTime && s.simTime <= s.horizonEnd)) fail('/state/simTime must lie between startTime and horizonEnd');
  // A run Simulation.create could have started (runBounds): else its instants leave the exact range, and a deadline
  // could pass year 9999 (a state started in 9999 made the first `task accept` an internal error).
  if (!(s.startTime >= FIRST_START && s.startTime <= LAST_START)) fail(`/state/startTime must lie from ${FIRST_START_DATE} to ${LAST_START_DATE}, 09:00`);
  if (!(s.horizonEnd <= LAST_HORIZON_END)) fail(`/state/horizonEnd must be at most 100 years after the last start date (${LAST_START_DATE})`);
  // Trust is capped at trust_max: above it, the next success's gain took a fractional power of a negative number.
  s.clients.forEach((c, i) => {
    const t = Number(c.trust);
    if (!(t >= 0 && t <= config.world.trust_max)) fail(`/state/clients/${i}/trust must lie between 0 and trust_max (${config.world.trust_max}), got ${c.trust}`);
  });
  return { ...snap, config };
}
