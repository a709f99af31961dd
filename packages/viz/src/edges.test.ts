import { describe, expect, it } from 'vitest';
import { renderEdges, toEdgeRows, toEdgesJson } from './edges.js';
import type { Sample } from './prometheus.js';
import type { Workload } from './workloads.js';

const id = (sa: string, ns: string) => `${sa}.${ns}.serviceaccount.identity.minimesh.cluster.local`;
const workload = (name: string, sa: string): Workload => ({
  kind: 'deployment',
  namespace: 'demo',
  name,
  pods: [
    { name: `${name}-x`, namespace: 'demo', meshed: true, status: 'Running', ip: '', serviceAccount: sa, owners: {} },
  ],
});

describe('toEdgeRows', () => {
  const outbound: Sample[] = [
    {
      metric: {
        namespace: 'demo',
        deployment: 'client',
        dst_namespace: 'demo',
        dst_deployment: 'server',
        server_id: id('server', 'demo'),
        tls: 'true',
      },
      value: 1,
    },
    {
      metric: {
        namespace: 'demo',
        deployment: 'client',
        dst_namespace: 'legacy',
        dst_deployment: 'old',
        tls: 'no_identity',
        no_tls_reason: 'not_provided_by_service_discovery',
      },
      value: 1,
    },
  ];
  const inbound: Sample[] = [
    { metric: { namespace: 'demo', deployment: 'server', client_id: id('client', 'demo'), tls: 'true' }, value: 1 },
    { metric: { namespace: 'demo', deployment: 'server', client_id: id('other', 'demo'), tls: 'true' }, value: 1 },
    { metric: { namespace: 'demo', deployment: 'server', tls: 'no_identity' }, value: 1 },
  ];

  it('marks the mTLS edge secured with both identities, and the other with its reason', () => {
    const rows = toEdgeRows({
      kind: 'deployment',
      outbound,
      inbound,
      workloads: [workload('client', 'client'), workload('other', 'other')],
    });
    expect(rows).toEqual([
      {
        kind: 'deployment',
        src: 'client',
        srcNamespace: 'demo',
        dst: 'server',
        dstNamespace: 'demo',
        clientId: id('client', 'demo'),
        serverId: id('server', 'demo'),
        secured: true,
        msg: '',
      },
      {
        kind: 'deployment',
        src: 'client',
        srcNamespace: 'demo',
        dst: 'old',
        dstNamespace: 'legacy',
        clientId: '',
        serverId: '',
        secured: false,
        msg: 'not_provided_by_service_discovery',
      },
    ]);
    expect(renderEdges(rows)).toBe(
      [
        'SRC      DST      SRC_NS   DST_NS   SECURED',
        'client   server   demo     demo     √',
        'client   old      demo     legacy   ×',
        '',
      ].join('\n'),
    );
    expect(renderEdges(rows, { wide: true }).split('\n')[1]).toBe(
      `client   server   demo     demo     √         ${id('client', 'demo')}   ${id('server', 'demo')}`,
    );
    expect(toEdgesJson(rows)[0]).toMatchObject({
      src: 'client',
      dst: 'server',
      secured: true,
      client_id: id('client', 'demo'),
    });
  });

  it('without the source workload known, takes a client identity only when one matches the namespace', () => {
    const rows = toEdgeRows({ kind: 'deployment', outbound: outbound.slice(0, 1), inbound, workloads: [] });
    expect(rows[0]?.clientId).toBe('');
    const one = toEdgeRows({
      kind: 'deployment',
      outbound: outbound.slice(0, 1),
      inbound: inbound.slice(0, 1),
      workloads: [],
    });
    expect(one[0]?.clientId).toBe(id('client', 'demo'));
  });

  it('an edge with one plaintext series among mTLS ones is not secured', () => {
    const mixed = [
      outbound[0]!,
      { ...outbound[0]!, metric: { ...outbound[0]!.metric, tls: 'no_identity', server_id: '' } },
    ];
    const rows = toEdgeRows({ kind: 'deployment', outbound: mixed, inbound: [], workloads: [] });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ secured: false, msg: 'no_identity', serverId: id('server', 'demo') });
  });
});
