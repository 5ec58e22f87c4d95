/**
 * The preset option of every `ycgym` command: `--preset <name|path>`, with `--config <name|path>` as an alias
 * (the reference's flag, `yc-bench run --config NAME`, which outside projects' instructions use).
 * Giving both is an error; the command's action only ever reads `preset`.
 */
import { type Command, Option } from 'commander';

/** Add `--preset` (with `defaultValue`, if any) and its alias `--config` to `cmd`. */
export function addPresetOption(cmd: Command, description: string, defaultValue?: string): Command {
  const preset = new Option('--preset <name|path>', description);
  if (defaultValue !== undefined) preset.default(defaultValue);
  cmd.addOption(preset);
  cmd.addOption(new Option('--config <name|path>', 'alias of --preset (the reference\'s flag)').conflicts('preset'));
  cmd.hook('preAction', (_cmd, action) => {
    const config: unknown = action.getOptionValue('config');
    if (typeof config === 'string') action.setOptionValueWithSource('preset', config, 'cli');
  });
  return cmd;
}
