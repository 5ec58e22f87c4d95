/**
 * The documented limits (docs/reliability.md, "Limits"), each checked at, just under and just over its
 * boundary, in-process and over the wire, with the exact error an agent or client sees.
 */
import { Dealer } from 'zeromq';
import { loadPreset } from '../../../src/config/load.js';
import { Env } from '../../../src/env/env.js';
import { MAX_BATCH } from '../../../src/protocol/protocol.js';
import { DEFAULT_LIMITS, Simulation } from '../../../src/sim/index.js';
import { ServerChild } from './children.js';

/** One limit check. */
export interface LimitCheck {
  name: string;
  ok: boolean;
  detail: string;
}

function fp(sim: Simulation): string {
  return JSON.stringify(sim.state);
}

/** In-process checks: command length and scratchpad size. */
export function simulationLimits(): LimitCheck[] {
  const out: LimitCheck[] = [];
  const L = DEFAULT_LIMITS.maxCommandChars;
  const S = DEFAULT_LIMITS.maxScratchpadChars;
  const sim = Simulation.create(loadPreset('default'), { seed: 1 });
  const head = 'scratchpad write --content ';
  // Exactly at the command limit: executed.
  const atLimit = sim.execute(head + 'a'.repeat(L - head.length));
  out.push({ name: `command of exactly ${L} characters is executed`, ok: atLimit.exit === 0 && sim.state.scratchpad.length === L - head.length, detail: `exit ${atLimit.exit}` });
  // One over: usage error, nothing changes.
  let before = fp(sim);
  const over = sim.execute(head + 'b'.repeat(L + 1 - head.length));
  const overMsg = `Command too long: ${L + 1} characters (limit ${L}).`;
  out.push({ name: `command of ${L + 1} characters is a usage error (exit 2), state unchanged`, ok: over.exit === 2 && JSON.stringify(over.value) === JSON.stringify({ error: overMsg }) && fp(sim) === before, detail: over.text });
  // Characters are UTF-16 code units: an emoji counts 2.
  const emoji = sim.execute('x'.repeat(L - 1) + '😀');
  out.push({ name: 'the length is counted in UTF-16 code units (an emoji counts 2)', ok: emoji.exit === 2 && emoji.text.includes(`${L + 1} characters`), detail: emoji.text.slice(0, 80) });
  // Scratchpad: fill to exactly the limit through appends (a write is bounded by the command limit).
  sim.execute('scratchpad clear');
  const chunk = 65_000;
  let r = sim.execute(`${head}${'c'.repeat(chunk)}`);
  let size = chunk;
  while (S - size > chunk + 1) {
    r = sim.execute(`scratchpad append --content ${'c'.repeat(chunk)}`);
    size += chunk + 1;
  }
  const rest = S - size - 1;
  r = sim.execute(`scratchpad append --content ${'d'.repeat(rest)}`);
  out.push({ name: `scratchpad filled to exactly ${S} characters`, ok: r.exit === 0 && sim.state.scratchpad.length === S, detail: `length ${sim.state.scratchpad.length}` });
  before = fp(sim);
  const full = sim.execute('scratchpad append --content x');
  const fullMsg = `Scratchpad would exceed ${S} characters (${S + 2}); nothing was changed.`;
  out.push({ name: 'one more character is refused (exit 1), scratchpad unchanged', ok: full.exit === 1 && JSON.stringify(full.value) === JSON.stringify({ error: fullMsg }) && fp(sim) === before, detail: full.text });
  const replace = sim.execute(`${head}short`);
  out.push({ name: 'a write replaces the content (and frees the space)', ok: replace.exit === 0 && sim.state.scratchpad === 'short', detail: `exit ${replace.exit}` });
  return out;
}

/** Snapshot sizes: a fresh episode, and the worst case a scratchpad can add (every character JSON-escaped to 6 bytes). */
export function snapshotSizes(): { fresh_bytes: number; full_ascii_scratchpad_bytes: number; full_control_char_scratchpad_bytes: number } {
  const env = new Env();
  env.reset({ seed: 1 });
  const size = (): number => Buffer.byteLength(JSON.stringify(env.snapshot()));
  const fresh = size();
  const fill = (ch: string): void => {
    env.step('scratchpad clear');
    env.step(`scratchpad write --content ${ch.repeat(65_000)}`);
    for (let i = 0; i < 3; i++) env.step(`scratchpad append --content ${ch.repeat(65_000)}`);
    env.step(`scratchpad append --content ${ch.repeat(DEFAULT_LIMITS.maxScratchpadChars - 4 * 65_001)}`);
  };
  fill('a');
  const ascii = size();
  fill('\u0001');
  const ctrl = size();
  return { fresh_bytes: fresh, full_ascii_scratchpad_bytes: ascii, full_control_char_scratchpad_bytes: ctrl };
}

