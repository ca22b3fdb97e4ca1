import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.ttlstream/**', 'infra/run/**', 'jest.config.js'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // jest's sequencer, reporter and worker count: CommonJS that jest loads untransformed.
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // Modules form a graph that points one way: a cycle makes load order decide what is undefined at start-up.
    // Only our own files are followed (external modules cannot import back into ours).
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // One back-off: a wait that doubles is core/retry.ts's `backoffMs` (or `backoffCeilingMs` for a poll), never
    // written again by hand. Powers of two of a constant (2 ** 31) are not waits and stay allowed.
    ignores: ['core/retry.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "BinaryExpression[operator='**'][left.value=2]:not([right.type='Literal'])",
          message: 'A doubling wait is core/retry.ts backoffMs/backoffCeilingMs (one back-off).',
        },
        {
          selector: "BinaryExpression[operator='<<'][left.value=1]:not([right.type='Literal'])",
          message: 'A doubling wait is core/retry.ts backoffMs/backoffCeilingMs (one back-off).',
        },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='pow']",
          message: 'A doubling wait is core/retry.ts backoffMs/backoffCeilingMs (one back-off).',
        },
        {
          selector: "AssignmentExpression[operator='*='][right.value=2]",
          message: 'A doubling wait is core/retry.ts backoffMs/backoffCeilingMs (one back-off).',
        },
      ],
    },
  },
  {
    // One way out: core/exit.ts `exitAfterOutput` ends the process once stdout and stderr have passed on what was
    // written. A bare process.exit drops what a pipe still holds (`ttlstream archive query … | jq` got 64 KiB and 0).
    files: ['**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'exit',
          message: 'end through core/exit.ts exitAfterOutput: process.exit drops output a pipe still holds',
        },
      ],
    },
  },
  {
    // Each role and part takes the slice of the configuration it reads, resolved once at start-up (the
    // `*OptionsFrom` of scanner/, producer/, archiver/ and control/api/options.ts), never the whole configuration.
    files: [
      'scanner/**/*.ts',
      'producer/**/*.ts',
      'streams/**/*.ts',
      'archiver/**/*.ts',
      'control/**/*.ts',
      'pipeline/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/core/config', '**/core/config-schema'],
              importNames: ['TtlstreamConfig'],
              message:
                'a role takes its own slice: type it with the sections it reads (ScannerSettings, ...) and resolve its options once at start-up',
            },
          ],
        },
      ],
    },
  },
);
