import { Option } from 'commander';
import { argParser } from './command-kit';
import { parseInstant } from './duration';

/** `--from <iso>`: where a window of deletion times starts (ISO-8601); `required` where a command needs one. */
export function fromOption(description: string, required = false): Option {
  return instantOption('--from', description, required);
}

/** `--to <iso>`: where a window of deletion times ends (ISO-8601). */
export function toOption(description: string, required = false): Option {
  return instantOption('--to', description, required);
}

/** `<flag> <iso>`: an instant (ISO-8601) as epoch ms; commander's error names the flag. */
export function instantOption(flag: string, description: string, required = false): Option {
  const option = new Option(`${flag} <iso>`, description).argParser(argParser((v) => parseInstant(v, flag)));
  return required ? option.makeOptionMandatory() : option;
}
