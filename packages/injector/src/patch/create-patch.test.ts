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

  it('listens on [::] and on both loopbacks when IPv6 is on (and on IPv4 only when it is off)', () => {
    const pod: PodLike = {
      metadata: { annotations: { 'minimesh.io/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    const envOf = (ipv6: boolean) => {
      const out = apply(pod, createPatch(pod, { config: parseMeshConfig({ proxyInit: { ipv6 } }) }).patch);
      const proxy = out.spec?.initContainers?.find((c) => c.name === 'minimesh-proxy');
      return Object.fromEntries((proxy?.env ?? []).map((e) => [e.name, e.value]));
    };
    expect(envOf(true)).toMatchObject({
      MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '[::]:4143',
      MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140,[::1]:4140',
      MINIMESH_PROXY_ADMIN_LISTEN_ADDR: '[::]:4191',
      MINIMESH_PROXY_CONTROL_LISTEN_ADDR: '[::]:4190',
    });
    expect(envOf(false)).toMatchObject({
      MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '0.0.0.0:4143',
      MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140',
    });
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

  it('hands the default inbound policy to the proxy: pod annotation, else the namespace (copied onto the pod), else the config', () => {
    const key = 'config.minimesh.io/default-inbound-policy';
    const run = (podAnn: Record<string, string>, nsAnn: Record<string, string>, cfg = config) => {
      const pod: PodLike = {
        metadata: { annotations: { 'minimesh.io/inject': 'enabled', ...podAnn } },
        spec: { containers: [{ name: 'a' }] },
      };
      const r = createPatch(pod, { config: cfg, namespace: 'shop', namespaceAnnotations: nsAnn });
      const out = apply(pod, r.patch);
      const proxy = out.spec?.initContainers?.find((c) => c.name === 'minimesh-proxy');
      const env = Object.fromEntries((proxy?.env ?? []).map((e) => [e.name, e.value]));
      return { env, annotation: out.metadata?.annotations?.[key], warnings: r.warnings };
    };
    const plain = run({}, {});
    expect(plain.env.MINIMESH_PROXY_INBOUND_DEFAULT_POLICY).toBe('all-unauthenticated');
    expect(plain.annotation).toBeUndefined();
    expect(plain.env.MINIMESH_PROXY_POLICY_SVC_ADDR).toBe('minimesh-policy.minimesh.svc.cluster.local:8090');
    expect(plain.env.MINIMESH_PROXY_POLICY_SVC_NAME).toBe(
      'minimesh-destination.minimesh.serviceaccount.identity.minimesh.cluster.local',
    );
    expect(plain.env.MINIMESH_PROXY_POLICY_WORKLOAD).toBe('{"ns":"$(_pod_ns)","pod":"$(_pod_name)"}');
    expect(plain.env.MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS).toBe(config.clusterNetworks);
    const fromNs = run({}, { [key]: 'deny' });
    expect(fromNs.env.MINIMESH_PROXY_INBOUND_DEFAULT_POLICY).toBe('deny');
    expect(fromNs.annotation).toBe('deny');
    const podWins = run({ [key]: 'cluster-authenticated' }, { [key]: 'deny' });
    expect(podWins.env.MINIMESH_PROXY_INBOUND_DEFAULT_POLICY).toBe('cluster-authenticated');
    expect(podWins.annotation).toBe('cluster-authenticated');
    const cluster = run(
      {},
      {},
      parseMeshConfig({ identityTrustAnchorsPEM: 'PEM', proxy: { defaultInboundPolicy: 'cluster-unauthenticated' } }),
    );
    expect(cluster.env.MINIMESH_PROXY_INBOUND_DEFAULT_POLICY).toBe('cluster-unauthenticated');
    const bad = run({ [key]: 'allow-all' }, {});
    expect(bad.env.MINIMESH_PROXY_INBOUND_DEFAULT_POLICY).toBe('all-unauthenticated');
    expect(bad.warnings.join('\n')).toMatch(/default-inbound-policy.*allow-all/);
  });
});
