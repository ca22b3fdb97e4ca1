import { resolve } from 'node:path';
import { ROOT_DIR } from './ports';

/** The processes the suites start: the `ttlstream` command, the archiver's main and the fault suites' pipeline. */
export type Entrypoint = 'cli' | 'archiver' | 'pipeline';

const SOURCE: Record<Entrypoint, string> = {
  cli: 'cli/main.ts',
  archiver: 'archiver/main.ts',
  pipeline: 'test/support/pipeline-process.ts',
};

/** tsx's loader by its path, not its name: a suite may start the command in another working folder. */
const TSX_LOADER = resolve(ROOT_DIR, 'node_modules', 'tsx', 'dist', 'loader.mjs');

/** Where `npm run build` (and, for the pipeline process, global-setup.ts) puts each one's JavaScript. */
export const BUILT: Record<Entrypoint, string> = {
  cli: 'dist/cli/main.js',
  archiver: 'dist/archiver/main.js',
  pipeline: 'dist/test/support/pipeline-process.js',
};

/**
 * `TTLSTREAM_TEST_FROM=dist` (what .ci/run sets, after its build step): the suites start the built JavaScript, the
 * code that ships, instead of the sources through tsx. A process started through tsx costs about 0.6 s of CPU more
 * (its TypeScript is compiled at every start), and a full run starts several hundred of them on two cores.
 */
export function testsRunBuilt(env: NodeJS.ProcessEnv = process.env): boolean {
  const from = env.TTLSTREAM_TEST_FROM ?? 'source';
  if (from !== 'source' && from !== 'dist')
    throw new Error(`TTLSTREAM_TEST_FROM=${from}: expected "source" (through tsx, the default) or "dist"`);
  return from === 'dist';
}

/**
 * What follows `node` to start `entry`: `--import <tsx> <source>` or `<built>`, all absolute. Never the tsx CLI: it
 * relays signals to a child of its own and SIGKILLs one that does not acknowledge SIGTERM within 30 ms, and a crash
 * point must kill the process itself.
 */
export function nodeArgsFor(entry: Entrypoint, env: NodeJS.ProcessEnv = process.env): string[] {
  return testsRunBuilt(env)
    ? [resolve(ROOT_DIR, BUILT[entry])]
    : ['--import', TSX_LOADER, resolve(ROOT_DIR, SOURCE[entry])];
}
