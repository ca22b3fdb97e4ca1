import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderConfigDocs } from '../cli/config/config-docs';

/** `npm run docs:config`: regenerate docs/configuration.md from the configuration schema. */
const target = resolve(__dirname, '..', 'docs', 'configuration.md');
writeFileSync(target, renderConfigDocs());
console.log(`wrote ${target}`);
