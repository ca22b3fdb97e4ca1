import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../../core/errors';

/**
 * `--env-file FILE`: the TTLSTREAM_* variables of a file of `NAME=VALUE` lines, the format of `kubectl create
 * configmap --from-env-file` and `docker run --env-file`, so a command can read the settings a deployment's
 * ConfigMap gives its pods. Blank lines and lines starting with `#` are skipped; leading blanks are dropped; the value
 * is everything after the first `=`, as is. Names other than TTLSTREAM_* are left out (a ConfigMap may carry a
 * container's other variables); they are not this process's to set.
 */
export function readEnvFile(path: string, cwd: string): Record<string, string> {
  const where = `--env-file ${path}`;
  let text: string;
  try {
    text = readFileSync(resolve(cwd, path), 'utf8');
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  const out: Record<string, string> = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '').trimStart();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    const name = eq === -1 ? line : line.slice(0, eq);
    if (eq === -1 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new ConfigError(`${where} line ${i + 1}: expected NAME=VALUE`);
    if (!name.startsWith('TTLSTREAM_')) continue;
    const value = line.slice(eq + 1);
    // kubectl and docker keep quotes as part of the value: a quoted value would reach the pods quoted too.
    if (value.length >= 2 && /^(["']).*\1$/.test(value))
      throw new ConfigError(
        `${where} line ${i + 1}: the value of ${name} is in quotes, which \`kubectl create configmap --from-env-file\` would keep as part of it: remove them`,
      );
    out[name] = value;
  }
  return out;
}
