// Write a generated file, or with `--check` in process.argv exit 1 when the committed copy differs from `text`
// (the scripts that generate committed files share this: scripts/gen-tools.mjs, scripts/sync-version.mjs).
import { readFileSync, writeFileSync } from 'node:fs';

/** Write `text` to `path`, or check it (`--check`): `regenerate` is the command to print when it is stale. */
export function writeOrCheck(path, text, regenerate) {
  if (process.argv.includes('--check')) {
    let cur = '';
    try {
      cur = readFileSync(path, 'utf8');
    } catch {
      // missing counts as out of date
    }
    if (cur !== text) {
      process.stderr.write(`${path} is out of date: run \`${regenerate}\`\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(path, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
