// Shared vitest settings: each package's vitest.config.ts is three lines that import this.
import { defineConfig } from 'vitest/config';

export const shared = defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 600_000,
    // Integration tests create network namespaces and share one local cluster: run files one at a time.
    fileParallelism: false,
    // The JSON report lets scripts/test.sh print one 'N passed, N failed' line for the whole repo.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
