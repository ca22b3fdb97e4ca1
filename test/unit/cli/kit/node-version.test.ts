import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { MINIMUM_NODE_MAJOR, unsupportedNodeLine } from '../../../../cli/kit/node-version';

const ROOT = resolve(__dirname, '../../../..');

describe('the Node.js version ttlstream starts on', () => {
  it('is the one package.json engines names', () => {
    const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(pkg.engines.node).toBe(`>=${MINIMUM_NODE_MAJOR}`);
  });

  it('accepts the minimum major and later ones', () => {
    expect(unsupportedNodeLine(`v${MINIMUM_NODE_MAJOR}.0.0`, '/usr/bin/node')).toBeUndefined();
    expect(unsupportedNodeLine('v25.1.0', '/usr/bin/node')).toBeUndefined();
  });

  it('refuses an older one in one line naming the version, the binary and the fix', () => {
    const line = unsupportedNodeLine('v20.20.2', '/usr/bin/node');
    expect(line).toBe(
      'ttlstream: Node.js v20.20.2 (/usr/bin/node) is older than the 24 this needs: install Node.js 24 or later, ' +
        'or in a ttlstream checkout run export PATH="$(bash scripts/ensure-node.sh):$PATH" first',
    );
    expect(line).not.toContain('\n');
  });

  it('refuses a version it cannot read rather than guess', () => {
    expect(unsupportedNodeLine('garbage', '/x/node')).toMatch(/^ttlstream: Node.js garbage \(\/x\/node\)/);
  });
});

// The real entry point, told by a preload that it runs on Node 20: it says the line and exits 2 before it calls an API
// Node 20 lacks (node:module enableCompileCache). A clone's quick start on Node 20 itself is checked by hand (README).
describe('cli/main.ts on an older Node.js', () => {
  it('exits 2 with the one line and no stack trace', () => {
    const pretend = "Object.defineProperty(process, 'version', { value: 'v20.20.2' })";
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--eval', `${pretend}; require(${JSON.stringify(resolve(ROOT, 'cli/main.ts'))})`],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(r.stderr).toBe(
      `ttlstream: Node.js v20.20.2 (${process.execPath}) is older than the 24 this needs: install Node.js 24 or later, ` +
        'or in a ttlstream checkout run export PATH="$(bash scripts/ensure-node.sh):$PATH" first\n',
    );
    expect(r.status).toBe(2);
  });
});
