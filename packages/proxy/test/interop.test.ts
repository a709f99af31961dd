// Interop with Linkerd's own proxy, both directions, as root in network namespaces with proxy-init's
// real rules and minimesh's real control plane (identity, destination, policy) on the local cluster:
//   minimesh-proxy outbound → linkerd2-proxy inbound → app
//   linkerd2-proxy outbound → minimesh-proxy inbound → app
// HTTP/1.1 (Host preserved), HTTP/2, gRPC and WebSocket (an HTTP/1.1 Upgrade; text and binary messages
// both ways, then the close handshake), all over mTLS on both sides, with the client's identity seen by
// the inbound side. Runs when the linkerd2-proxy binary is given
// (MINIMESH_PEER_LINKERD2_PROXY, or /opt/minimesh-peers/linkerd2-proxy); otherwise it says why it is skipped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NetnsMesh, PROXY_UID, ROOT, findLinkerd2Proxy, waitFor } from './support/netns-mesh.js';
import { callAgent } from './support/pod-agent.js';
import { peerSkipReason, policyServer } from './support/policy-server.js';

const PEER = findLinkerd2Proxy();
const POLICY = policyServer();
const PROXY = join(ROOT, 'packages/proxy/dist/main.js');
const AGENT = join(ROOT, 'packages/proxy/test/apps/pod-agent.mjs');
const why = peerSkipReason('interop.test.ts', PEER, POLICY);

let mesh: NetnsMesh;
const ips: Record<string, string> = {};

/** Calls the client agent in `pod`. */
function agent<T = unknown>(pod: string, op: string, body: unknown): Promise<T> {
  return callAgent<T>(join(mesh.dir, `agent-${pod}.sock`), op, body);
}

type H1 = { status: number; headers: Record<string, string>; body: string; error?: string };
type H2 = { headers: Record<string, string>; trailers: Record<string, string>; body: string; error?: string };
/** The client agent's `websocket` op (apps/pod-agent.mjs, the `ws` package on both ends). */
type Ws = {
  status?: number;
  headers?: Record<string, string>;
  messages: string[];
  binaryBytes: number;
  binaryOk: boolean;
  closeCode?: number;
  error?: string;
};

