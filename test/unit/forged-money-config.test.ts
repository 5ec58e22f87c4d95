/**
 * A restored snapshot's config is input a client may forge. Its money and percentage knobs were not range-checked: a
 * snapshot with `penalty_fail_funds_pct` 1e308 restored, and the first failed task booked a penalty of -Infinity cents,
 * so every later reply carried `funds_cents: null` (JSON of -Infinity) and broke the protocol schema; 1e10 gave funds
 * beyond 2**53, no longer exact cents. Now a snapshot config passes the preset schema's ranges or is `bad_snapshot`
 * naming the field, and inside the ranges a failed task's penalty keeps funds exact integer cents.
 */
import { describe, expect, it } from 'vitest';
import type { ProtocolHandler } from '../../src/server/protocol-handler.js';
import { protocolHandler, sendV1 as send } from '../helpers/protocol-handler.js';

// validateReplies: a reply outside the protocol schema comes back as an `internal` error naming the problem.
const handler = (): ProtocolHandler => protocolHandler({ maxMessageBytes: 1 << 22 });

/** An Env snapshot of a fresh default episode with `world` merged into its config's world. */
function forged(h: ProtocolHandler, world: Record<string, unknown>): Record<string, unknown> {
  const r = send(h, { op: 'reset', seed: 1 });
  if (!r.ok) throw new Error(r.error.message);
  const session = r.result['session'] as string;
  const s = send(h, { op: 'snapshot', session });
  if (!s.ok) throw new Error(s.error.message);
  const snap = structuredClone(s.result['snapshot']) as { sim: { config: { world: Record<string, unknown> } } };
  Object.assign(snap.sim.config.world, world);
  send(h, { op: 'close', session });
  return snap as unknown as Record<string, unknown>;
}

/** Deadlines at the moment of acceptance: the first task worked on completes late, so it fails. */
const failsAtOnce = { deadline_min_biz_days: 0, deadline_qty_per_day: 1e6 };

/** Accept, staff, dispatch and run Task-1 to its (failed) completion; every reply must be ok and in the schema. */
function failATask(h: ProtocolHandler, session: string): number[] {
  const funds: number[] = [];
  for (const action of ['task accept --task-id Task-1', 'task assign --task-id Task-1 --employees Emp_1,Emp_2,Emp_3', 'task dispatch --task-id Task-1', 'sim resume', 'company status', 'finance ledger']) {
    const r = send(h, { op: 'step', session, action });
    expect(r.ok ? 'ok' : `${r.error.code}: ${r.error.message}`, action).toBe('ok');
    if (!r.ok) break;
    const info = r.result['info'] as { funds_cents: unknown; reward_cents: unknown };
    expect(Number.isSafeInteger(info.funds_cents), `${action}: funds_cents ${String(info.funds_cents)}`).toBe(true);
    expect(Number.isSafeInteger(info.reward_cents), `${action}: reward_cents ${String(info.reward_cents)}`).toBe(true);
    funds.push(info.funds_cents as number);
  }
  return funds;
}

describe('forged money and percentage knobs in restored snapshots', () => {
  it('the largest fail penalty in range books exact integer cents, every reply in the schema', () => {
    const h = handler();
    const snap = forged(h, { ...failsAtOnce, penalty_fail_funds_pct: 10 });
    const r = send(h, { op: 'restore', snapshot: snap });
    if (!r.ok) throw new Error(r.error.message);
    const funds = failATask(h, r.result['session'] as string);
    // The failure cost ten times the advertised reward: funds fell.
    expect(funds.at(-1)).toBeLessThan(funds[0] as number);
  });

  it('a forged penalty_fail_funds_pct of 1e308 or 1e10 never reaches a failed task (the reply broke the schema)', () => {
    const h = handler();
    for (const pct of [1e308, 1e10]) {
      const r = send(h, { op: 'restore', snapshot: forged(h, { ...failsAtOnce, penalty_fail_funds_pct: pct }) });
      // Before the ranges the restore passed and the failed task's penalty gave funds_cents null (-Infinity) or past 2**53.
      if (r.ok) failATask(h, r.result['session'] as string);
      else expect(r.error.code).toBe('bad_snapshot');
    }
  });

  const outOfRange: [string, unknown][] = [
    ['penalty_fail_funds_pct', 1e308],
    ['penalty_fail_funds_pct', 1e10],
    ['penalty_fail_funds_pct', -1],
    ['salary_bump_pct', 1e308],
    ['salary_max_cents', 1e300],
    ['initial_funds_cents', 2 ** 60],
    ['reward_prestige_scale', 1e300],
    ['trust_gated_reward_boost', 1e300],
    ['trust_level_max_required', 1e15],
    ['client_reward_mult_high', 1e300],
    ['trust_reward_ceiling', 1e300],
    ['trust_work_reduction_max', 5],
    ['loyalty_severity', 1e300],
  ];
  it.each(outOfRange)('%s = %s is bad_snapshot naming the field', (field, value) => {
    const h = handler();
    const snap = forged(h, { ...failsAtOnce, [field]: value });
    const r = send(h, { op: 'restore', snapshot: snap });
    expect(r.ok ? 'ok' : r.error.code).toBe('bad_snapshot');
    expect(r.ok ? '' : r.error.message).toContain(`/world/${field}`);
  });

  it('a turn snapshot with penalty_fail_funds_pct 1e308 is bad_snapshot too', () => {
    const h = handler();
    const r = send(h, { op: 'turn_reset', seed: 1 });
    if (!r.ok) throw new Error(r.error.message);
    const s = send(h, { op: 'turn_snapshot', session: r.result['session'] as string });
    if (!s.ok) throw new Error(s.error.message);
    const snap = structuredClone(s.result['snapshot']) as { sim: { config: { world: Record<string, unknown> } } };
    snap.sim.config.world['penalty_fail_funds_pct'] = 1e308;
    const t = send(h, { op: 'turn_restore', snapshot: snap });
    expect(t.ok ? 'ok' : t.error.code).toBe('bad_snapshot');
    expect(t.ok ? '' : t.error.message).toContain('/world/penalty_fail_funds_pct: must be <= 10');
  });

  it('out-of-range salary tiers and reward distributions are bad_snapshot naming the field', () => {
    const h = handler();
    const cases: [Record<string, unknown>, string][] = [
      [{ salary_senior: { name: 'senior', share: 0.15, min_cents: 1000000, max_cents: 1e300, rate_min: 7, rate_max: 10 } }, '/world/salary_senior/max_cents'],
      [{ dist: { reward_funds_cents: { type: 'constant', value: 1e300 } } }, '/world/dist/reward_funds_cents/value'],
      [{ dist: { required_prestige: { type: 'uniform', low: 1, high: 1e300 } } }, '/world/dist/required_prestige/high'],
    ];
    for (const [world, path] of cases) {
      const r = send(h, { op: 'restore', snapshot: forged(h, world) });
      expect(r.ok ? 'ok' : r.error.code, path).toBe('bad_snapshot');
      expect(r.ok ? '' : r.error.message).toContain(path);
    }
  });
});
