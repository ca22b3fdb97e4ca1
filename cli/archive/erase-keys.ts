import { ValidationError } from '../../core/errors';
import { parseKeyJson, readKeySource } from '../kit/key-arg';

/**
 * The keys `archive erase` takes: each --key (inline JSON, file://path or - for stdin), plus the
 * lines of --keys-file (one DynamoDB-JSON key per line; blank lines and lines starting with # are
 * skipped; `-` reads stdin). A bad line is a usage error naming its line number, before anything
 * is erased.
 */
export function parseKeysFileText(text: string, source: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    try {
      out.push(parseKeyJson(line));
    } catch (err) {
      throw new ValidationError(`--keys-file ${source} line ${i + 1}: ${(err as Error).message}`);
    }
  }
  return out;
}

export function readEraseKeys(
  keys: string[],
  keysFile: string | undefined,
  read?: (source: string | number) => string,
): Array<Record<string, unknown>> {
  const out = keys.map((k) => parseKeyJson(readKeySource(k, read)));
  if (keysFile !== undefined) {
    const source = keysFile === '-' ? '-' : `file://${keysFile.replace(/^file:\/\//, '')}`;
    out.push(...parseKeysFileText(readKeySource(source, read), keysFile));
  }
  if (out.length === 0) throw new ValidationError('give at least one --key or a --keys-file with keys');
  return out;
}
