import { describe, expect, it } from 'vitest';
import { renderHosts } from './hosts.js';
import { expandVars } from './launch.js';
import { renderServiceRules } from './service-proxy.js';
import { fieldValue } from './fields.js';

const pod = {
  metadata: { name: 'web-1', namespace: 'shop', uid: 'u1', labels: { app: 'web' } },
  spec: { serviceAccountName: 'web', nodeName: 'mm-node' },
};
const svc = (
  ns: string,
  name: string,
  ip: string,
  ports: object[] = [{ name: 'http', port: 80, protocol: 'TCP' }],
) => ({ metadata: { namespace: ns, name }, spec: { clusterIP: ip, ports } });

describe('hosts', () => {
  it('lists the pod and every Service, with short names in the pod namespace only', () => {
    const text = renderHosts('10.23.1.5', pod, [
      svc('shop', 'api', '10.247.0.10'),
      svc('other', 'db', '10.247.0.11'),
      svc('shop', 'headless', 'None'),
    ]);
    expect(text).toContain('10.23.1.5\tweb-1');
    expect(text).toContain('10.247.0.10\tapi.shop.svc.cluster.local api.shop.svc api.shop api\n');
    expect(text).toContain('10.247.0.11\tdb.other.svc.cluster.local db.other.svc db.other\n');
    expect(text).not.toContain('headless');
  });
});

describe('env', () => {
  it('expands $(VAR) and keeps $$ and unknown references', () => {
    expect(expandVars('$(A)-$(B)-$$(A)', { A: 'x' })).toBe('x-$(B)-$(A)');
  });
  it.each([
    ['metadata.name', 'web-1'],
    ['metadata.namespace', 'shop'],
    ['spec.serviceAccountName', 'web'],
    ['status.podIP', '10.23.1.5'],
    ["metadata.labels['app']", 'web'],
  ])('fieldRef %s is %s', (path, value) => expect(fieldValue(pod, path, '10.23.1.5')).toBe(value));
});

describe('service rules', () => {
  it('DNATs a ClusterIP port to the ready endpoints only, by port name', () => {
    const slices = [
      {
        metadata: { namespace: 'shop', name: 'api-x', labels: { 'kubernetes.io/service-name': 'api' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: [
          { addresses: ['10.23.1.1'], conditions: { ready: true } },
          { addresses: ['10.23.1.2'], conditions: { ready: false } },
          { addresses: ['10.23.1.3'], conditions: { ready: true } },
        ],
      },
    ];
    const rules = renderServiceRules([svc('shop', 'api', '10.247.0.10'), svc('shop', 'empty', '10.247.0.12')], slices);
    expect(rules).toMatch(/-A MM-SERVICES -d 10\.247\.0\.10\/32 -p tcp -m tcp --dport 80 .* -j MM-SVC-/);
    expect(rules).toContain('--probability 0.5000000000 -j DNAT --to-destination 10.23.1.1:8080');
    expect(rules).toMatch(/-p tcp -j DNAT --to-destination 10\.23\.1\.3:8080/);
    expect(rules).not.toContain('10.23.1.2');
    expect(rules).not.toContain('10.247.0.12');
    expect(rules).toContain('MASQUERADE');
  });
});
