import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderErrorDocs } from '../cli/kit/error-docs';

/** `npm run docs:errors`: regenerate docs/errors.md from core/error-codes.ts. */
const target = resolve(__dirname, '..', 'docs', 'errors.md');
writeFileSync(target, renderErrorDocs());
console.log(`wrote ${target}`);
