import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  localOwnerId,
  machineTag,
  ownerIsProvablyDead,
  parseOwnerId,
  processExists,
} from '../../../core/process-identity';

describe('process identity', () => {
  const here = { machine: 'abcdef012345', pid: 100 };

  it('makes owner ids that parse back to this process and machine', () => {
    const id = localOwnerId();
    const parsed = parseOwnerId(id);
    expect(machineTag()).toMatch(/^[0-9a-f]{12}$/); // Linux: boot id and PID namespace are readable
    expect(parsed).toEqual({ host: expect.any(String), pid: process.pid, machine: machineTag() });
    expect(localOwnerId()).not.toBe(id);
  });

  it('does not parse other formats (an operator instanceId, the pre-0.3 format)', () => {
    expect(parseOwnerId('my-instance')).toBeUndefined();
    expect(parseOwnerId('host-123-abcdef')).toBeUndefined();
    expect(parseOwnerId('host:123:abcdef')).toBeUndefined();
    expect(parseOwnerId('host:0:abcdef@abcdef012345')).toBeUndefined();
  });

  it('proves death only for a missing process of the same machine tag, never for itself', () => {
    const none = () => false;
    const all = () => true;
    expect(ownerIsProvablyDead('h:7:aa@abcdef012345', here, none)).toBe(true);
    expect(ownerIsProvablyDead('h:7:aa@abcdef012345', here, all)).toBe(false);
    expect(ownerIsProvablyDead('h:7:aa@ffffff012345', here, none)).toBe(false); // another machine/boot/namespace
    expect(ownerIsProvablyDead('h:100:aa@abcdef012345', here, none)).toBe(false); // this very process
    expect(ownerIsProvablyDead('instance-1', here, none)).toBe(false);
    expect(ownerIsProvablyDead('h:7:aa@abcdef012345', { machine: null, pid: 100 }, none)).toBe(false);
  });

  it('asks the kernel: a live child exists, the same pid after it exited does not', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const pid = child.pid as number;
    const owner = `somehost:${pid}:0a0b0c@${machineTag() as string}`;
    try {
      expect(processExists(pid)).toBe(true);
      expect(ownerIsProvablyDead(owner)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    expect(processExists(pid)).toBe(false);
    expect(ownerIsProvablyDead(owner)).toBe(true);
  });
});
