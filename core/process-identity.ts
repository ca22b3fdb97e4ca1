import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Who a lease owner is, and whether it is provably dead (decision 0020).
 *
 * A lease owner id made here reads `<host>:<pid>:<random>@<machine>`, where `<machine>` is a digest of the kernel's
 * boot id and this process's PID namespace. Two processes with the same `<machine>` see the same PIDs, so one of
 * them can ask the kernel whether the other still exists. When it does not, its leases are worthless to it and can
 * be taken over at once instead of waiting out `leaseMs`: that is what makes a restart after SIGKILL on the same
 * machine resume within seconds without any configuration.
 *
 * Only "provably dead" is acted on. A PID that exists (perhaps reused by an unrelated process), a PID we may not
 * signal, an owner from another machine, boot or container, or an id in another format (an operator's
 * `instanceId`) all count as alive, which only means waiting for the lease to expire as before.
 */

const OWNER_PATTERN = /^(?<host>[^:@]*):(?<pid>\d+):(?<nonce>[0-9a-f]+)@(?<machine>[0-9a-f]{12})$/;

let cachedMachine: string | null | undefined;

/** Digest of boot id + PID namespace; null where either cannot be read (not Linux, or /proc hidden). */
export function machineTag(): string | null {
  if (cachedMachine !== undefined) return cachedMachine;
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidNamespace = readlinkSync('/proc/self/ns/pid');
    cachedMachine =
      boot && pidNamespace
        ? createHash('sha256').update(`${boot}\n${pidNamespace}`).digest('hex').slice(0, 12)
        : null;
  } catch {
    cachedMachine = null;
  }
  return cachedMachine;
}

/** A fresh owner id for this process; `<host>:<pid>:<random>` plus the machine tag where there is one. */
export function localOwnerId(): string {
  const base = `${hostname().replace(/[:@]/g, '_')}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const machine = machineTag();
  return machine ? `${base}@${machine}` : base;
}

export interface ParsedOwner {
  host: string;
  pid: number;
  machine: string;
}

export function parseOwnerId(owner: string): ParsedOwner | undefined {
  const m = OWNER_PATTERN.exec(owner);
  if (!m?.groups) return undefined;
  const pid = Number(m.groups.pid);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return { host: m.groups.host ?? '', pid, machine: m.groups.machine ?? '' };
}

/** Does a process with this PID exist here? ESRCH is the only answer that means no. */
export type PidProbe = (pid: number) => boolean;

export const processExists: PidProbe = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

/**
 * True only when `owner` was made by `localOwnerId` on this machine, boot and PID namespace, is not this process,
 * and its process no longer exists.
 */
export function ownerIsProvablyDead(
  owner: string,
  here: { machine: string | null; pid: number } = { machine: machineTag(), pid: process.pid },
  exists: PidProbe = processExists,
): boolean {
  if (!here.machine) return false;
  const parsed = parseOwnerId(owner);
  if (!parsed || parsed.machine !== here.machine || parsed.pid === here.pid) return false;
  return !exists(parsed.pid);
}
