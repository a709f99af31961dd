// The whole pure path: nat text + pod + question → numbered lines, and destination's answer
// (from a fake destination speaking the real proto on loopback) folded into them.
import { Server, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { destination, toTcpAddress } from '@minimesh/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover } from './discover.js';
import { explainConnection, parseHostPort } from './explain.js';
import type { PodLike } from './pod-facts.js';
import { LINKERD_ARGS_NAT } from './testdata/nat-fixtures.js';

const ID = 'web.shop.serviceaccount.identity.minimesh.cluster.local';
const POD: PodLike = {
  metadata: { name: 'client-1', namespace: 'shop' },
  spec: {
    serviceAccountName: 'client',
    containers: [{ name: 'app', ports: [{ containerPort: 8080 }], securityContext: { runAsUser: 1000 } }],
    initContainers: [
      { name: 'minimesh-init' },
      {
        name: 'minimesh-proxy',
        restartPolicy: 'Always',
        securityContext: { runAsUser: 2102 },
        env: [
          {
            name: 'MINIMESH_PROXY_IDENTITY_LOCAL_NAME',
            value: '$(_pod_sa).$(_pod_ns).serviceaccount.identity.minimesh.cluster.local',
          },
          { name: 'MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION', value: '25,3306' },
        ],
      },
    ],
  },
  status: { podIP: '10.23.0.7' },
};

describe('explainConnection', () => {
  it('outbound to a service, with destination saying two meshed endpoints: the brief example', () => {
    const e = explainConnection({
      natText: LINKERD_ARGS_NAT,
      pod: POD,
      to: { host: 'web.shop.svc.cluster.local', port: 80, ip: '10.247.0.10' },
      discovery: {
        authority: 'web.shop.svc.cluster.local:80',
        via: 'authority',
        exists: true,
        endpoints: [
          { addr: '10.23.0.8:8080', identity: ID },
          { addr: '10.23.0.9:8080', identity: ID },
        ],
      },
    });
    expect(e.outcome).toBe('redirected-to-proxy-outbound');
    expect(e.lines[0]).toBe(
      '1. A new outbound TCP connection from container app (uid 1000) to web.shop.svc.cluster.local:80 over eth0 enters the nat table at OUTPUT.',
    );
    expect(e.lines[1]).toBe(
      '2. OUTPUT rule 1 (proxy-init/install-proxy-init-output) jumps to PROXY_INIT_OUTPUT (it matches every packet).',
    );
    expect(e.lines[2]).toBe(
      "3. uid 1000 is not the proxy's uid 2102: PROXY_INIT_OUTPUT rule 1 (proxy-init/ignore-proxy-user-id) does not match.",
    );
    const last = e.lines[e.lines.length - 1] as string;
    expect(last).toMatch(/^7\. REDIRECT to 127\.0\.0\.1:4140: the proxy's outbound listener/);
    expect(last).toContain('original destination 10.247.0.10:80 with SO_ORIGINAL_DST');
    expect(last).toContain('resolves web.shop.svc.cluster.local:80');
    expect(last).toContain(`2 endpoints (10.23.0.8:8080, 10.23.0.9:8080), both meshed (identity ${ID}) → mTLS`);
  });

  it.each([
    [
      'no endpoints → plaintext to the original destination',
      { authority: 'x.shop.svc.cluster.local:80', via: 'authority' as const, exists: false, endpoints: [] },
      /knows no endpoints .* \(not a known service\): the proxy forwards to .* in plaintext/,
    ],
    [
      'an unmeshed endpoint → plaintext',
      { authority: 'a:80', via: 'authority' as const, exists: true, endpoints: [{ addr: '10.23.0.8:80' }] },
      /1 endpoint \(10\.23\.0\.8:80\), none meshed → plaintext/,
    ],
    [
      'destination unreachable',
      { via: 'authority' as const, exists: false, endpoints: [], error: 'no answer' },
      /could not be asked \(no answer\)/,
    ],
  ])('%s', (_n, discovery, pattern) => {
    const e = explainConnection({
      natText: LINKERD_ARGS_NAT,
      pod: POD,
      to: { host: 'web.shop.svc.cluster.local', port: 80 },
      discovery,
    });
    expect(e.lines.join('\n')).toMatch(pattern);
  });

  it('an opaque port skips protocol detection', () => {
    const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, to: { host: '10.23.0.20', port: 3306 } });
    expect(e.lines.join('\n')).toContain('port 3306 is opaque, so there is no protocol detection');
  });

  it('inbound to the app port names the pod identity and the forward to 127.0.0.1', () => {
    const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, port: 8080 });
    expect(e.outcome).toBe('redirected-to-proxy-inbound');
    expect(e.summary).toBe("redirected to the proxy's inbound listener on port 4143");
    const text = e.lines.join('\n');
    expect(text).toContain('client.shop.serviceaccount.identity.minimesh.cluster.local');
    expect(text).toContain('connects to the app at 127.0.0.1:8080');
  });

  it('without --port, the first container port is used, and said so', () => {
    const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD });
    expect(e.packet.dport).toBe(8080);
    expect(e.notes.join('\n')).toContain('no --port given: using the first container port, 8080 (app)');
  });

  it('a redirect to a proxy that is not ready says so, with where to look', () => {
    const notReady: PodLike = {
      ...POD,
      status: {
        ...POD.status,
        initContainerStatuses: [{ name: 'minimesh-proxy', ready: false, restartCount: 3, state: { running: {} } }],
      },
    };
    const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: notReady, port: 8080 });
    expect(e.lines[e.lines.length - 1]).toBe(
      '6. But the proxy is not ready (container minimesh-proxy running, 3 restarts): it listens, but until identity gives it a certificate it can neither originate nor terminate mTLS: connections to meshed endpoints fail with MINIMESH_PROXY_NOT_READY (HTTP 503), plaintext still passes. See: kubectl logs -n shop client-1 -c minimesh-proxy',
    );
    const crashing: PodLike = {
      ...POD,
      status: {
        ...POD.status,
        initContainerStatuses: [
          { name: 'minimesh-proxy', ready: false, state: { waiting: { reason: 'CrashLoopBackOff' } } },
        ],
      },
    };
    expect(explainConnection({ natText: LINKERD_ARGS_NAT, pod: crashing, port: 8080 }).lines.join('\n')).toContain(
      '(container minimesh-proxy waiting (CrashLoopBackOff)): nothing listens on its ports now, so this connection is refused',
    );
    const ready: PodLike = {
      ...POD,
      status: {
        ...POD.status,
        initContainerStatuses: [{ name: 'minimesh-proxy', ready: true, state: { running: {} } }],
      },
    };
    expect(explainConnection({ natText: LINKERD_ARGS_NAT, pod: ready, port: 8080 }).lines).toHaveLength(5);
    // Not redirected: the proxy's state does not matter.
    expect(explainConnection({ natText: LINKERD_ARGS_NAT, pod: notReady, port: 4191 }).lines.join('\n')).not.toContain(
      'not ready',
    );
  });

  it('an inbound port no container declares is pointed out', () => {
    expect(explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, port: 9000 }).notes.join('\n')).toContain(
      'no container declares port 9000 (declared: 8080)',
    );
    expect(explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, port: 8080 }).notes).toEqual([]);
  });

  it('inbound to 4191 reaches the admin server directly', () => {
    const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, port: 4191 });
    expect(e.outcome).toBe('not-redirected');
    expect(e.lines[e.lines.length - 1]).toMatch(/admin server/);
  });

  it('outbound as the proxy is not redirected, and says why that matters', () => {
    const e = explainConnection({
      natText: LINKERD_ARGS_NAT,
      pod: POD,
      to: { host: '10.23.0.8', port: 8080 },
      uid: 2102,
    });
    expect(e.outcome).toBe('not-redirected');
    expect(e.lines[0]).toContain('from the proxy (uid 2102)');
    expect(e.lines.join('\n')).toContain('without looping back into itself');
  });

  it('to the pod itself or localhost goes over lo', () => {
    for (const host of ['127.0.0.1', 'localhost', '10.23.0.7']) {
      const e = explainConnection({ natText: LINKERD_ARGS_NAT, pod: POD, to: { host, port: 8080 } });
      expect(e.packet.outInterface).toBe('lo');
      expect(e.outcome).toBe('not-redirected');
    }
  });

  it('a table without proxy-init chains says so', () => {
    const e = explainConnection({
      natText: '*nat\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n',
      pod: POD,
      to: { host: '10.1.1.1', port: 80 },
    });
    expect(e.outcome).toBe('not-redirected');
    expect(e.notes.join('\n')).toMatch(/no PROXY_INIT_\* chains/);
  });

  it.each([
    ['web:80', { host: 'web', port: 80 }],
    ['10.0.0.1:8080', { host: '10.0.0.1', port: 8080 }],
    ['[fd00::1]:443', { host: 'fd00::1', port: 443 }],
    ['web', undefined],
    ['web:0', undefined],
    ['web:99999', undefined],
  ])('parseHostPort %s', (text, want) => expect(parseHostPort(text)).toEqual(want));
});

