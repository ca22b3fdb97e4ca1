import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderConfigDocs } from '../../../../cli/config/config-docs';
import { settingsTable } from '../../../../core/config';

describe('docs/configuration.md', () => {
  it('is up to date with the configuration schema (run `npm run docs:config` if this fails)', () => {
    const committed = readFileSync(resolve(__dirname, '../../../../docs/configuration.md'), 'utf8');
    expect(committed).toBe(renderConfigDocs());
  });

  it('documents every setting with its environment variable', () => {
    const doc = renderConfigDocs();
    for (const setting of settingsTable()) {
      expect(doc).toContain(`| \`${setting.path.join('.')}\` | \`${setting.env}\` |`);
    }
  });
});
