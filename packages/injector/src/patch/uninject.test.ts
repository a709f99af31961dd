import jsonpatch from 'fast-json-patch';
import { parseMeshConfig } from '@minimesh/config';
import { describe, expect, it } from 'vitest';
import { createPatch } from './create-patch.js';
import type { PodLike } from './types.js';
import { uninjectPod } from './uninject.js';

const config = parseMeshConfig({ identityTrustAnchorsPEM: 'PEM' });

describe('uninjectPod', () => {
  it.each([
    [
      'bare',
      {
        metadata: { name: 'a', annotations: { 'minimesh.io/inject': 'enabled' } },
        spec: { containers: [{ name: 'app' }] },
      },
    ],
    [
      'full',
      {
        metadata: { name: 'b', labels: { app: 'b' }, annotations: { 'minimesh.io/inject': 'enabled', 'x/y': 'z' } },
        spec: {
          initContainers: [{ name: 'setup' }],
          volumes: [{ name: 'data', emptyDir: {} }],
          containers: [{ name: 'app' }],
        },
      },
    ],
    [
      'classic',
      {
        metadata: {
          name: 'c',
          annotations: { 'minimesh.io/inject': 'enabled', 'config.minimesh.io/proxy-enable-native-sidecar': 'false' },
        },
        spec: { containers: [{ name: 'app' }] },
      },
    ],
  ] as [string, PodLike][])('undoes the patch exactly (%s), apart from inject: enabled', (_name, pod) => {
    const injected = jsonpatch.applyPatch(
      structuredClone(pod),
      createPatch(pod, { config, namespace: 'ns' }).patch,
      true,
      false,
    ).newDocument;
    const { pod: back, changed } = uninjectPod(injected);
    expect(changed).toBe(true);
    const expected = structuredClone(pod);
    delete expected.metadata?.annotations?.['minimesh.io/inject'];
    if (expected.metadata?.annotations && Object.keys(expected.metadata.annotations).length === 0)
      delete expected.metadata.annotations;
    expect(back).toEqual(expected);
  });

  it('undoes the CNI-mode patch too (the validator, the recorded arguments)', () => {
    const cniConfig = parseMeshConfig({ identityTrustAnchorsPEM: 'PEM', cni: { enabled: true } });
    const pod: PodLike = {
      metadata: { name: 'd', annotations: { 'x/y': 'z' } },
      spec: { containers: [{ name: 'app' }] },
    };
    const result = createPatch(pod, {
      config: cniConfig,
      namespace: 'ns',
      namespaceAnnotations: { 'minimesh.io/inject': 'enabled' },
    });
    const injected = jsonpatch.applyPatch(structuredClone(pod), result.patch, true, false).newDocument;
    expect(injected.spec?.initContainers?.map((c) => c.name)).toEqual(['minimesh-network-validator', 'minimesh-proxy']);
    expect(uninjectPod(injected)).toEqual({ pod, changed: true });
  });

  it('keeps inject: disabled and reports unchanged pods', () => {
    const pod: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'disabled' } },
      spec: { containers: [{ name: 'app' }] },
    };
    expect(uninjectPod(pod)).toEqual({ pod, changed: false });
  });
});
