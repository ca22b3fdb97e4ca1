import { prepareTestTools } from './test-tools';

/** The unit project's one set-up: the deploy linters test/unit/deploy runs (test-tools.ts). */
export default async function unitGlobalSetup(globalConfig: { testPathPattern?: string }): Promise<void> {
  const pattern = globalConfig.testPathPattern ? new RegExp(globalConfig.testPathPattern, 'i') : undefined;
  if (pattern && !pattern.test('test/unit/deploy/deploy-lint.test.ts')) return;
  await prepareTestTools(['deploy']);
}
