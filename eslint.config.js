// One lint config for the whole monorepo.
// House rules: no deep imports across packages (use the package's exports map), no import cycles,
// no console in package code (pino is the logger), and the layering of docs/architecture.md: a
// package's src/ imports only the packages below it (LAYERS), never a test fake, and no program users
// run depends on @minimesh/local-cluster, the test cluster (tests, e2e and benches may).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';

const LOCAL_CLUSTER = {
  group: ['@minimesh/local-cluster', '@minimesh/local-cluster/*'],
  message:
    'Programs users run must not depend on the local test cluster: read the cluster through its API (tests, e2e and benches may import it).',
};
const TEST_SUPPORT = {
  group: ['@minimesh/test-support', '@minimesh/test-support/*'],
  message: '@minimesh/test-support is for tests, benches and e2e only; no program or library imports it.',
};
const DEEP_IMPORTS = {
  group: ['@minimesh/*/src/*', '@minimesh/*/dist/*'],
  message: 'Import from the package entry (its exports map), not its internals.',
};

// Which @minimesh packages each package's src/ may import (docs/architecture.md, "Layers").
// Libraries sit at the bottom and import no program; a program imports libraries and, where it
// reuses a pure core, another program's index (cli: the injector's patch, proxy-init's nat model, the
// policy client, the viz commands). A new package adds its row here. (local-cluster, test-support and
// e2e are test harnesses: see their own rules.)
const LAYERS = {
  config: [],
  runtime: [],
  proto: ['config'],
  kube: ['runtime'],
  'proxy-init': ['config', 'runtime'],
  // proxy: of policy only @minimesh/policy/client (compiled policies, route matching; no kube).
  proxy: ['config', 'runtime', 'proto', 'policy'],
  policy: ['config', 'runtime', 'proto', 'kube'],
  destination: ['config', 'runtime', 'proto', 'kube'],
  identity: ['config', 'runtime', 'proto', 'kube'],
  injector: ['config', 'runtime', 'kube'],
  viz: ['config', 'runtime', 'proto', 'kube'],
  // cni: the plugin writes proxy-init's rules with proxy-init's own code (one home for the rules).
  cni: ['config', 'runtime', 'kube', 'proxy-init'],
  cli: ['config', 'runtime', 'proto', 'kube', 'injector', 'proxy-init', 'policy', 'viz'],
};
const PACKAGES = Object.keys(LAYERS);

// Type-aware rules (typescript-eslint's type-checked rules, the types from each package's own
// tsconfig.json through parserOptions.projectService): a promise nobody awaits or catches, a promise
// where a callback's return is ignored, a switch over a union that misses a member, an await of what
// is not a promise.
const TYPE_AWARE_RULES = {
  '@typescript-eslint/no-floating-promises': 'error',
  '@typescript-eslint/no-misused-promises': 'error',
  '@typescript-eslint/switch-exhaustiveness-check': 'error',
  '@typescript-eslint/await-thenable': 'error',
};

/** One type-aware block; a package that needs other type-aware rules adds its own block with this. */
export function typeAware(files, { ignores = [], rules = {} } = {}) {
  return {
    files,
    ignores,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { ...TYPE_AWARE_RULES, ...rules },
  };
}

const layerRules = Object.entries(LAYERS).map(([pkg, allowed]) => ({
  files: [`packages/${pkg}/src/**/*.ts`],
  ignores: ['**/*.test.ts', '**/testdata/**'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          DEEP_IMPORTS,
          LOCAL_CLUSTER,
          TEST_SUPPORT,
          ...PACKAGES.filter((p) => p !== pkg && !allowed.includes(p)).map((p) => ({
            group: [`@minimesh/${p}`, `@minimesh/${p}/*`],
            message: `@minimesh/${pkg} may import only ${allowed.map((a) => `@minimesh/${a}`).join(', ') || 'no other minimesh package'} (docs/architecture.md, "Layers").`,
          })),
          {
            group: ['@minimesh/kube/testing'],
            message: 'The in-memory API server is for tests; programs use @minimesh/kube.',
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/bundle/**',
      '**/node_modules/**',
      '**/build/**',
      '**/gen/**',
      'charts/**',
      '**/*.cjs',
      '**/.turbo/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: { ...globals.node } } },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-cycle': ['error', { maxDepth: 10, ignoreExternal: true }],
      'no-restricted-imports': ['error', { patterns: [DEEP_IMPORTS] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    // Every package's src/ (also one without a LAYERS row yet): never the test cluster. LAYERS rows
    // below replace this rule's options for their package and repeat LOCAL_CLUSTER.
    files: ['packages/*/src/**/*.ts'],
    ignores: ['packages/local-cluster/**', 'packages/test-support/**', '**/*.test.ts', '**/testdata/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [DEEP_IMPORTS, LOCAL_CLUSTER, TEST_SUPPORT] }],
      // The same for import('@minimesh/local-cluster'), which no-restricted-imports does not see.
      'no-restricted-syntax': [
        'error',
        { selector: 'ImportExpression[source.value=/^@minimesh\\/local-cluster/]', message: LOCAL_CLUSTER.message },
      ],
    },
  },
  ...layerRules,
  // Every package and e2e, as their tsconfig.json files include them. packages/proxy has its own
  // block (typeAware(['packages/proxy/src/**/*.ts', 'packages/proxy/test/**/*.ts'], ...)), added with
  // the proxy's stack of layers. bench/ has no tsconfig.json of its own and is not type-checked.
  typeAware(['packages/*/src/**/*.ts', 'packages/*/test/**/*.ts', 'e2e/**/*.ts'], {
    ignores: ['packages/proxy/**'],
  }),
  {
    // packages/proxy and its bench, type-checked (typescript-eslint reads each one's own tsconfig): no
    // promise left unhandled, no promise where a callback's result is ignored, no switch over a union
    // that misses a case. Self-contained, so each package can add its own such block.
    files: ['packages/proxy/**/*.ts', 'bench/proxy/**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['packages/proxy/vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
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
