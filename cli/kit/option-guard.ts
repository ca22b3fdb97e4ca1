import { Command, type Option } from 'commander';

/**
 * Commander gives an option that takes a value the next word whatever it is, so
 * `restore --ttl-attribute --dry-run` used to name the attribute "--dry-run" and really write. A value
 * starting with `--` is almost always a forgotten value followed by the next flag, so it is a usage
 * error unless written on purpose as `--opt=--value`. Installed on every command of the tree, so a
 * new option is covered without doing anything.
 */
export function guardOptionValues(command: Command): void {
  const parseOptions = command.parseOptions.bind(command);
  command.parseOptions = (args: string[]) => {
    const offender = findSwallowedFlag(command.options, args);
    if (offender) {
      const flag = offender.option.long ?? offender.option.short ?? offender.option.flags;
      command.error(
        `option '${offender.option.flags}' got '${offender.value}' as its value (a forgotten value?); ` +
          `write ${flag}=${offender.value} if that is really the value`,
        { code: 'commander.optionMissingArgument', exitCode: 2 },
      );
    }
    return parseOptions(args);
  };
  for (const sub of command.commands) guardOptionValues(sub);
}

/** Walks the words as commander's parseOptions does, for this command's own options only. */
export function findSwallowedFlag(
  options: readonly Option[],
  args: readonly string[],
): { option: Option; value: string } | undefined {
  const find = (word: string): Option | undefined =>
    options.find((o) => o.required && (o.long === word || o.short === word));
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    if (word === '--') return undefined;
    const exact = find(word);
    if (exact) {
      const value = args[i + 1];
      if (value?.startsWith('--')) return { option: exact, value };
      i++; // the value, whatever it is, is not an option of ours
      continue;
    }
    // `-t--dry-run`: a short option with its value glued on.
    if (/^-[^-]/.test(word) && word.length > 2) {
      const short = find(word.slice(0, 2));
      const value = word.slice(2);
      if (short && value.startsWith('--')) return { option: short, value };
    }
  }
  return undefined;
}
