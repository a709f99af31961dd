import { describe, expect, it } from 'vitest';
import { formatResource, inboundLabel, outboundLabel, parseResource, ResourceError } from './resource.js';

describe('parseResource', () => {
  it.each([
    ['deploy', undefined, 'deployment', ''],
    ['deploy/web', undefined, 'deployment', 'web'],
    ['deployments', 'web', 'deployment', 'web'],
    ['Deployment/web-1', undefined, 'deployment', 'web-1'],
    ['po/web-7d9-x2', undefined, 'pod', 'web-7d9-x2'],
    ['sts', undefined, 'statefulset', ''],
    ['ds/agent', undefined, 'daemonset', 'agent'],
    ['ns/shop', undefined, 'namespace', 'shop'],
    ['job/migrate', undefined, 'job', 'migrate'],
    ['rs/web-7d9', undefined, 'replicaset', 'web-7d9'],
  ] as const)('%s %s → %s %s', (text, name, kind, expectedName) => {
    expect(parseResource(text, name)).toEqual({ kind, name: expectedName, namespace: '' });
  });

  it.each([
    ['service/web', undefined, '"service/web" is not a resource kind: expected one of namespace, deployment'],
    ['deploy/', undefined, '"deploy/": the name after "/" is empty'],
    ['deploy/Web', undefined, '"Web" is not a valid deployment name'],
    ['deploy/web', 'api', 'give the resource as kind/name or as kind name, not both'],
  ])('%s %s fails: %s', (text, name, message) => {
    expect(() => parseResource(text, name)).toThrow(ResourceError);
    expect(() => parseResource(text, name)).toThrow(message);
  });
});

describe('labels', () => {
  it('names the workload on its own series and as a destination', () => {
    expect(inboundLabel('deployment')).toBe('deployment');
    expect(outboundLabel('deployment')).toBe('dst_deployment');
    expect(inboundLabel('job')).toBe('k8s_job');
    expect(outboundLabel('job')).toBe('dst_job');
    expect(inboundLabel('namespace')).toBe('namespace');
    expect(outboundLabel('pod')).toBe('dst_pod');
  });

  it('prints resources as kubectl does', () => {
    expect(formatResource({ kind: 'deployment', name: 'web' })).toBe('deploy/web');
    expect(formatResource({ kind: 'pod', name: '' })).toBe('po');
  });
});
