/**
 * Text formatting shared by the CLI's tables (`ycgym run`'s summary, `ycgym report`, `ycgym presets`).
 */

/** `$1,234,567` from cents. */
export function dollars(cents: number): string {
  const sign = cents < 0 ? '-' : '';
  return `${sign}$${Math.round(Math.abs(cents) / 100).toLocaleString('en-US')}`;
}