describe.skipIf(why !== undefined)(`interop with linkerd2-proxy${why ? ` (skipped: ${why})` : ` (${PEER})`}`, () => {
  beforeAll(async () => {
    if (!existsSync(PROXY)) throw new Error(`${PROXY} is missing: build the packages first (npm run build)`);
    mesh = await NetnsMesh.create('mmi');
    // mm-c → (to-l5d) → l5d-s ; l5d-c → (to-mm) → mm-s
    await mesh.addPod('mm-c', 'mmclient');
    await mesh.addPod('l5d-s', 'l5dserver');
    await mesh.addPod('l5d-c', 'l5dclient');
    await mesh.addPod('mm-s', 'mmserver');
    const ports = [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'grpc', port: 81, targetPort: 8081 },
    ];
    ips['to-l5d'] = await mesh.service('to-l5d', ports, ['l5d-s']);
    ips['to-mm'] = await mesh.service('to-mm', ports, ['mm-s']);
    await mesh.startControlPlane({ policy: POLICY.argv });
    for (const pod of ['mm-c', 'l5d-s', 'l5d-c', 'mm-s']) await mesh.meshPod(pod);
    for (const pod of ['mm-s', 'l5d-s']) mesh.start(`app-${pod}`, [process.execPath, AGENT, 'server', pod], { pod });
    for (const pod of ['mm-c', 'l5d-c']) {
      mesh.start(`agent-${pod}`, [process.execPath, AGENT, 'client', join(mesh.dir, `agent-${pod}.sock`)], { pod });
      await waitFor(`the client agent in ${pod}`, () => existsSync(join(mesh.dir, `agent-${pod}.sock`)));
    }
    for (const pod of ['mm-c', 'mm-s'])
      mesh.start(`proxy-${pod}`, [process.execPath, PROXY], {
        pod,
        uid: PROXY_UID,
        env: mesh.minimeshEnv(pod, { MINIMESH_PROXY_LOG: 'info' }),
      });
    for (const pod of ['l5d-c', 'l5d-s'])
      mesh.start(`proxy-${pod}`, [PEER!], {
        pod,
        uid: PROXY_UID,
        env: await mesh.linkerdEnv(pod, '8080,8081', { LINKERD2_PROXY_LOG: 'warn,linkerd=info' }),
      });
    for (const pod of ['mm-c', 'mm-s', 'l5d-c', 'l5d-s']) await mesh.waitReady(pod, `proxy-${pod}`);
  }, 300_000);

  afterAll(async () => {
    await mesh?.destroy();
  }, 60_000);

  const directions = [
    { name: 'minimesh-proxy outbound → linkerd2-proxy inbound', client: 'mm-c', server: 'l5d-s', svc: 'to-l5d' },
    { name: 'linkerd2-proxy outbound → minimesh-proxy inbound', client: 'l5d-c', server: 'mm-s', svc: 'to-mm' },
  ];

  describe.each(directions)('$name', ({ client, server, svc }) => {
    const clientId = () => mesh.pod(client).identity;

    it('HTTP/1.1: 200, Host preserved, HTTP/1.1 at the app, the client identity seen by the inbound side', async () => {
      const host = mesh.fqdn(svc);
      const rs = await agent<H1[]>(client, 'h1', { ip: ips[svc], port: 80, host, n: 10, parallel: 2, agentKey: svc });
      expect(rs.map((r) => r.error ?? r.status)).toEqual(Array(10).fill(200));
      const body = JSON.parse(rs[0]!.body) as { app: string; headers: Record<string, string>; httpVersion: string };
      expect(body.app).toBe(server);
      expect(body.headers.host).toBe(host);
      expect(body.httpVersion).toBe('1.1');
      expect(body.headers['l5d-client-id']).toBe(clientId());
    });

    it('HTTP/2: 200 with the client identity', async () => {
      const r = await agent<H2>(client, 'h2', {
        ip: ips[svc],
        port: 81,
        authority: `${mesh.fqdn(svc)}:81`,
        path: '/x',
      });
      expect(r.error).toBeUndefined();
      expect(r.headers[':status']).toBe(200);
      const body = JSON.parse(r.body) as { app: string; headers: Record<string, string> };
      expect(body.app).toBe(server);
      expect(body.headers['l5d-client-id']).toBe(clientId());
    });

    it('gRPC unary and streaming: OK with trailers', async () => {
      const authority = `${mesh.fqdn(svc)}:81`;
      const unary = await agent<H2>(client, 'h2', {
        ip: ips[svc],
        port: 81,
        authority,
        path: '/test.Echo/Unary',
        grpc: true,
        messages: ['ping'],
      });
      expect(unary.error).toBeUndefined();
      expect(unary.body.slice(5)).toBe('ping');
      expect(unary.trailers['grpc-status']).toBe('0');
      const stream = await agent<H2>(client, 'h2', {
        ip: ips[svc],
        port: 81,
        authority,
        path: '/test.Echo/Stream',
        grpc: true,
        messages: ['a', 'bb', 'ccc'],
      });
      expect(stream.body.length).toBe(21);
      expect(stream.trailers['grpc-status']).toBe('0');
    });

    it('WebSocket: 101 through both proxies, text and binary both ways, closed cleanly, the client identity at the app', async () => {
      const host = mesh.fqdn(svc);
      const r = await agent<Ws>(client, 'websocket', {
        ip: ips[svc],
        port: 80,
        host,
        messages: 3,
        binaryBytes: 256 * 1024,
      });
      console.log(
        `WebSocket ${client} → ${server}: ${r.error ?? r.status}, ${r.messages?.length ?? 0} text messages, ` +
          `${r.binaryBytes} binary bytes back (${r.binaryOk ? 'unchanged' : 'CHANGED'}), close ${r.closeCode}`,
      );
      expect(r.error).toBeUndefined();
      expect(r.status).toBe(101);
      expect(r.headers?.['x-app']).toBe(server);
      // The server's greeting says what it saw of the handshake: the Upgrade, the Host, and the identity
      // the inbound proxy took from the mTLS connection.
      const hello = JSON.parse(r.messages[0]!) as {
        hello: string;
        headers: Record<string, string>;
        httpVersion: string;
      };
      expect(hello.hello).toBe(server);
      expect(hello.httpVersion).toBe('1.1');
      expect(hello.headers.upgrade).toBe('websocket');
      expect(hello.headers.host).toBe(host);
      expect(hello.headers['l5d-client-id']).toBe(clientId());
      // Client → server echoed; server → client (srv:1) answered and acknowledged.
      expect([...r.messages.slice(1)].sort()).toEqual([
        'echo:cli:1',
        'echo:cli:2',
        'echo:cli:3',
        'got:back:srv:1',
        'srv:1',
      ]);
      expect(r.binaryBytes).toBe(256 * 1024);
      expect(r.binaryOk).toBe(true);
      expect(r.closeCode).toBe(1000);
    });

    it('mTLS on both sides: the inbound proxy counts the requests as TLS from the client identity', () => {
      const m = mesh.podFetch(server, 'http://127.0.0.1:4191/metrics').body;
      const id = clientId().replace(/\./g, '\\.');
      expect(m).toMatch(new RegExp(`request_total\\{[^}]*direction="inbound"[^}]*tls="true"[^}]*client_id="${id}"`));
      const out = mesh.podFetch(client, 'http://127.0.0.1:4191/metrics').body;
      expect(out).toMatch(
        new RegExp(
          `request_total\\{[^}]*direction="outbound"[^}]*tls="true"[^}]*server_id="${mesh.pod(server).identity.replace(/\./g, '\\.')}"`,
        ),
      );
    });
  });
});
