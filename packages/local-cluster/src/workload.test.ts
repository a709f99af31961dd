import { describe, expect, it } from 'vitest';
import { SIMULATED_NODE_TAINT, simulatedNode } from './kwok.js';
import { collectionPath, deploymentObjects, namespaceObjects, workloadLayout } from './workload.js';

describe('workloadLayout', () => {
  it.each([
    [0, 10, 20, 0, 0],
    [200, 10, 10, 20, 2],
    [5000, 10, 20, 500, 25],
    [25, 10, 20, 3, 1],
  ])('%i pods, %i per Deployment, %i per namespace: %i Deployments in %i namespaces', (pods, per, perNs, deps, nss) => {
    const l = workloadLayout({ pods, podsPerDeployment: per, deploymentsPerNamespace: perNs });
    expect(l.deployments).toHaveLength(deps);
    expect(l.namespaces).toHaveLength(nss);
    expect(l.deployments.reduce((n, d) => n + d.replicas, 0)).toBe(pods);
  });

  it('gives the remainder to the last Deployment and names them per namespace', () => {
    const l = workloadLayout({ pods: 25, prefix: 'big' });
    expect(l.deployments.map((d) => `${d.namespace}/${d.name}:${d.replicas}`)).toEqual([
      'big-0/web-0:10',
      'big-0/web-1:10',
      'big-0/web-2:5',
    ]);
  });

  it.each([
    [{ pods: -1 }, 'pods -1'],
    [{ pods: 1.5 }, 'pods 1.5'],
    [{ pods: 10, podsPerDeployment: 0 }, 'podsPerDeployment 0'],
    [{ pods: 10, prefix: 'Bad_Name' }, 'prefix "Bad_Name"'],
  ])('rejects %j with a clear message', (spec, what) => {
    expect(() => workloadLayout(spec)).toThrow(`workload: ${what} is not valid`);
  });
});

describe('deploymentObjects', () => {
  const d = { namespace: 'mm-scale-0', name: 'web-3', replicas: 10 };

  it('puts the pods on the simulated nodes only, with a Service kube-proxy leaves alone', () => {
    const [sa, dep, svc] = deploymentObjects(d, []);
    expect(sa).toMatchObject({ kind: 'ServiceAccount', metadata: { name: 'web-3', namespace: 'mm-scale-0' } });
    const pod = dep!.spec.template.spec;
    expect(pod.nodeSelector).toEqual({ type: 'kwok' });
    expect(pod.tolerations).toEqual([{ ...SIMULATED_NODE_TAINT, operator: 'Equal' }]);
    expect(pod.serviceAccountName).toBe('web-3');
    expect(svc!.metadata.labels['service.kubernetes.io/service-proxy-name']).toBe('simulated');
    expect(svc!.spec).toMatchObject({ selector: { app: 'web-3' }, ports: [{ port: 80, targetPort: 8080 }] });
  });

  it("labels the pods and adds the sidecars as a mesh's injector would, the generator's own labels kept", () => {
    const proxy = { name: 'linkerd-proxy', image: 'registry.k8s.io/pause:3.10' };
    const [, dep] = deploymentObjects(d, [], {
      labels: { 'linkerd.io/control-plane-ns': 'cp', app: 'not-this' },
      sidecars: [proxy],
    });
    expect(dep!.spec.template.metadata.labels).toMatchObject({ 'linkerd.io/control-plane-ns': 'cp', app: 'web-3' });
    expect(dep!.spec.selector.matchLabels).toEqual({ app: 'web-3' });
    expect(dep!.spec.template.spec.containers.map((c: { name: string }) => c.name)).toEqual(['app', 'linkerd-proxy']);
  });

  it('adds a Server, an AuthorizationPolicy and an HTTPRoute per policy group', () => {
    const objs = deploymentObjects(d, ['policy.minimesh.io', 'policy.linkerd.io']);
    expect(objs.map((o) => `${o.apiVersion} ${o.kind}`)).toEqual([
      'v1 ServiceAccount',
      'apps/v1 Deployment',
      'v1 Service',
      'policy.minimesh.io/v1beta3 Server',
      'policy.minimesh.io/v1alpha1 AuthorizationPolicy',
      'policy.minimesh.io/v1beta3 HTTPRoute',
      'policy.linkerd.io/v1beta3 Server',
      'policy.linkerd.io/v1alpha1 AuthorizationPolicy',
      'policy.linkerd.io/v1beta3 HTTPRoute',
    ]);
    expect(objs[4]!.spec.targetRef).toEqual({ group: 'policy.minimesh.io', kind: 'Server', name: 'web-3' });
    expect(objs[5]!.spec.parentRefs).toEqual([{ group: 'core', kind: 'Service', name: 'web-3', port: 80 }]);
  });

  it('knows where each object is created', () => {
    const paths = [
      ...namespaceObjects('mm-scale-0', ['policy.minimesh.io']),
      ...deploymentObjects(d, ['policy.minimesh.io']),
    ].map(collectionPath);
    expect(paths).toEqual([
      '/api/v1/namespaces',
      '/apis/policy.minimesh.io/v1alpha1/namespaces/mm-scale-0/meshtlsauthentications',
      '/api/v1/namespaces/mm-scale-0/serviceaccounts',
      '/apis/apps/v1/namespaces/mm-scale-0/deployments',
      '/api/v1/namespaces/mm-scale-0/services',
      '/apis/policy.minimesh.io/v1beta3/namespaces/mm-scale-0/servers',
      '/apis/policy.minimesh.io/v1alpha1/namespaces/mm-scale-0/authorizationpolicies',
      '/apis/policy.minimesh.io/v1beta3/namespaces/mm-scale-0/httproutes',
    ]);
  });
});

describe('simulatedNode', () => {
  it('is a Node kwok manages, tainted so real pods stay off', () => {
    expect(simulatedNode(7)).toMatchObject({
      kind: 'Node',
      metadata: { name: 'kwok-7', annotations: { 'kwok.x-k8s.io/node': 'fake' }, labels: { type: 'kwok' } },
      spec: { taints: [{ key: 'kwok.x-k8s.io/node', value: 'fake', effect: 'NoSchedule' }] },
    });
  });
});
