/**
 * The oldest Node.js major ttlstream runs on: package.json `engines` says the same (test/unit/cli/kit/node-version.test.ts
 * keeps them equal; docs/decisions/0015-node-24.md says why 24).
 */
export const MINIMUM_NODE_MAJOR = 24;

/**
 * The one line `ttlstream` prints before exiting 2 when started on an older Node.js, or undefined on a supported one.
 * It runs before anything else is loaded (cli/main.ts): an older Node would otherwise die of a missing API with a
 * stack trace (`enableCompileCache is not a function` on Node 20).
 */
export function unsupportedNodeLine(version: string, execPath: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isInteger(major) && major >= MINIMUM_NODE_MAJOR) return undefined;
  return (
    `ttlstream: Node.js ${version} (${execPath}) is older than the ${MINIMUM_NODE_MAJOR} this needs: ` +
    `install Node.js ${MINIMUM_NODE_MAJOR} or later, or in a ttlstream checkout run ` +
    `export PATH="$(bash scripts/ensure-node.sh):$PATH" first`
  );
}
