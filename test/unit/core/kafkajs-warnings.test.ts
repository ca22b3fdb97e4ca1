import { execFileSync } from 'node:child_process';
import { resolve, sep } from 'node:path';
import { isKafkajsNegativeTimeoutWarning } from '../../../core/kafkajs-warnings';

const queueFrame = `    at RequestQueue.scheduleCheckPendingRequests (${sep}app${sep}node_modules${sep}kafkajs${sep}src${sep}network${sep}requestQueue${sep}index.js:317:37)`;

describe('isKafkajsNegativeTimeoutWarning', () => {
  it("matches Node's TimeoutNegativeWarning raised from kafkajs' request queue, in each emitWarning form", () => {
    const warning = Object.assign(new Error('-1 is a negative number.'), { name: 'TimeoutNegativeWarning' });
    expect(
      isKafkajsNegativeTimeoutWarning(['-1 is a negative number.', 'TimeoutNegativeWarning'], queueFrame),
    ).toBe(true);
    expect(isKafkajsNegativeTimeoutWarning(['m', { type: 'TimeoutNegativeWarning' }], queueFrame)).toBe(true);
    expect(isKafkajsNegativeTimeoutWarning([warning], queueFrame)).toBe(true);
  });

  it('leaves other warnings and negative timeouts elsewhere alone', () => {
    expect(isKafkajsNegativeTimeoutWarning(['m', 'TimeoutOverflowWarning'], queueFrame)).toBe(false);
    expect(isKafkajsNegativeTimeoutWarning(['m', 'DeprecationWarning'], queueFrame)).toBe(false);
    expect(isKafkajsNegativeTimeoutWarning(['m'], queueFrame)).toBe(false);
    expect(
      isKafkajsNegativeTimeoutWarning(['m', 'TimeoutNegativeWarning'], '    at ours (/app/core/x.js:1:1)'),
    ).toBe(false);
  });
});

// Node prints a TimeoutNegativeWarning once per process, and jest's sandboxed `process` is not the one Node's timers
// warn through, so each case runs in a fresh Node (this one's binary: Node 24 in CI, scripts/ensure-node.sh).
const nodeMajor = Number(process.versions.node.split('.')[0]);

function warningsInChild(mute: boolean, trigger: 'kafkajs' | 'elsewhere'): string[] {
  const script = `
    const { createRequire } = require('node:module');
    const { muteKafkajsNegativeTimeoutWarning } = require(${JSON.stringify(resolve(__dirname, '../../../core/kafkajs-warnings.ts'))});
    const seen = [];
    process.on('warning', (w) => seen.push(w.name));
    if (${mute}) muteKafkajsNegativeTimeoutWarning();
    if (${JSON.stringify(trigger)} === 'kafkajs') {
      const RequestQueue = createRequire(require.resolve('kafkajs'))('./src/network/requestQueue');
      const silent = { error() {}, warn() {}, info() {}, debug() {} };
      const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 1000, clientId: 't', broker: 'b', logger: silent });
      queue.scheduleCheckPendingRequests();
      setTimeout(() => queue.destroy(), 10);
    } else {
      setTimeout(() => undefined, -5);
    }
    setTimeout(() => process.stdout.write(JSON.stringify(seen)), 30);
  `;
  const out = execFileSync(process.execPath, [require.resolve('tsx/cli'), '-e', script], {
    cwd: resolve(__dirname, '../../..'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return JSON.parse(out) as string[];
}

describe('muteKafkajsNegativeTimeoutWarning (real kafkajs request queue, real timers, fresh processes)', () => {
  const expected = nodeMajor >= 24 ? ['TimeoutNegativeWarning'] : [];

  it('kafkajs triggers the warning when nothing mutes it (so the next case can fail)', () => {
    expect(warningsInChild(false, 'kafkajs')).toEqual(expected);
  });

  it('drops the warning kafkajs causes', () => {
    expect(warningsInChild(true, 'kafkajs')).toEqual([]);
  });

  it('keeps the warning for a negative timeout anywhere else', () => {
    expect(warningsInChild(true, 'elsewhere')).toEqual(expected);
  });
});
