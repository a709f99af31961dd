// TLSRoute and TCPRoute parsing: the fields the index reads, in v1 and in the experimental channel's
// v1alpha2 (the same fields), the defaults of a backendRef, and the one-rule requirement.
import { describe, expect, it } from 'vitest';
import { FieldError } from './fields.js';
import { parseTcpRoute, parseTlsRoute } from './tls-tcp-route.js';

const meta = { name: 'r', namespace: 'shop', creationTimestamp: '2026-01-01T00:00:00Z' };
const egressParent = { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'out', port: 443 };

describe('parseTlsRoute', () => {
  it.each(['gateway.networking.k8s.io/v1', 'gateway.networking.k8s.io/v1alpha2'])(
    'reads %s: SNI hostnames (exact, *.suffix), parents, one rule of backendRefs',
    (apiVersion) => {
      const r = parseTlsRoute({
        apiVersion,
        kind: 'TLSRoute',
        metadata: meta,
        spec: {
          parentRefs: [egressParent],
          hostnames: ['api.example.com', '*.cdn.example.com'],
          rules: [
            {
              backendRefs: [
                { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'out' },
                { name: 'db', port: 5432, weight: 3 },
              ],
            },
          ],
        },
      });
      expect(r.group).toBe('gateway.networking.k8s.io');
      expect(r.hostnames).toEqual([
        { kind: 'exact', value: 'api.example.com' },
        { kind: 'suffix', reverseLabels: ['com', 'example', 'cdn'] },
      ]);
      expect(r.parents.map((p) => [p.kind, 'namespace' in p ? p.namespace : '', p.name])).toEqual([
        ['egress', 'shop', 'out'],
      ]);
      expect(r.rules[0].backendRefs).toEqual([
        { group: 'policy.minimesh.io', kind: 'EgressNetwork', name: 'out', namespace: 'shop', weight: 1, filters: [] },
        { group: '', kind: 'Service', name: 'db', namespace: 'shop', port: 5432, weight: 3, filters: [] },
      ]);
    },
  );

  it('without hostnames: none (every SNI)', () => {
    const r = parseTlsRoute({ kind: 'TLSRoute', metadata: meta, spec: { parentRefs: [egressParent], rules: [{}] } });
    expect(r.hostnames).toEqual([]);
    expect(r.rules[0].backendRefs).toEqual([]);
  });

  it.each([[[]], [[{}, {}]], [undefined]])('refuses rules %j: exactly one', (rules) => {
    expect(() =>
      parseTlsRoute({ kind: 'TLSRoute', metadata: meta, spec: { hostnames: ['a.example'], rules } }),
    ).toThrow(FieldError);
  });
});

describe('parseTcpRoute', () => {
  it('reads parents and the one rule; no hostnames', () => {
    const r = parseTcpRoute({
      apiVersion: 'gateway.networking.k8s.io/v1alpha2',
      kind: 'TCPRoute',
      metadata: meta,
      spec: { parentRefs: [{ ...egressParent, port: 5432 }], rules: [{ backendRefs: [{ name: 'db', port: 5432 }] }] },
    });
    expect(r.hostnames).toEqual([]);
    expect(r.rules[0].backendRefs.map((b) => `${b.kind} ${b.namespace}/${b.name}:${b.port} w${b.weight}`)).toEqual([
      'Service shop/db:5432 w1',
    ]);
  });

  it('refuses a TCPRoute with two rules', () => {
    expect(() => parseTcpRoute({ kind: 'TCPRoute', metadata: meta, spec: { rules: [{}, {}] } })).toThrow(
      'spec.rules: expected exactly one rule (a TCPRoute needs one rule)',
    );
  });
});
