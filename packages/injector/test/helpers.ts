// Shared by the injector's tests: fixtures, the mesh configuration they run with.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseMeshConfig, type MeshConfig } from '@minimesh/config';
import { parse } from 'yaml';
import type { PodLike, StringMap } from '../src/index.js';

export const here = dirname(fileURLToPath(import.meta.url));
export const fixturesDir = join(here, 'fixtures');
export const goldenDir = join(here, 'golden');

/** A fixed trust anchor so the golden files are stable (the sha256 annotation is derived from it). */
export const TEST_ANCHORS = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIQfixturefixturefixturefixtureMAoGCCqGSM49BAMC
-----END CERTIFICATE-----
`;

export interface Fixture {
  name: string;
  description: string;
  namespace: string;
  namespaceAnnotations: StringMap;
  config: MeshConfig;
  pod: PodLike;
}

export function testConfig(partial: Record<string, unknown> = {}): MeshConfig {
  return parseMeshConfig({ identityTrustAnchorsPEM: TEST_ANCHORS, ...partial });
}

export function loadFixtures(): Fixture[] {
  return readdirSync(fixturesDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => {
      const doc = parse(readFileSync(join(fixturesDir, file), 'utf8')) as {
        description: string;
        namespace: string;
        namespaceAnnotations?: StringMap;
        config?: Record<string, unknown>;
        pod: PodLike;
      };
      return {
        name: file.replace(/\.yaml$/, ''),
        description: doc.description,
        namespace: doc.namespace,
        namespaceAnnotations: doc.namespaceAnnotations ?? {},
        config: testConfig(doc.config ?? {}),
        pod: doc.pod,
      };
    });
}
