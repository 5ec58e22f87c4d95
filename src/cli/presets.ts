/**
 * `ycgym presets`: every built-in preset with its one-line description and the numbers that tell them apart.
 */
import type { Command } from 'commander';
import { listPresets, loadPreset, presetBase } from '../config/load.js';
import { dollars } from './format.js';

/** One built-in preset as `ycgym presets` shows it. */
export interface PresetRow {
  name: string;
  /** The preset it extends (null: a complete file). */
  extends: string | null;
  description: string;
  horizon_years: number;
  employees: number;
  clients: number;
  market_tasks: number;
  initial_funds_cents: number;
  /** The turn cap of LLM runs (null: none). */
  max_turns: number | null;
  /** Names of the `[fixes]` switches turned on. */
  fixes: string[];
}

/** Every built-in preset, sorted by name. */
export function presetRows(): PresetRow[] {
  return listPresets().map((name) => {
    const c = loadPreset(name);
    return {
      name,
      extends: presetBase(name),
      description: c.description,
      horizon_years: c.sim.horizon_years,
      employees: c.world.num_employees,
      clients: c.world.num_clients,
      market_tasks: c.world.num_market_tasks,
      initial_funds_cents: c.world.initial_funds_cents,
      max_turns: c.loop.max_turns,
      fixes: Object.entries(c.fixes).filter(([, on]) => on === true).map(([k]) => k),
    };
  });
}

/** The rows as a Markdown table. */
export function presetTable(rows: readonly PresetRow[]): string {
  const out = [
    '| preset | extends | years | employees | clients | tasks | funds | max turns | fixes | description |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |',
  ];
  for (const r of rows) {
    const fixes = r.fixes.length === 0 ? '-' : `${r.fixes.length} on`;
    out.push(
      `| ${r.name} | ${r.extends ?? '-'} | ${r.horizon_years} | ${r.employees} | ${r.clients} | ${r.market_tasks} | ${dollars(r.initial_funds_cents)} | ${r.max_turns ?? '-'} | ${fixes} | ${r.description} |`,
    );
  }
  return out.join('\n');
}

/** Register `ycgym presets [--json]`. */
export function registerPresets(program: Command): void {
  program
    .command('presets')
    .description('list the built-in presets: description and key numbers (use a name with --preset or --config)')
    .option('--json', 'one JSON array instead of the table')
    .action((o: { json?: boolean }) => {
      const rows = presetRows();
      process.stdout.write(o.json === true ? `${JSON.stringify(rows, null, 2)}\n` : `${presetTable(rows)}\n`);
    });
}
