import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ServiceError } from '../../core/errors';

/** The checkout this CLI runs from (dist/cli/… or cli/… under it): where infra/up.sh lives. */
export function packageRoot(from = __dirname): string | null {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'ttlstream') return dir;
      } catch {
        // not ours; keep walking up
      }
    }
    if (dirname(dir) === dir) return null;
  }
}

/**
 * Runs `bash infra/up.sh` (idempotent) and returns its output, passing each line to `onLine` as it
 * comes (a cold first start downloads Kafka and moto and takes minutes: the user should see why).
 * Rejects with the output's tail on failure.
 */
export function bringUpStack(
  root: string,
  onLine: (line: string) => void = () => undefined,
  timeoutMs = 600_000,
): Promise<string> {
  const script = join(root, 'infra', 'up.sh');
  if (!existsSync(script)) return Promise.reject(new ServiceError(`${script} not found`));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let partial = '';
    const take = (b: Buffer): void => {
      const text = b.toString();
      output += text;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim().length > 0) onLine(line);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(output);
      const tail = output.trim().split('\n').slice(-8).join('\n');
      reject(
        new ServiceError(`infra/up.sh ${signal ? `was stopped by ${signal}` : `exited ${code}`}:\n${tail}`),
      );
    });
  });
}
