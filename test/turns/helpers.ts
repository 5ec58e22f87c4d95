/** Shared helpers of the turn-protocol tests: reference recordings and UUID normalisation. */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

const FIX = fileURLToPath(new URL('../fixtures/turns/', import.meta.url));

/** Read a fixture (gzip-compressed when the name ends in .gz) as parsed JSON. */
export function fixture<T>(name: string): T {
  const buf = readFileSync(FIX + name);
  return JSON.parse((name.endsWith('.gz') ? gunzipSync(buf) : buf).toString('utf8')) as T;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Replace UUIDs (random in the reference, hash-derived here) by `<uuid>`. */
export function noUuid(s: string): string {
  return s.replace(UUID, '<uuid>');
}

/** Keys whose string lists the reference orders by random UUIDs (SQLite rows keyed by uuid4): sorted before comparing. */
const UUID_ORDERED = new Set(['total_assigned', 'assigned_employees', 'active_tasks']);

function sortUuidOrdered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortUuidOrdered);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[k] = UUID_ORDERED.has(k) && Array.isArray(x) ? [...(x as string[])].sort() : sortUuidOrdered(x);
    return o;
  }
  return v;
}

/** A chat message as comparable text: UUIDs replaced, UUID-ordered lists in tool outputs sorted. */
export function canonMessage(m: { role: string; content?: unknown }): string {
  if (m.role === 'tool' && typeof m.content === 'string') {
    const r = JSON.parse(m.content) as Record<string, unknown>;
    if (typeof r['stdout'] === 'string') {
      try {
        r['stdout'] = JSON.stringify(sortUuidOrdered(JSON.parse(r['stdout'])));
      } catch {
        // not JSON (help screens): compared as is
      }
    }
    return noUuid(JSON.stringify({ ...m, content: r }));
  }
  return noUuid(JSON.stringify(m));
}

function sortEvents(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const o = { ...(v as Record<string, unknown>) };
  if (Array.isArray(o['wake_events'])) {
    o['wake_events'] = (o['wake_events'] as Record<string, unknown>[])
      .map((e) => {
        const { trust_delta: _t, salary_bump_total_cents: _b, ...rest } = e;
        return noUuid(JSON.stringify(rest));
      })
      .sort();
  }
  return o;
}

/**
 * A looser form for events processed at the same instant, which the reference orders at random (its event ids
 * are uuid5 of random UUIDs): wake events sorted and without the per-event figures that depend on the processing
 * order (`trust_delta`, `salary_bump_total_cents`), event lines of a context message sorted without the payroll
 * part. The state after the events is the same in either order.
 */
export function canonMessageTies(m: { role: string; content?: unknown }): string {
  if (m.role === 'tool' && typeof m.content === 'string') {
    const r = JSON.parse(m.content) as Record<string, unknown>;
    if (typeof r['stdout'] === 'string') {
      try {
        r['stdout'] = JSON.stringify(sortEvents(sortUuidOrdered(JSON.parse(r['stdout']))));
      } catch {
        // not JSON
      }
    }
    return noUuid(JSON.stringify({ ...m, content: r }));
  }
  if (m.role === 'user' && typeof m.content === 'string') {
    const parts = m.content.split('\n### Events since last turn:\n');
    if (parts.length === 2) {
      const [head, tail] = parts as [string, string];
      const end = tail.indexOf('\n\n');
      const events = (end >= 0 ? tail.slice(0, end) : tail)
        .split('\n')
        .map((l) => l.replace(/, \+\$[\d,]+\/mo payroll$/, ''))
        .sort()
        .join('\n');
      return noUuid(JSON.stringify({ ...m, content: `${head}\n### Events since last turn:\n${events}${end >= 0 ? tail.slice(end) : ''}` }));
    }
  }
  return canonMessage(m);
}
