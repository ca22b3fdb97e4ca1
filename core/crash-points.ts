/**
 * Test-only crash points. `TTLSTREAM_CRASH_AT=<point>[@<n>][,<point>[@<n>]...]` makes the process SIGKILL itself
 * on the nth hit (default the first) of a named point, so tests can prove that a crash at that exact step loses
 * nothing. Without the variable every call is a cheap no-op. SIGKILL (not an exception or exit) because that is the
 * crash we must survive: no finally blocks, no flushing, no graceful shutdown.
 */

interface Armed {
  at: number;
  hits: number;
}

let parsedFrom: string | undefined;
let armed = new Map<string, Armed>();

/** Parse the env value; exported for unit tests. Throws on a malformed entry rather than silently never crashing. */
export function parseCrashPoints(raw: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const entry of raw.split(',').map((s) => s.trim())) {
    if (entry === '') continue;
    const m = /^([a-z][a-z0-9.-]*)(?:@(\d+))?$/.exec(entry);
    if (!m || m[1] === undefined)
      throw new Error(`TTLSTREAM_CRASH_AT: bad entry "${entry}" (expected point[@n])`);
    const n = m[2] === undefined ? 1 : Number(m[2]);
    if (n < 1) throw new Error(`TTLSTREAM_CRASH_AT: "${entry}": n must be at least 1`);
    out.set(m[1], n);
  }
  return out;
}

function current(): Map<string, Armed> {
  const raw = process.env.TTLSTREAM_CRASH_AT ?? '';
  if (raw !== parsedFrom) {
    parsedFrom = raw;
    armed = new Map([...parseCrashPoints(raw)].map(([point, at]) => [point, { at, hits: 0 }]));
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
  if (a.hits === a.at) {
    process.stderr.write(`ttlstream: crash point ${point} (hit ${a.hits}) reached: SIGKILL\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
