/**
 * CPU time of processes, read from Linux's /proc: where a run's CPU went, per process. On this 2-vCPU machine the
 * benchmarks are CPU-bound, so "how many CPU seconds per deletion (or record), and in which process" explains a
 * ratio to the raw limit better than the wall clock does. Off Linux every figure is null.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackDataDir } from '../test/support/ports';

/** USER_HZ: the unit of utime/stime in /proc (100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

/** utime + stime of a process (all its threads) or of one thread, in seconds; null if it cannot be read. */
export function processCpuSeconds(pid: number, thread?: number): number | null {
  try {
    const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
    const stat = readFileSync(path, 'utf8');
    // The command name is parenthesised and may hold spaces; utime and stime are fields 14 and 15 overall.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** Bytes a process has caused to be written to storage (/proc/<pid>/io `write_bytes`); null if it cannot be read. */
export function processWrittenBytes(pid: number): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/io`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('write_bytes:'));
    return line === undefined ? null : Number(line.slice('write_bytes:'.length).trim());
  } catch {
    return null;
  }
}

/**
 * CPU seconds of a process's threads by kind, from their names (/proc/<pid>/task/<tid>/comm): `main` (the event
 * loop: JavaScript), `v8` (V8's workers: concurrent GC and the optimising compiler), `libuv` (the thread pool: zlib,
 * file system, crypto) and `other`. Null off Linux. Threads that ended are not counted.
 */
export function threadCpuSeconds(pid: number): Record<'main' | 'v8' | 'libuv' | 'other', number> | null {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const out = { main: 0, v8: 0, libuv: 0, other: 0 };
  for (const tid of tids) {
    const seconds = processCpuSeconds(pid, Number(tid));
    if (seconds === null) continue;
    let name = '';
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const kind =
      Number(tid) === pid
        ? 'main'
        : name.startsWith('V8')
          ? 'v8'
          : name.startsWith('libuv')
            ? 'libuv'
            : 'other';
    out[kind] += seconds;
  }
  return out;
}

/** Busy CPU seconds of the whole machine (every process, all CPUs), from /proc/stat; null off Linux. */
export function machineBusySeconds(): number | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, ...ticks] = line.trim().split(/\s+/).map(Number);
    // user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
    const busy = ticks.reduce((a, b, i) => (i === 3 || i === 4 ? a : a + b), 0);
    return busy / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/**
 * The pid of a local-stack service started by this checkout on the lane of TTLSTREAM_STACK_LANE (infra/lib.sh:
 * infra/run/pids/<service>.pid, or infra/run/lane-N/pids/), if it is alive.
 */
export function stackServicePid(service: 'kafka' | 'dynamodb' | 's3' | 'toxiproxy' | 'moto'): number | null {
  try {
    const pid = Number(readFileSync(join(stackDataDir(), 'pids', `${service}.pid`), 'utf8').trim());
    return Number.isInteger(pid) && processCpuSeconds(pid) !== null ? pid : null;
  } catch {
    return null;
  }
}

/** Named processes to measure; a pid of null (not found) is reported as null. */
export type CpuSubjects = Record<string, number | null>;

/** CPU seconds per named process, and the machine's busy seconds, over a span. */
export interface CpuSpan {
  seconds: Record<string, number | null>;
  machineBusySeconds: number | null;
}

/** Starts measuring now; the returned function ends the span. */
export function measureCpu(subjects: () => CpuSubjects): () => CpuSpan {
  const read = (): Record<string, number | null> =>
    Object.fromEntries(
      Object.entries(subjects()).map(([name, pid]) => [name, pid === null ? null : processCpuSeconds(pid)]),
    );
  const before = read();
  const machine0 = machineBusySeconds();
  return () => {
    const after = read();
    const machine1 = machineBusySeconds();
    const seconds = Object.fromEntries(
      Object.entries(after).map(([name, s]) => {
        const b = before[name];
        return [name, s === null || b === null || b === undefined ? null : s - b];
      }),
    );
    return {
      seconds,
      machineBusySeconds: machine0 === null || machine1 === null ? null : machine1 - machine0,
    };
  };
}

/** One reading of every subject's CPU seconds (null: unknown) at Date.now() `t`. */
interface CpuReading {
  t: number;
  seconds: Record<string, number | null>;
  machine: number | null;
}

/**
 * Reads the subjects' CPU every `intervalMs`, so the CPU of a span known only afterwards (a scanner's first pass,
 * found in its progress samples) can be taken from the series: `between(t0, t1)` uses the last reading at or before
 * t0 and the first at or after t1, so the span measured covers the one asked for (by up to one interval each side).
 */
export class CpuSeries {
  private readonly readings: CpuReading[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly subjects: () => CpuSubjects,
    intervalMs = 250,
  ) {
    this.read();
    this.timer = setInterval(() => this.read(), intervalMs);
    this.timer.unref();
  }

  private read(): void {
    const seconds = Object.fromEntries(
      Object.entries(this.subjects()).map(([name, pid]) => [
        name,
        pid === null ? null : processCpuSeconds(pid),
      ]),
    );
    this.readings.push({ t: Date.now(), seconds, machine: machineBusySeconds() });
  }

  stop(): void {
    clearInterval(this.timer);
    this.read();
  }

  between(t0: number, t1: number): CpuSpan | null {
    const a = [...this.readings].reverse().find((r) => r.t <= t0);
    const b = this.readings.find((r) => r.t >= t1);
    if (!a || !b) return null;
    const seconds = Object.fromEntries(
      Object.entries(b.seconds).map(([name, s]) => {
        const before = a.seconds[name];
        // A subject that was not running yet at t0 (a process started within the span) counts from zero.
        return [name, s === null ? null : before === null || before === undefined ? s : s - before];
      }),
    );
    return {
      seconds,
      machineBusySeconds: a.machine === null || b.machine === null ? null : b.machine - a.machine,
    };
  }
}