/** Over-the-wire checks against a server child (default limits unless stated). */
export async function wireLimits(): Promise<LimitCheck[]> {
  const out: LimitCheck[] = [];
  const server = await ServerChild.start({ maxBatchReplyBytes: 256 * 1024, maxMessageBytes: 1 << 20 });
  const d = new Dealer({ linger: 0, receiveTimeout: 20_000 });
  d.connect(server.endpoint);
  const call = async (req: string | Buffer): Promise<{ ok: boolean; id: unknown; result?: Record<string, unknown>; error?: { code: string; message: string } }> => {
    await d.send(req);
    const [m] = await d.receive();
    return JSON.parse((m as Buffer).toString('utf8')) as { ok: boolean; id: unknown; result?: Record<string, unknown>; error?: { code: string; message: string } };
  };
  try {
    const reset = await call(JSON.stringify({ v: 1, op: 'reset', seed: 1 }));
    const session = (reset.result as { session: string }).session;
    const long = await call(JSON.stringify({ v: 1, op: 'step', session, action: 'x'.repeat(DEFAULT_LIMITS.maxCommandChars + 1) }));
    const obs = (long.result as { observation?: { exit_code: number; text: string } } | undefined)?.observation;
    out.push({ name: 'an over-long action is an ordinary step with a usage error', ok: long.ok && obs?.exit_code === 2 && obs.text.includes('Command too long'), detail: obs?.text.slice(0, 80) ?? JSON.stringify(long.error) });
    const max = 1 << 20;
    const prefix = `{"v":1,"op":"hello","id":"`;
    const exact = Buffer.concat([Buffer.from(prefix), Buffer.alloc(max - prefix.length - 2, 0x61), Buffer.from('"}')]);
    const atMax = await call(exact);
    out.push({ name: `a payload of exactly ${max} bytes is processed`, ok: !atMax.ok && atMax.error?.code === 'invalid_request', detail: `${atMax.error?.code}: ${atMax.error?.message ?? ''} (the id is too long: processed past the size check)` });
    const tooBig = await call(Buffer.concat([exact, Buffer.from(' ')]));
    out.push({ name: `a payload of ${max + 1} bytes is message_too_large`, ok: !tooBig.ok && tooBig.error?.code === 'message_too_large' && tooBig.id === null, detail: tooBig.error?.message ?? '' });
    const batch = await call(JSON.stringify({ v: 1, op: 'step_batch', steps: Array.from({ length: MAX_BATCH + 1 }, () => ({ session, action: 'x' })) }));
    out.push({ name: `a step_batch of ${MAX_BATCH + 1} entries is invalid_request`, ok: !batch.ok && batch.error?.code === 'invalid_request', detail: batch.error?.message ?? '' });
    const sid = await call(JSON.stringify({ v: 1, op: 'snapshot', session: 's'.repeat(65) }));
    out.push({ name: 'a session id of 65 characters is invalid_request', ok: !sid.ok && sid.error?.code === 'invalid_request', detail: sid.error?.message ?? '' });
    const rid = await call(JSON.stringify({ v: 1, op: 'hello', id: 'i'.repeat(257) }));
    out.push({ name: 'a request id of 257 characters is invalid_request with id null', ok: !rid.ok && rid.error?.code === 'invalid_request' && rid.id === null, detail: rid.error?.message ?? '' });
    const name = await call(JSON.stringify({ v: 1, op: 'reset', seed: 1, options: { company_name: 'n'.repeat(257) } }));
    out.push({ name: 'a company name of 257 characters is invalid_request', ok: !name.ok && name.error?.code === 'invalid_request', detail: name.error?.message ?? '' });
    // Batch reply cap (this server: 256 KiB): entries run until the reply reaches the cap, the rest are not executed.
    const capped = await call(JSON.stringify({ v: 1, op: 'step_batch', steps: Array.from({ length: 40 }, () => ({ session, action: 'market browse --limit 200' })) }));
    const items = ((capped.result as { results?: { ok: boolean; result?: { info: { step: number } }; error?: { code: string; message: string } }[] } | undefined)?.results ?? []);
    const ran = items.filter((x) => x.ok).length;
    const skipped = items.filter((x) => !x.ok && x.error?.code === 'message_too_large').length;
    const next = await call(JSON.stringify({ v: 1, op: 'step', session, action: 'company status' }));
    const stepAfter = (next.result as { info?: { step: number } } | undefined)?.info?.step;
    out.push({
      name: 'a step_batch reply stops growing at the cap: later entries fail alone with message_too_large and do not run',
      ok: capped.ok && ran > 0 && skipped > 0 && ran + skipped === 40 && stepAfter === 1 + ran + 1,
      detail: `${ran} ran, ${skipped} not executed (${items.find((x) => !x.ok)?.error?.message ?? ''}); next step is step ${stepAfter}`,
    });
  } finally {
    d.close();
    await server.stop();
  }
  return out;
}
