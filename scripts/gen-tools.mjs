#!/usr/bin/env node
// Write schema/tools.json from toolSchemas() (src/turns/tools.ts). Needs a build first: `npm run build`.
// `node scripts/gen-tools.mjs --check` exits 1 when the committed file is out of date.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { toolsJsonText } = await import(new URL('../dist/src/turns/tools.js', import.meta.url).href);
const out = `${root}schema/tools.json`;
const text = toolsJsonText();
if (process.argv.includes('--check')) {
  let cur = '';
  try {
    cur = readFileSync(out, 'utf8');
  } catch {
    // missing counts as out of date
  }
  if (cur !== text) {
    process.stderr.write('schema/tools.json is out of date: run `npm run build && node scripts/gen-tools.mjs`\n');
    process.exit(1);
  }
} else {
  writeFileSync(out, text);
  process.stdout.write(`wrote ${out}\n`);
}
