// One lint config for the whole monorepo.
// House rules: no deep imports across packages (use the package's exports map), no import cycles,
// no console in package code (pino is the logger), and no program users run (a package's src/)
// depends on @minimesh/local-cluster, the test cluster (tests, e2e and benches may).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';

const localClusterMessage =
  'Programs users run must not depend on the local test cluster: read the cluster through its API (tests, e2e and benches may import it).';
const deepImports = {
  group: ['@minimesh/*/src/*', '@minimesh/*/dist/*'],
  message: 'Import from the package entry (its exports map), not its internals.',
};

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/build/**', '**/gen/**', 'charts/**', '**/*.cjs', '**/.turbo/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: { ...globals.node } } },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-cycle': ['error', { maxDepth: 10, ignoreExternal: true }],
      'no-restricted-imports': [
        'error',
        {
          patterns: [deepImports],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // What users run reads the cluster the way users can (kubectl, the API), never the test cluster's internals.
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/local-cluster/**', '**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@minimesh/local-cluster', message: localClusterMessage }],
          patterns: [deepImports],
        },
      ],
      // The same for import('@minimesh/local-cluster'), which no-restricted-imports does not see.
      'no-restricted-syntax': [
        'error',
        { selector: "ImportExpression[source.value='@minimesh/local-cluster']", message: localClusterMessage },
      ],
    },
  },
  {
    // Tests, scripts, benchmarks and CLIs may print.
    files: [
      '**/*.test.ts',
      '**/test/**',
      'bench/**',
      'scripts/**',
      'e2e/**',
      '**/bench/**',
      'packages/cli/**',
      '**/scripts/**',
    ],
    rules: { 'no-console': 'off' },
  },
);