describe('discover against a fake destination (real proto, loopback)', () => {
  const server = new Server();
  let addr = '';
  const requests: string[] = [];
  const weighted = (ip: string, port: number, identity?: string): destination.WeightedAddr => ({
    addr: toTcpAddress(ip, port),
    weight: 10000,
    metricLabels: {},
    ...(identity ? { tlsIdentity: { strategy: { $case: 'dnsLikeIdentity', value: { name: identity } } } } : {}),
  });
  beforeAll(async () => {
    server.addService(destination.DestinationService, {
      get(call: ServerWritableStream<destination.GetDestination, destination.Update>) {
        requests.push(`Get ${call.request.path}`);
        if (call.request.path === 'web.shop.svc.cluster.local:80') {
          call.write({
            update: {
              $case: 'add',
              value: { addrs: [weighted('10.23.0.8', 8080, ID), weighted('10.23.0.9', 8080, ID)], metricLabels: {} },
            },
          });
        } else {
          call.write({ update: { $case: 'noEndpoints', value: { exists: false } } });
        }
      },
      getProfile(call: ServerWritableStream<destination.GetDestination, destination.DestinationProfile>) {
        requests.push(`GetProfile ${call.request.path}`);
        const base = { routes: [], dstOverrides: [], opaqueProtocol: false, fullyQualifiedName: '' };
        if (call.request.path === '10.247.0.10:80')
          call.write({ ...base, fullyQualifiedName: 'web.shop.svc.cluster.local' });
        else if (call.request.path === '10.23.0.8:8080')
          call.write({ ...base, endpoint: weighted('10.23.0.8', 8080, ID) });
        else call.write(base);
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    addr = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  it('a service name: Get by authority', async () => {
    const d = await discover({ addr, host: 'web.shop.svc.cluster.local', port: 80, contextToken: '{}' });
    expect(d).toEqual({
      authority: 'web.shop.svc.cluster.local:80',
      via: 'authority',
      exists: true,
      endpoints: [
        { addr: '10.23.0.8:8080', identity: ID },
        { addr: '10.23.0.9:8080', identity: ID },
      ],
    });
  });
  it('a ClusterIP: GetProfile, then Get by the profile name', async () => {
    requests.length = 0;
    const d = await discover({ addr, host: '10.247.0.10', port: 80, contextToken: '{}' });
    expect(requests).toEqual(['GetProfile 10.247.0.10:80', 'Get web.shop.svc.cluster.local:80']);
    expect(d.endpoints).toHaveLength(2);
    expect(d.via).toBe('profile');
  });
  it('a pod IP: the profile endpoint itself', async () => {
    const d = await discover({ addr, host: '10.23.0.8', port: 8080, contextToken: '{}' });
    expect(d.endpoints).toEqual([{ addr: '10.23.0.8:8080', identity: ID }]);
  });
  it('an unknown address: not known', async () => {
    const d = await discover({ addr, host: '10.9.9.9', port: 80, contextToken: '{}' });
    expect(d.exists).toBe(false);
  });
  it('an unknown name: noEndpoints', async () => {
    const d = await discover({ addr, host: 'nope.shop.svc.cluster.local', port: 80, contextToken: '{}' });
    expect(d).toMatchObject({ exists: false, endpoints: [] });
  });
});
