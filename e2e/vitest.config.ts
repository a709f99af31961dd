import { mergeConfig } from 'vitest/config';
import { shared } from '../vitest.shared.js';

// The e2e workspace keeps its tests in chart/ (helm lint, template goldens, server-side dry-run) and
// specs/ (the mesh on a cluster, driver chosen by MINIMESH_E2E_DRIVER) besides the shared src/ and test/.
export default mergeConfig(shared, {
  test: { include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'chart/**/*.test.ts', 'specs/**/*.test.ts'] },
});
