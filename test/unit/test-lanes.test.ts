import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import {
  proxiedPort,
  registryUrl,
  securedKafkaPort,
  stackLane,
  stackPort,
  stackStateDir,
  testLane,
  testStacks,
} from '../support/ports';
import { filesUnder } from '../support/files';

const ROOT = resolve(__dirname, '..', '..');

/** Every port a stack of lane `lane` listens on (infra/lib.sh), as test/support/ports.ts computes it. */
function lanePorts(lane: number): number[] {
  const env = { TTLSTREAM_STACK_LANE: String(lane) };
  return [
    ...(['kafka', 'dynamodb', 's3', 'toxiproxy', 'registry'] as const).map((s) => stackPort(s, env)),
    ...(['kafka', 'dynamodb'] as const).map((s) => proxiedPort(s, env)),
    ...(['scram', 'mtls', 'oauth'] as const).map((l) => securedKafkaPort(l, env)),
  ];
}

/**
 * Integration suites run side by side, each jest worker on a stack of its own (decision 0021): a suite may stop, restart
 * or degrade its stack's services because no other suite uses that stack meanwhile. That holds only while every
 * suite reaches its stack through test/support (the lane the worker was given), never by a fixed address.
 */
describe('test lanes: one stack per jest worker', () => {
  it('lane N shifts every port by 100 × N and keeps its endpoints apart', () => {
    const lane0 = lanePorts(0);
    expect(lane0).toEqual([19092, 18000, 19000, 18474, 18081, 19095, 18001, 19096, 19097, 19098]);
    for (const lane of [1, 2, 9]) expect(lanePorts(lane)).toEqual(lane0.map((p) => p + 100 * lane));
    const all = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].flatMap(lanePorts);
    expect(new Set(all).size).toBe(all.length);
    expect(registryUrl({ TTLSTREAM_STACK_LANE: '2' })).toBe('http://127.0.0.1:18281/apis/ccompat/v7');
    expect(stackStateDir({})).toBe(resolve(ROOT, '.ttlstream'));
    expect(stackStateDir({ TTLSTREAM_STACK_LANE: '2' })).toBe(resolve(ROOT, '.ttlstream', 'lane-2'));
    expect(() => stackLane({ TTLSTREAM_STACK_LANE: '10' })).toThrow(/0 to 9/);
  });

  it('the integration environment gives worker N lane N-1 and the state dir ports.ts computes', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { laneVariables } = require('../jest/lane-environment.cjs') as {
      laneVariables(env: NodeJS.ProcessEnv): Record<string, string>;
    };
    for (const worker of [1, 2, 3]) {
      const vars = laneVariables({ JEST_WORKER_ID: String(worker), TTLSTREAM_TEST_STACKS: '3' });
      const lane = String(worker - 1);
      expect(vars.TTLSTREAM_STACK_LANE).toBe(lane);
      expect(vars.TTLSTREAM_LOCAL_STACK).toBe(stackStateDir({ TTLSTREAM_STACK_LANE: lane }));
      // A second suite in the same worker finds its variables already set and keeps them.
      expect(laneVariables({ ...vars, JEST_WORKER_ID: String(worker), TTLSTREAM_TEST_STACKS: '3' })).toEqual(
        vars,
      );
    }
    expect(() => laneVariables({ JEST_WORKER_ID: '4', TTLSTREAM_TEST_STACKS: '3' })).toThrow(
      /no stack of its own/,
    );
  });

  it('TTLSTREAM_TEST_FIRST_LANE shifts the lanes of a run, up to lane 9', () => {
    expect([0, 1, 2].map((i) => testLane(i, {}))).toEqual([0, 1, 2]);
    const env = { TTLSTREAM_TEST_FIRST_LANE: '7' };
    expect([0, 1, 2].map((i) => testLane(i, env))).toEqual([7, 8, 9]);
    expect(() => testLane(3, env)).toThrow(/lanes go up to 9/);
    expect(() => testLane(0, { TTLSTREAM_TEST_FIRST_LANE: '10' })).toThrow(/0 to 9/);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { laneVariables } = require('../jest/lane-environment.cjs') as {
      laneVariables(env: NodeJS.ProcessEnv): Record<string, string>;
    };
    expect(
      laneVariables({ ...env, JEST_WORKER_ID: '2', TTLSTREAM_TEST_STACKS: '3' }).TTLSTREAM_STACK_LANE,
    ).toBe('8');
  });

  it('jest runs no more workers than there are stacks', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const config = require('../../jest.config.js') as { maxWorkers: number };
    expect(config.maxWorkers).toBe(testStacks());
    expect(() => testStacks({ TTLSTREAM_TEST_STACKS: '0' })).toThrow(/1 to 10/);
  });

  it('no integration suite or helper names a stack port: each reaches its own lane through test/support/ports.ts', () => {
    const ports = new Set([0, 1, 2, 3].flatMap(lanePorts).map(String));
    const offenders: string[] = [];
    for (const file of [
      ...filesUnder(resolve(ROOT, 'test', 'integration')),
      ...filesUnder(resolve(ROOT, 'test', 'support')),
    ].filter((f) => f.endsWith('.ts'))) {
      if (file.endsWith(join('support', 'ports.ts'))) continue;
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          // The product's own default broker address, as a command prints it, is not a connection.
          if (line.includes('(default)')) return;
          for (const m of line.matchAll(/\b\d{5}\b/g))
            if (ports.has(m[0])) offenders.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
  });
});
