import { ConfigError } from './errors';
/**
 * Test-only crash points. `TTLSTREAM_CRASH_AT=<point>[@<n>][:stop][,...]` makes the process SIGKILL itself
 * on the nth hit (default the first) of a named point, so tests can prove that a crash at that exact step loses
 * nothing. Without the variable every call is a cheap no-op. SIGKILL (not an exception or exit) because that is the
 * crash we must survive: no finally blocks, no flushing, no graceful shutdown.
 *
 * `:stop` makes the process SIGSTOP itself there instead, frozen between two steps until the test sends SIGCONT:
 * how a test makes a race happen in an exact window (e.g. a writer changing an item between publish and delete).
 */

export type CrashAction = 'kill' | 'stop';

interface Armed {
  at: number;
  action: CrashAction;
  hits: number;
}

let parsedFrom: string | undefined;
let armed = new Map<string, Armed>();

/** Parse the env value; exported for unit tests. Throws on a malformed entry rather than silently never crashing. */
export function parseCrashPoints(raw: string): Map<string, number> {
  return new Map([...parseCrashSpec(raw)].map(([point, a]) => [point, a.at]));
}

/** Like parseCrashPoints, with each point's action. */
export function parseCrashSpec(raw: string): Map<string, { at: number; action: CrashAction }> {
  const out = new Map<string, { at: number; action: CrashAction }>();
  for (const entry of raw.split(',').map((s) => s.trim())) {
    if (entry === '') continue;
    const m = /^([a-z][a-z0-9.-]*)(?:@(\d+))?(?::(stop))?$/.exec(entry);
    if (!m || m[1] === undefined)
      throw new ConfigError(`TTLSTREAM_CRASH_AT: bad entry "${entry}" (expected point[@n][:stop])`);
    const n = m[2] === undefined ? 1 : Number(m[2]);
    if (n < 1) throw new ConfigError(`TTLSTREAM_CRASH_AT: "${entry}": n must be at least 1`);
    out.set(m[1], { at: n, action: m[3] === 'stop' ? 'stop' : 'kill' });
  }
  return out;
}

function current(): Map<string, Armed> {
  const raw = process.env.TTLSTREAM_CRASH_AT ?? '';
  if (raw !== parsedFrom) {
    parsedFrom = raw;
    armed = new Map([...parseCrashSpec(raw)].map(([point, a]) => [point, { ...a, hits: 0 }]));
  }
  return armed;
}

/** True when `point` is armed in this process (lets callers skip work that only exists to reach a point). */
export function crashPointArmed(point: string): boolean {
  return current().has(point);
}

/** Count a hit of `point`; on the armed hit, SIGKILL this process. */
export function crashPoint(point: string): void {
  if (process.env.TTLSTREAM_CRASH_AT === undefined) return;
  const a = current().get(point);
  if (!a) return;
  a.hits += 1;
  if (a.hits !== a.at) return;
  if (a.action === 'stop') {
    // Writes to a pipe are synchronous on Linux: the test sees this line before the process freezes.
    process.stderr.write(`ttlstream: stop point ${point} (hit ${a.hits}) reached: SIGSTOP\n`);
    process.kill(process.pid, 'SIGSTOP');
    return;
  }
  process.stderr.write(`ttlstream: crash point ${point} (hit ${a.hits}) reached: SIGKILL\n`);
  process.kill(process.pid, 'SIGKILL');
}
