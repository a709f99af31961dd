// The whole proxy on loopback, in-process: client → outbound proxy A → mTLS → inbound proxy B → app,
// against fake identity/destination speaking the real proto. The original destination comes from a
// function (loopback has no iptables); the netns integration test covers the real interception.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as h1request, Agent } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { connect as netConnect, createServer as createTcpServer, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { createTestPki } from './support/pki.js';
import { startFakeControlPlane, type FakeControlPlane } from './support/fake-control-plane.js';
import { removeTempDirs, startHarnessProxy, tempDir } from './support/harness.js';
import { bannerServer, grpcFrame, h1Echo, h2Echo, listen, oneRequestPerConnection } from './support/apps.js';
import type { RunningProxy } from '../src/index.js';
import { credentials } from '@grpc/grpc-js';
import { destination, identity } from '@minimesh/proto';
import { createKeyAndCsr } from '../src/identity/csr.js';
import { CertifyClient } from '../src/identity/certify-client.js';
import { TlsCredentials } from '../src/tls/credentials.js';
import { ProxyMetrics } from '../src/metrics/metrics.js';
import { Registry } from 'prom-client';
import { createLogger } from '@minimesh/runtime';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const WEB = 'web.default.svc.cluster.local:80';

let cp: FakeControlPlane;
const closing = oneRequestPerConnection();
let grpcApp: FakeControlPlane;
let pkiAnchor = '';
let a: RunningProxy;
let b: RunningProxy;
const servers: Array<{ close(): unknown }> = [];
const appPorts: Record<string, number> = {};

