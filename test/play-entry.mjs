#!/usr/bin/env node
// Entry for the `play` test: the real CLI (needs a build: `npm run build`).
await import('../dist/src/cli/main.js');
