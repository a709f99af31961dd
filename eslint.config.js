// One lint config for the whole monorepo.
// House rules: no deep imports across packages (use the package's exports map), no import cycles,
// no console in package code (pino is the logger).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';

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
          patterns: [
            {
              group: ['@minimesh/*/src/*', '@minimesh/*/dist/*'],
              message: 'Import from the package entry (its exports map), not its internals.',
            },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
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
