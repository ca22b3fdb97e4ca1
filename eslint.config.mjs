import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** The product's folders (what the package ships), as opposed to tests, benchmarks and scripts. */
const PRODUCT = [
  'index.ts',
  ...[
    'core',
    'policy',
    'control',
    'client',
    'scanner',
    'pipeline',
    'producer',
    'schemas',
    'archive',
    'archive-tools',
    'archiver',
    'consumer',
    'cli',
  ].map((folder) => `${folder}/**/*.ts`),
];

/**
 * The product's layers, lowest first. A folder imports from its own layer and those below, never from a layer above,
 * so the archive's library knows nothing of its tools or the role, and the tools nothing of the role. Roles (and the
 * two client libraries) never import one another: what they share lives below them (pipeline/, archive/).
 */
const LAYERS = [
  ['core'],
  ['schemas', 'policy'],
  ['archive'],
  ['archive-tools', 'pipeline'],
  ['control'],
  ['scanner', 'producer', 'streams', 'archiver', 'consumer', 'client'],
  ['cli'],
];
const ROLES = LAYERS[5];

/** `import-x/no-restricted-paths` zones: each folder against the layers above it and, for a role, the other roles. */
function layerZones() {
  return LAYERS.flatMap((layer, i) =>
    layer.flatMap((folder) => {
      const above = LAYERS.slice(i + 1).flat();
      const siblings = ROLES.includes(folder) ? ROLES.filter((r) => r !== folder) : [];
      if (above.length + siblings.length === 0) return [];
      return {
        target: `./${folder}`,
        from: [...above, ...siblings].map((f) => `./${f}`),
        message: `layers point down (ARCHITECTURE.md): ${folder}/ imports neither a layer above it nor another role`,
      };
    }),
  );
}

const DOUBLING = 'A doubling wait is core/retry.ts backoffMs/backoffCeilingMs (one back-off).';
const GROWING = 'A wait that grows with each try is core/retry.ts withRetry or backoffMs (one back-off).';

/**
 * One back-off: a wait that grows is core/retry.ts's `withRetry`/`backoffMs` (or `backoffCeilingMs` for a poll), never
 * written again by hand. Refused: a power of two of a variable (`2 ** n`, `1 << n`, `Math.pow`), a doubling
 * (`x *= 2`, `delay * 2`), a wait variable grown in place (`delay += 100`), and a sleep whose length is computed from
 * a try counter (`sleep(100 * (attempt + 1))`). Powers of two of a constant (2 ** 31) are not waits and stay allowed;
 * a poll at a fixed interval (`sleep(100)`) is not a back-off.
 */
const WAIT_NAME = '/^(delay|wait|backoff|pause|interval|sleep)/i';
const TRY_COUNTER = '/^(attempts?|rounds?|retry|retries|tries|tried|failures)$/';
const ONE_BACKOFF = [
  {
    selector: "BinaryExpression[operator='**'][left.value=2]:not([right.type='Literal'])",
    message: DOUBLING,
  },
  {
    selector: "BinaryExpression[operator='<<'][left.value=1]:not([right.type='Literal'])",
    message: DOUBLING,
  },
  { selector: "CallExpression[callee.object.name='Math'][callee.property.name='pow']", message: DOUBLING },
  { selector: "AssignmentExpression[operator='*='][right.value=2]", message: DOUBLING },
  { selector: `BinaryExpression[operator='*'][right.value=2][left.name=${WAIT_NAME}]`, message: DOUBLING },
  { selector: `BinaryExpression[operator='*'][left.value=2][right.name=${WAIT_NAME}]`, message: DOUBLING },
  {
    selector: `AssignmentExpression[operator=/^[+*]=$/][left.name=${WAIT_NAME}]:not([right.value=2])`,
    message: GROWING,
  },
  {
    selector: `CallExpression[callee.name=/^(sleep|setTimeout)/] BinaryExpression Identifier[name=${TRY_COUNTER}]`,
    message: GROWING,
  },
];

/** DynamoDB's unprocessed items and keys are followed by pipeline/ddb-batch.ts (batchWriteAll, batchGetAll) alone. */
const UNPROCESSED_ELSEWHERE = [
  {
    selector:
      'MemberExpression[property.name=/^Unprocessed(Items|Keys)$/], Property[key.name=/^Unprocessed(Items|Keys)$/]',
    message:
      'BatchWriteItem/BatchGetItem go through pipeline/ddb-batch.ts batchWriteAll/batchGetAll (one loop over unprocessed items).',
  },
];

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
      'import-x/no-restricted-paths': ['error', { zones: layerZones() }],
    },
  },
  {
    // One back-off and one wait: see ONE_BACKOFF. The product's folders also have one loop over DynamoDB's
    // unprocessed items and keys (UNPROCESSED_ELSEWHERE).
    files: PRODUCT,
    ignores: ['core/retry.ts', 'pipeline/ddb-batch.ts'],
    rules: { 'no-restricted-syntax': ['error', ...ONE_BACKOFF, ...UNPROCESSED_ELSEWHERE] },
  },
  {
    ignores: ['core/retry.ts', ...PRODUCT],
    rules: { 'no-restricted-syntax': ['error', ...ONE_BACKOFF] },
  },
  {
    files: ['pipeline/ddb-batch.ts'],
    rules: { 'no-restricted-syntax': ['error', ...ONE_BACKOFF] },
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
