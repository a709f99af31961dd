import { parsePortRanges } from '@minimesh/config';
import { fromTcpAddress } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { EndpointIndex } from '../index/endpoint-index.js';
import type { PodRecord, ServiceRecord } from '../k8s/records.js';
import { ownerLabels, toWeightedAddr, type TranslatorOptions } from './endpoint-translator.js';
import { toProfile } from './profile-translator.js';

const OPTS: TranslatorOptions = {
  controllerNamespace: 'minimesh',
  identityTrustDomain: 'example.org',
  clusterDomain: 'cluster.local',
  defaultOpaquePorts: parsePortRanges('t', '3306'),
  enableH2Upgrade: true,
};

const pod = (over: Partial<PodRecord> = {}): PodRecord => ({
  namespace: 'shop',
  name: 'web-5d8f7-x2',
  ips: ['10.0.0.1'],
  serviceAccount: 'web',
  hostNetwork: false,
  terminating: false,
  ...over,
});

const svc = (over: Partial<ServiceRecord> = {}): ServiceRecord => ({
  namespace: 'shop',
  name: 'web',
  uid: 'u',
  type: 'ClusterIP',
  clusterIPs: ['10.96.0.10'],
  ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
  ...over,
});

describe('ownerLabels', () => {
  it.each([
    [
      { owner: { kind: 'ReplicaSet', name: 'web-5d8f7' }, podTemplateHash: '5d8f7' },
      { replicaset: 'web-5d8f7', deployment: 'web' },
    ],
    [{ owner: { kind: 'ReplicaSet', name: 'bare-rs' } }, { replicaset: 'bare-rs' }],
    [{ owner: { kind: 'StatefulSet', name: 'pg' } }, { statefulset: 'pg' }],
    [{ owner: { kind: 'DaemonSet', name: 'agent' } }, { daemonset: 'agent' }],
    [{ owner: { kind: 'Job', name: 'migrate' } }, { job: 'migrate' }],
    [{}, {}],
  ])('%j', (over, want) => expect(ownerLabels(pod(over))).toEqual(want));
});

describe('toWeightedAddr', () => {
  it('a meshed pod: weight, labels, identity in both fields, h2 hint', () => {
    const a = toWeightedAddr(
      {
        ip: '10.0.0.1',
        port: 8080,
        zone: 'z1',
        pod: pod({
          controlPlaneNs: 'minimesh',
          owner: { kind: 'ReplicaSet', name: 'web-5d8f7' },
          podTemplateHash: '5d8f7',
        }),
      },
      svc(),
      80,
      OPTS,
    );
    expect(fromTcpAddress(a.addr)).toEqual({ ip: '10.0.0.1', port: 8080 });
    expect(a.weight).toBe(10000);
    expect(a.metricLabels).toEqual({
      pod: 'web-5d8f7-x2',
      namespace: 'shop',
      serviceaccount: 'web',
      replicaset: 'web-5d8f7',
      deployment: 'web',
      pod_template_hash: '5d8f7',
      control_plane_ns: 'minimesh',
      zone: 'z1',
    });
    const id = 'web.shop.serviceaccount.identity.minimesh.example.org';
    expect(a.tlsIdentity).toEqual({
      strategy: { $case: 'dnsLikeIdentity', value: { name: id } },
      serverName: { name: id },
    });
    expect(a.protocolHint).toEqual({ protocol: { $case: 'h2', value: {} } });
  });

  it.each([
    ['default opaque port', pod({ controlPlaneNs: 'minimesh' }), svc(), 3306, 3306, 'opaque'],
    [
      'pod annotation replaces the defaults',
      pod({ controlPlaneNs: 'minimesh', opaquePorts: '9000-9010' }),
      svc(),
      3306,
      3306,
      'h2',
    ],
    ['pod annotation range', pod({ controlPlaneNs: 'minimesh', opaquePorts: '9000-9010' }), svc(), 9005, 80, 'opaque'],
    [
      'service annotation on the service port',
      pod({ controlPlaneNs: 'minimesh' }),
      svc({ opaquePorts: '80' }),
      8080,
      80,
      'opaque',
    ],
    [
      'unparseable annotation falls back to defaults',
      pod({ controlPlaneNs: 'minimesh', opaquePorts: 'mysql' }),
      svc(),
      8080,
      80,
      'h2',
    ],
  ])('%s', (_name, p, s, port, servicePort, want) => {
    expect(toWeightedAddr({ ip: '10.0.0.1', port, pod: p }, s, servicePort, OPTS).protocolHint?.protocol?.$case).toBe(
      want,
    );
  });

  it('an opaque endpoint also carries opaque transport to the inbound port', () => {
    expect(
      toWeightedAddr({ ip: '10.0.0.1', port: 3306, pod: pod({ controlPlaneNs: 'minimesh' }) }, svc(), 3306, OPTS)
        .protocolHint?.opaqueTransport,
    ).toEqual({ inboundPort: 4143 });
  });

  it('no h2 hint when upgrades are disabled', () => {
    expect(
      toWeightedAddr({ ip: '10.0.0.1', port: 8080, pod: pod({ controlPlaneNs: 'minimesh' }) }, svc(), 80, {
        ...OPTS,
        enableH2Upgrade: false,
      }).protocolHint,
    ).toBeUndefined();
  });

  it('an unmeshed pod has neither identity nor hint', () => {
    const a = toWeightedAddr({ ip: '10.0.0.1', port: 8080, pod: pod() }, svc(), 80, OPTS);
    expect(a.tlsIdentity).toBeUndefined();
    expect(a.protocolHint).toBeUndefined();
  });
});

describe('toProfile', () => {
  const index = new EndpointIndex();
  index.apply('service', svc({ opaquePorts: '5432' }));
  index.apply('pod', pod({ controlPlaneNs: 'minimesh' }));

  it('a ClusterIP answers with the Service name so the proxy can call Get', () => {
    const p = toProfile(index, { kind: 'ip', ip: '10.96.0.10', port: 80 }, OPTS);
    expect(p.fullyQualifiedName).toBe('web.shop.svc.cluster.local');
    expect(p.opaqueProtocol).toBe(false);
    expect(p.endpoint).toBeUndefined();
    expect(p.retryBudget).toEqual({ retryRatio: 0.2, minRetriesPerSecond: 10, ttl: { seconds: 10n, nanos: 0 } });
    expect(toProfile(index, { kind: 'ip', ip: '10.96.0.10', port: 5432 }, OPTS).opaqueProtocol).toBe(true);
  });

  it('a pod IP answers with the endpoint and its identity', () => {
    const p = toProfile(index, { kind: 'ip', ip: '10.0.0.1', port: 8080 }, OPTS);
    expect(p.fullyQualifiedName).toBe('');
    expect(fromTcpAddress(p.endpoint?.addr)).toEqual({ ip: '10.0.0.1', port: 8080 });
    expect(p.endpoint?.tlsIdentity?.serverName?.name).toBe('web.shop.serviceaccount.identity.minimesh.example.org');
  });

  it('an unknown IP answers with the bare address, opaque on default opaque ports', () => {
    const p = toProfile(index, { kind: 'ip', ip: '10.9.9.9', port: 3306 }, OPTS);
    expect(p.endpoint?.tlsIdentity).toBeUndefined();
    expect(p.opaqueProtocol).toBe(true);
  });

  it('a service name answers with its FQDN and the Service annotation', () => {
    expect(toProfile(index, { kind: 'service', namespace: 'shop', service: 'web', port: 5432 }, OPTS)).toMatchObject({
      fullyQualifiedName: 'web.shop.svc.cluster.local',
      opaqueProtocol: true,
    });
  });
});
