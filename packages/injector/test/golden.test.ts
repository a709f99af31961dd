// Golden tests: each fixture pod → createPatch → applied with fast-json-patch (operations validated)
// → compared with test/golden/<fixture>.yaml. UPDATE_GOLDEN=1 rewrites the golden files on purpose.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonpatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createPatch, type PodLike } from '../src/index.js';
import { goldenDir, loadFixtures } from './helpers.js';

const update = process.env.UPDATE_GOLDEN === '1';
const fixtures = loadFixtures();

describe('golden patches', () => {
  it('has the fixtures the issue lists', () => {
    expect(fixtures.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'plain',
        'with-init-containers',
        'existing-volumes-env',
        'annotated-overrides',
        'malformed-overrides',
        'already-injected',
        'host-network',
        'namespace-opt-in',
        'classic-sidecar',
      ]),
    );
  });

  it.each(fixtures.map((f) => [f.name, f] as const))('%s', (name, f) => {
    const result = createPatch(f.pod, {
      config: f.config,
      namespace: f.namespace,
      namespaceAnnotations: f.namespaceAnnotations,
    });
    // validateOperation=true: an op whose parent is missing throws instead of being silently dropped.
    const patched = jsonpatch.applyPatch(structuredClone(f.pod), result.patch, true, false).newDocument as PodLike;
    const actual = stringify(
      {
        description: f.description,
        skipped: result.skipped ?? null,
        warnings: result.warnings,
        patchOps: result.patch.length,
        pod: patched,
      },
      { lineWidth: 0 },
    );
    const file = join(goldenDir, `${name}.yaml`);
    if (update || !existsSync(file)) {
      if (!update) throw new Error(`${file} is missing: run with UPDATE_GOLDEN=1 to create it, then review it`);
      mkdirSync(goldenDir, { recursive: true });
      writeFileSync(file, actual);
    }
    expect(actual).toBe(readFileSync(file, 'utf8'));
    // The input is never mutated.
    expect(patched === f.pod).toBe(false);

    // Re-admitting the result is a no-op.
    const again = createPatch(patched, {
      config: f.config,
      namespace: f.namespace,
      namespaceAnnotations: f.namespaceAnnotations,
    });
    expect(again.patch).toEqual([]);
    if (!result.skipped) expect(again.skipped?.reason).toBe('already-injected');
  });
});