function get(
  port: number,
  path: string,
  headers: Record<string, string>,
  agent?: Agent,
  host = '127.0.0.1',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = h1request({ host, port, path, headers, agent: agent ?? false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** One request with a body, on a connection of its own. */
function request(
  port: number,
  host: string,
  method: string,
  path: string,
  body: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = h1request({ host, port, method, path, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  const pki = await createTestPki();
  pkiAnchor = pki.anchorPem;
  cp = await startFakeControlPlane(pki);
  const web1 = h1Echo('web-1');
  const web2 = h1Echo('web-2');
  const h2app = h2Echo('h2');
  const banner = bannerServer('220 hello from smtp\r\n');
  servers.push(web1, web2, h2app, banner);
  appPorts.web1 = await listen(web1);
  appPorts.web2 = await listen(web2);
  appPorts.h2 = await listen(h2app);
  appPorts.banner = await listen(banner);
  servers.push(closing);
  appPorts.closing = await listen(closing);
  // A real grpc-js server as an app: the destination service (unary-free, server streaming) and identity (unary).
  grpcApp = await startFakeControlPlane(pki);
  appPorts.grpc = Number(grpcApp.addr.split(':')[1]);
  grpcApp.destination.set('app.default.svc.cluster.local:80', [{ ip: '10.9.9.9', port: 80 }]);
  // B: one proxy, several "pods" told apart by the loopback address dialed.
  const byLocal: Record<string, number> = {
    '127.0.0.2': appPorts.web1,
    '127.0.0.3': appPorts.h2,
    '127.0.0.4': appPorts.banner,
    '127.0.0.5': appPorts.web2,
    '127.0.0.6': appPorts.grpc,
    '127.0.0.7': appPorts.grpc,
    '127.0.0.9': appPorts.closing,
  };
  b = await startHarnessProxy({
    identity: B_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inboundHost: '0.0.0.0',
    inbound: (s: Socket) => {
      const la = (s.localAddress ?? '').replace('::ffff:', '');
      const port = byLocal[la];
      return port === undefined ? undefined : { ip: la, port: 80 === port ? 80 : port };
    },
    env: { MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION: String(appPorts.banner) },
  });
  // A: the original destination is chosen by the client's source address.
  const deadPort = await new Promise<number>((resolve) => {
    const t = createTcpServer();
    t.listen(0, '127.0.0.1', () => {
      const p = (t.address() as { port: number }).port;
      t.close(() => resolve(p));
    });
  });
  appPorts.dead = deadPort;
  const bySource: Record<string, { ip: string; port: number }> = {
    '127.0.1.1': { ip: '10.96.0.25', port: 25 },
    '127.0.1.2': { ip: '10.96.0.26', port: 2526 },
    '127.0.1.3': { ip: '127.0.0.1', port: deadPort },
  };
  a = await startHarnessProxy({
    identity: A_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    outbound: (s: Socket) => bySource[(s.remoteAddress ?? '').replace('::ffff:', '')],
    env: { MINIMESH_PROXY_INBOUND_PORTS_DISABLE_PROTOCOL_DETECTION: '25' },
  });
  const d = cp.destination;
  d.set(WEB, [{ ip: '127.0.0.2', port: b.ports.inbound, identity: B_ID, labels: { pod: 'web-1' } }]);
  d.set('h2.default.svc.cluster.local:80', [{ ip: '127.0.0.3', port: b.ports.inbound, identity: B_ID }]);
  d.set('grpc.default.svc.cluster.local:80', [{ ip: '127.0.0.6', port: b.ports.inbound, identity: B_ID }]);
  d.set('closing.default.svc.cluster.local:80', [{ ip: '127.0.0.9', port: b.ports.inbound, identity: B_ID }]);
  d.set('dead.default.svc.cluster.local:80', [{ ip: '127.0.0.1', port: deadPort }]);
  d.set('plain.default.svc.cluster.local:80', [{ ip: '127.0.0.1', port: appPorts.web1 }]);
  // An endpoint that answers for B's name but holds a certificate for another identity.
  const evil = await pki.leaf('evil.default.serviceaccount.identity.minimesh.cluster.local');
  const impostor = createTlsServer({ key: evil.keyPem, cert: evil.certPem, ALPNProtocols: ['h2'] }, (s) => s.destroy());
  servers.push(impostor);
  const impostorPort = await listen(impostor as unknown as Parameters<typeof listen>[0]);
  d.set('impostor.default.svc.cluster.local:80', [{ ip: '127.0.0.1', port: impostorPort, identity: B_ID }]);
  d.set('spread.default.svc.cluster.local:80', [
    { ip: '127.0.0.2', port: b.ports.inbound, identity: B_ID },
    { ip: '127.0.0.5', port: b.ports.inbound, identity: B_ID },
  ]);
  d.profiles.set('10.96.0.25:25', { fullyQualifiedName: 'smtp.default.svc.cluster.local' });
  // Port 2526 is not in the proxy's opaque ports, but destination marks it opaque (an annotation).
  d.profiles.set('10.96.0.26:2526', { fullyQualifiedName: 'smtp2.default.svc.cluster.local', opaqueProtocol: true });
  d.set('smtp2.default.svc.cluster.local:2526', [{ ip: '127.0.0.4', port: b.ports.inbound, identity: B_ID }]);
  d.set('smtp.default.svc.cluster.local:25', [{ ip: '127.0.0.4', port: b.ports.inbound, identity: B_ID }]);
  await Promise.all([a.ready, b.ready]);
});

afterAll(async () => {
  await a?.shutdown(100);
  await b?.shutdown(100);
  for (const s of servers) s.close();
  await cp?.close();
  await grpcApp?.close();
  removeTempDirs();
});

describe('proxy on loopback', () => {
  it('/ready latches after the first certificate', async () => {
    const r = await get(a.ports.admin, '/ready', {});
    expect(r.status).toBe(200);
  });

  it('HTTP/1.1 keep-alive rides mTLS; the app sees the client identity and HTTP/1.1', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 5; i++) {
      const r = await get(a.ports.outbound, `/hello/${i}`, { host: WEB }, agent);
      expect(r.status).toBe(200);
      const body = JSON.parse(r.body);
      expect(body.app).toBe('web-1');
      expect(body.url).toBe(`/hello/${i}`);
      expect(body.httpVersion).toBe('1.1');
      expect(body.headers['l5d-client-id']).toBe(A_ID);
      expect(body.headers['l5d-orig-proto']).toBeUndefined();
    }
    agent.destroy();
    const m = await b.metrics.registry.getSingleMetricAsString('request_total');
    expect(m).toMatch(
      new RegExp(`request_total\\{direction="inbound"[^}]*tls="true"[^}]*client_id="${A_ID.replace(/\./g, '\\.')}"`),
    );
    const out = await a.metrics.registry.getSingleMetricAsString('response_total');
    expect(out).toMatch(
      /direction="outbound"[^}]*tls="true"[^}]*server_id="web\.default[^}]*dst_pod="web-1"[^}]*status_code="200"[^}]*classification="success"/,
    );
  });

  it('a 4 MiB HTTP/1 body crosses the multiplexed HTTP/2 connection intact, both ways', async () => {
    const payload = Buffer.alloc(4 << 20, 'x');
    payload.write('begin', 0);
    payload.write('end', payload.length - 3);
    const body = await new Promise<string>((resolve, reject) => {
      const req = h1request(
        {
          host: '127.0.0.1',
          port: a.ports.outbound,
          path: '/upload',
          method: 'POST',
          headers: { host: WEB, 'content-length': payload.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString()));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
    const echoed = JSON.parse(body).body as string;
    expect(echoed.length).toBe(payload.length);
    expect(echoed.startsWith('begin') && echoed.endsWith('end')).toBe(true);
  });

  it('HTTP/2 passes as HTTP/2', async () => {
    const s = h2connect(`http://127.0.0.1:${a.ports.outbound}`);
    const body = await new Promise<string>((resolve, reject) => {
      const r = s.request({ ':path': '/h2', ':authority': 'h2.default.svc.cluster.local' });
      let b = '';
      r.on('data', (c: Buffer) => (b += c.toString()));
      r.on('end', () => resolve(b));
      r.on('error', reject);
    });
    s.close();
    const j = JSON.parse(body);
    expect(j.app).toBe('h2');
    expect(j.headers['l5d-client-id']).toBe(A_ID);
  });

  it('gRPC unary, streaming and trailers-only errors keep their trailers', async () => {
    const s = h2connect(`http://127.0.0.1:${a.ports.outbound}`);
    const call = (path: string, msgs: string[]) =>
      new Promise<{ data: Buffer; trailers: Record<string, unknown>; headers: Record<string, unknown> }>(
        (resolve, reject) => {
          const r = s.request({
            ':method': 'POST',
            ':path': path,
            ':authority': 'h2.default.svc.cluster.local:80',
            'content-type': 'application/grpc',
            te: 'trailers',
          });
          const chunks: Buffer[] = [];
          let headers: Record<string, unknown> = {};
          let trailers: Record<string, unknown> = {};
          r.on('response', (h) => (headers = h));
          r.on('trailers', (t) => (trailers = t));
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => resolve({ data: Buffer.concat(chunks), trailers, headers }));
          r.on('error', reject);
          for (const m of msgs) r.write(grpcFrame(Buffer.from(m)));
          r.end();
        },
      );
    const unary = await call('/test.Echo/Unary', ['ping']);
    expect(unary.data.subarray(5).toString()).toBe('ping');
    expect(unary.trailers['grpc-status']).toBe('0');
    expect(unary.trailers['x-trailer']).toBe('h2');
    const stream = await call('/test.Echo/Stream', ['a', 'bb', 'ccc']);
    expect(stream.data.length).toBe(5 * 3 + 6);
    expect(stream.trailers['grpc-status']).toBe('0');
    const fail = await call('/test.Echo/Fail', ['x']);
    expect(fail.headers['grpc-status']).toBe('7');
    s.close();
  });

  it('a real grpc-js client and server: unary and server streaming through the mesh', async () => {
    const opts = { 'grpc.default_authority': 'grpc.default.svc.cluster.local:80' };
    const dc = new destination.DestinationClient(`127.0.0.1:${a.ports.outbound}`, credentials.createInsecure(), opts);
    const first = await new Promise<destination.Update>((resolve, reject) => {
      const call = dc.get({ scheme: 'k8s', path: 'app.default.svc.cluster.local:80', contextToken: '' });
      call.once('data', (u: destination.Update) => {
        resolve(u);
        call.cancel();
      });
      call.on('error', (e: { code?: number }) => (e.code === 1 ? undefined : reject(e)));
    });
    expect(first.update?.$case).toBe('add');
    // A gRPC error status crosses the mesh as a status, not as a proxy error.
    const missing = await new Promise<{ code?: number; details?: string }>((resolve) => {
      const call = dc.get({ scheme: 'k8s', path: 'missing.default.svc.cluster.local:80', contextToken: '' });
      call.on('error', (e: { code?: number; details?: string }) => resolve(e));
      call.on('data', () => undefined);
    });
    expect(missing.code).toBe(5);
    expect(missing.details).toContain('no service');
    dc.close();
    const ic = new identity.IdentityClient(`127.0.0.1:${a.ports.outbound}`, credentials.createInsecure(), opts);
    const csr = await createKeyAndCsr('x.default.serviceaccount.identity.minimesh.cluster.local');
    const res = await new Promise<identity.CertifyResponse>((resolve, reject) =>
      ic.certify(
        {
          identity: 'x.default.serviceaccount.identity.minimesh.cluster.local',
          token: Buffer.from('t'),
          certificateSigningRequest: csr.csrDer,
        },
        (err, r) => (err ? reject(err) : resolve(r)),
      ),
    );
    expect(res.leafCertificate.length).toBeGreaterThan(100);
    ic.close();
  });

  it("a new proxy bootstraps through a control-plane pod's inbound proxy: TLS verifying its name, no client certificate yet", async () => {
    // B plays the identity pod's proxy (its identity is the *_NAME); its app is a plaintext gRPC identity.
    const creds = new TlsCredentials('fresh.default.serviceaccount.identity.minimesh.cluster.local', pkiAnchor);
    const dir = tempDir();
    writeFileSync(join(dir, 'token'), 'tok');
    const client = new CertifyClient({
      addr: { addr: `127.0.0.7:${b.ports.inbound}`, name: B_ID, plaintext: false },
      localIdentity: 'fresh.default.serviceaccount.identity.minimesh.cluster.local',
      tokenFile: join(dir, 'token'),
      tls: creds,
      metrics: new ProxyMetrics(new Registry()),
      logger: createLogger({ name: 't', level: 'silent' }),
      callTimeoutMs: 3000,
    });
    await client.start();
    client.stop();
    expect(creds.certificate?.leaf.subjectAltName).toBe(
      'DNS:fresh.default.serviceaccount.identity.minimesh.cluster.local',
    );
    expect(await b.metrics.registry.getSingleMetricAsString('request_total')).toMatch(
      /direction="inbound",authority="[^"]*",target_addr="127\.0\.0\.7:\d+",tls="true"(?![^}]*client_id)[^}]*\}/,
    );
  });

  it('WebSocket-style Upgrade is tunnelled over mTLS', async () => {
    const sock = netConnect(a.ports.outbound, '127.0.0.1');
    const got = await new Promise<string>((resolve, reject) => {
      let buf = '';
      sock.on('data', (d) => {
        buf += d.toString();
        if (buf.includes('\r\n\r\n') && !buf.includes('echo:')) sock.write('frame-1');
        if (buf.includes('echo:frame-1')) resolve(buf);
      });
      sock.on('error', reject);
      sock.write(`GET /ws HTTP/1.1\r\nhost: ${WEB}\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n`);
    });
    sock.destroy();
    expect(got).toMatch(/^HTTP\/1.1 101/);
    expect(got).toContain('x-app: web-1');
  });

  it('a server-speaks-first protocol on an opaque port answers at once over mTLS', async () => {
    const t0 = Date.now();
    const sock = netConnect({ port: a.ports.outbound, host: '127.0.0.1', localAddress: '127.0.1.1' });
    const banner = await new Promise<string>((resolve, reject) => {
      sock.once('data', (d) => resolve(d.toString()));
      sock.on('error', reject);
    });
    const ms = Date.now() - t0;
    sock.write('EHLO x\r\n');
    const echo = await new Promise<string>((resolve) => sock.once('data', (d) => resolve(d.toString())));
    sock.destroy();
    expect(banner).toBe('220 hello from smtp\r\n');
    expect(echo).toBe('EHLO x\r\n');
    expect(ms).toBeLessThan(2000);
    const m = await b.metrics.registry.getSingleMetricAsString('tcp_open_total');
    expect(m).toMatch(/direction="inbound"[^}]*tls="true"/);
  });

  it('a port destination marks opaque skips detection too (server speaks first at once)', async () => {
    const t0 = Date.now();
    const sock = netConnect({ port: a.ports.outbound, host: '127.0.0.1', localAddress: '127.0.1.2' });
    const banner = await new Promise<string>((resolve, reject) => {
      sock.once('data', (d) => resolve(d.toString()));
      sock.on('error', reject);
    });
    sock.destroy();
    expect(banner).toBe('220 hello from smtp\r\n');
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('an unmeshed endpoint is reached in plaintext', async () => {
    const r = await get(a.ports.outbound, '/plain', { host: 'plain.default.svc.cluster.local' });
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.headers['l5d-client-id']).toBeUndefined();
    const out = await a.metrics.registry.getSingleMetricAsString('request_total');
    expect(out).toMatch(/authority="plain\.default\.svc\.cluster\.local:80"[^}]*tls="no_identity"/);
  });

  it('an endpoint whose certificate names another identity is refused', async () => {
    const r = await get(a.ports.outbound, '/x', { host: 'impostor.default.svc.cluster.local' });
    expect(r.status).toBe(502);
    expect(String(r.headers['x-minimesh-proxy-error'])).toMatch(/MINIMESH_PROXY_PEER_IDENTITY_MISMATCH/);
  });

  it('load spreads across endpoints, and a removed endpoint stops getting traffic', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const count = async (n: number) => {
      const seen: Record<string, number> = {};
      await Promise.all(
        Array.from({ length: n }, async () => {
          const r = await get(a.ports.outbound, '/spread', { host: 'spread.default.svc.cluster.local' }, agent);
          const app = JSON.parse(r.body).app as string;
          seen[app] = (seen[app] ?? 0) + 1;
        }),
      );
      return seen;
    };
    const before = await count(200);
    expect(before['web-1']).toBeGreaterThan(10);
    expect(before['web-2']).toBeGreaterThan(10);
    cp.destination.set('spread.default.svc.cluster.local:80', [
      { ip: '127.0.0.2', port: b.ports.inbound, identity: B_ID },
    ]);
    await new Promise((r) => setTimeout(r, 200));
    const after = await count(100);
    expect(after['web-2'] ?? 0).toBe(0);
    expect(after['web-1']).toBe(100);
    agent.destroy();
  });

  it('plaintext HTTP straight into the inbound proxy is forwarded to the app without delay', async () => {
    const t0 = Date.now();
    const body = await new Promise<string>((resolve, reject) => {
      const req = h1request({ host: '127.0.0.2', port: b.ports.inbound, path: '/probe' }, (res) => {
        let s = '';
        res.on('data', (c: Buffer) => (s += c.toString()));
        res.on('end', () => resolve(s));
      });
      req.on('error', reject);
      req.end();
    });
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(JSON.parse(body).app).toBe('web-1');
    expect(JSON.parse(body).headers['l5d-client-id']).toBeUndefined();
  });

  it('the keep-alive race: a bodiless request whose pooled app connection was closed goes again on a new one', async () => {
    // The app answers one request per connection and closes the connection on the next: every request
    // after the first meets a pooled connection the app has closed.
    const before = closing.connections;
    for (let i = 0; i < 5; i++) {
      const meshed = await get(a.ports.outbound, `/meshed/${i}`, { host: 'closing.default.svc.cluster.local' });
      expect(meshed.status, meshed.body).toBe(200);
      expect(JSON.parse(meshed.body).line).toBe(`GET /meshed/${i} HTTP/1.1`);
      const plain = await get(b.ports.inbound, `/plain/${i}`, {}, undefined, '127.0.0.9');
      expect(plain.status, plain.body).toBe(200);
    }
    // Each request after the first was dropped once on a reused connection and answered on a new one.
    expect(closing.connections - before).toBe(10);
    expect(closing.dropped.length).toBeGreaterThanOrEqual(8);
    // A request with a body is never sent twice: it fails with the upstream error.
    await get(b.ports.inbound, '/warm', {}, undefined, '127.0.0.9');
    const dropped = closing.dropped.length;
    const post = await request(b.ports.inbound, '127.0.0.9', 'POST', '/once', 'payload');
    expect(post.status).toBe(502);
    expect(post.headers['x-minimesh-proxy-error']).toMatch(/socket hang up/);
    expect(closing.dropped.slice(dropped)).toEqual(['POST /once HTTP/1.1']);
  });

  it("failures answer in the caller's protocol: HTTP 502, a gRPC status, a TCP reset", async () => {
    const r = await get(a.ports.outbound, '/', { host: 'dead.default.svc.cluster.local' });
    expect(r.status).toBe(502);
    expect(String(r.headers['x-minimesh-proxy-error'])).toMatch(
      /^MINIMESH_PROXY_CONNECT_REFUSED: endpoint 127\.0\.0\.1:\d+: connection refused/,
    );
    const s = h2connect(`http://127.0.0.1:${a.ports.outbound}`);
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const q = s.request({
        ':method': 'POST',
        ':path': '/x.Y/Z',
        ':authority': 'dead.default.svc.cluster.local',
        'content-type': 'application/grpc',
      });
      q.on('response', (h) => resolve(h));
      q.on('error', reject);
      q.end(grpcFrame(Buffer.from('x')));
    });
    s.close();
    expect(headers[':status']).toBe(200);
    expect(headers['grpc-status']).toBe('14');
    expect(String(headers['x-minimesh-proxy-error'])).toMatch(/MINIMESH_PROXY_CONNECT_REFUSED/);
    const code = await new Promise<string>((resolve) => {
      const sock = netConnect({ port: a.ports.outbound, host: '127.0.0.1', localAddress: '127.0.1.3' });
      sock.on('connect', () => sock.write('hello there opaque bytes'));
      sock.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      sock.on('close', () => resolve('closed'));
    });
    expect(code).toBe('ECONNRESET');
    const m = await a.metrics.registry.getSingleMetricAsString('proxy_errors_total');
    expect(m).toMatch(/direction="outbound",error="MINIMESH_PROXY_CONNECT_REFUSED"\} [3-9]/);
  });

  it('unknown services with no original destination get 502 with the error header', async () => {
    const r = await get(a.ports.outbound, '/', { host: 'nothere.default.svc.cluster.local' });
    expect(r.status).toBe(502);
    expect(String(r.headers['x-minimesh-proxy-error'])).toMatch(/MINIMESH_PROXY_NO_ORIGINAL_DST/);
  });
});
