import { mkdirSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector/promises';
import { join } from 'node:path';

/**
 * BENCH_CPU_PROFILE_DIR=<dir>: a V8 CPU profile of one measured phase of this process alone (not the seeding and
 * raw runs around it), written as <dir>/<name>.cpuprofile for Chrome DevTools or speedscope. Null when not asked.
 * Profiling slows the process a little: a profiled run's figures are not the ones to report.
 */
export async function startProfile(): Promise<{ stop(name: string): Promise<void> } | null> {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  if (!dir) return null;
  const session = new inspector.Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(name) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}
