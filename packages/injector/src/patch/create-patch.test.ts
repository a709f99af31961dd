import jsonpatch from 'fast-json-patch';
import { parseMeshConfig } from '@minimesh/config';
import { describe, expect, it } from 'vitest';
import { createPatch, trustRootSha256 } from './create-patch.js';
import type { PodLike } from './types.js';

const config = parseMeshConfig({ identityTrustAnchorsPEM: 'PEM' });
const apply = (pod: PodLike, ops: unknown[]): PodLike =>
  jsonpatch.applyPatch(structuredClone(pod), ops as jsonpatch.Operation[], true, false).newDocument;

describe('createPatch', () => {
  it('adds missing parents (metadata, annotations, labels, initContainers, volumes) before their members', () => {
    const pod: PodLike = { spec: { containers: [{ name: 'a' }] } };
    const r = createPatch(pod, { config, namespace: 'ns', namespaceAnnotations: { 'minimesh.io/inject': 'enabled' } });
    expect(r.patch.slice(0, 2)).toEqual([
      { op: 'add', path: '/metadata', value: {} },
      { op: 'add', path: '/metadata/annotations', value: {} },
    ]);
    expect(r.patch.map((o) => o.path)).toContain('/metadata/annotations/minimesh.io~1created-by');
    const out = apply(pod, r.patch);
    expect(out.metadata?.annotations?.['minimesh.io/trust-root-sha256']).toBe(trustRootSha256('PEM'));
    expect(out.metadata?.labels).toEqual({
      'minimesh.io/control-plane-ns': 'minimesh',
      'minimesh.io/workload-ns': 'ns',
    });
  });

  it('does not mutate its input', () => {
    const pod: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    const before = JSON.stringify(pod);
    createPatch(pod, { config });
    expect(JSON.stringify(pod)).toBe(before);
  });

  it('tells control-plane pods by their namespace or control-plane labels, not by the workload label the patch adds', () => {
    const enabled = { 'minimesh.io/inject': 'enabled' };
    const workload: PodLike = {
      metadata: { annotations: enabled, labels: { 'minimesh.io/control-plane-ns': 'minimesh' } },
      spec: { containers: [{ name: 'a' }] },
    };
    expect(createPatch(workload, { config, namespace: 'shop' }).skipped).toBeUndefined();
    const labelled: PodLike = {
      metadata: { annotations: enabled, labels: { 'minimesh.io/is-control-plane': 'true' } },
      spec: { containers: [{ name: 'a' }] },
    };
    expect(createPatch(labelled, { config, namespace: 'shop' }).skipped?.reason).toBe('control-plane');
    expect(createPatch(workload, { config, namespace: 'minimesh' }).skipped?.reason).toBe('control-plane');
  });

  it('uses the namespace from the pod when the review has none, and omits workload-ns when neither has one', () => {
    const pod: PodLike = {
      metadata: { namespace: 'from-pod', annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    expect(apply(pod, createPatch(pod, { config }).patch).metadata?.labels?.['minimesh.io/workload-ns']).toBe(
      'from-pod',
    );
    const bare: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    expect(apply(bare, createPatch(bare, { config }).patch).metadata?.labels).toEqual({
      'minimesh.io/control-plane-ns': 'minimesh',
    });
  });

  it('adds --timeout-close-wait-secs and --ipv6=true from the config', () => {
    const cfg = parseMeshConfig({ proxyInit: { ipv6: true, closeWaitTimeoutSecs: 30 } });
    const pod: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    const out = apply(pod, createPatch(pod, { config: cfg }).patch);
    const args = out.spec?.initContainers?.[0]?.args ?? [];
    expect(args[0]).toBe('--ipv6=true');
    expect(args.slice(-2)).toEqual(['--timeout-close-wait-secs', '30']);
  });

  it('warns when the configuration has no trust anchors', () => {
    const pod: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    expect(createPatch(pod, { config: parseMeshConfig({}) }).warnings).toEqual([
      expect.stringMatching(/identityTrustAnchorsPEM is empty/),
    ]);
  });

  it('throws a typed error for a pod without a containers list (the webhook admits it unmeshed)', () => {
    const pod = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: 'x' },
    } as unknown as PodLike;
    expect(() => createPatch(pod, { config })).toThrow(expect.objectContaining({ code: 'MINIMESH_INJECTOR_BAD_POD' }));
  });
});
