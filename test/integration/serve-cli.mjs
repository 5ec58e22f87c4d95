// Stand-in for `ycgym` with only `serve` and `keygen` (used until src/cli/main.ts registers them).
import { Command } from 'commander';
import { registerServe } from '../../dist/src/cli/serve.js';

const program = new Command();
program.name('ycgym');
registerServe(program);
await program.parseAsync(process.argv);
