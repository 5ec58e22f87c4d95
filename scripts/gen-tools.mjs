#!/usr/bin/env node
// Write schema/tools.json from toolSchemas() (src/turns/tools.ts). Needs a build first: `npm run build`.
// `node scripts/gen-tools.mjs --check` exits 1 when the committed file is out of date.
import { fileURLToPath } from 'node:url';
import { writeOrCheck } from './generated-file.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const { toolsJsonText } = await import(new URL('../dist/src/turns/tools.js', import.meta.url).href);
const out = `${root}schema/tools.json`;
const text = toolsJsonText();
writeOrCheck(out, text, 'npm run build && node scripts/gen-tools.mjs');
