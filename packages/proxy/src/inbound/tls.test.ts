// The inbound TLS stage over real TLS on loopback (a test PKI), with a fake next stage and a real HTTP
// server for ALPN h2: plaintext and TLS not ours go on to detection (the latter opaque); mTLS to our
// identity is terminated and names the client, HTTP/2 over it going straight to the HTTP server.
import { X509Certificate } from 'node:crypto';
import { connect as h2connect } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { HttpHandoff, type IncomingRequest } from '../http/handoff.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { InboundLabels } from '../metrics/traffic-labels.js';
import { toAddr, type InboundConn } from '../targets.js';
import { TlsCredentials } from '../tls/credentials.js';
import { createTestPki, type TestPki } from '../../test/support/pki.js';
import { pushTls, type Detecting } from './tls.js';
import { afterTest, dial, listen, until } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
const PROXY_ID = 'web.shop.serviceaccount.identity.minimesh.cluster.local';
const CLIENT_ID = 'client.shop.serviceaccount.identity.minimesh.cluster.local';

let pki: TestPki;
let creds: TlsCredentials;
let client: { certPem: string; keyPem: string };

beforeAll(async () => {
  pki = await createTestPki();
  creds = new TlsCredentials(PROXY_ID, pki.anchorPem);
  const leaf = await pki.leaf(PROXY_ID);
  const x = new X509Certificate(leaf.certPem);
  creds.set({ chainPem: leaf.certPem, keyPem: leaf.keyPem, leaf: x, notAfter: new Date(x.validTo) });
  client = await pki.leaf(CLIENT_ID);
});

/** The stage behind a listener: what went on to detection, and the HTTP server's requests. */
async function proxy() {
  const metrics = new ProxyMetrics(new Registry());
  const detecting: Detecting[] = [];
  const requests: Array<[InboundConn, IncomingRequest]> = [];
  const http = new HttpHandoff<InboundConn>({ direction: 'inbound', metrics, log }, (conn, req) => {
    requests.push([conn, req]);
    if (!req.upgrade) req.answer(204, 'ok', undefined);
  });
  const handler = pushTls({
    creds,
    metrics,
    labels: new InboundLabels(),
    log,
    opaquePort: () => false,
    detectTimeoutMs: 500,
    http,
  })((t) => void detecting.push(t));
  const server: Server = createServer(
    (socket: Socket) => void handler({ socket, orig: toAddr('10.0.0.9', 8080), clientIp: socket.remoteAddress ?? '' }),
  );
  return { port: await listen(server), metrics, detecting, requests };
}

describe('inbound TLS', () => {
  it('plaintext goes on to detection with the bytes read, and is counted as no_identity', async () => {
    const p = await proxy();
    dial(p.port, (c) => c.write('GET / HTTP/1.1\r\n\r\n'));
    await until(() => p.detecting.length > 0);
    expect(p.detecting[0]).toMatchObject({ opaque: false, parent: { tls: 'no_identity', clientId: undefined } });
    expect(p.detecting[0]!.prefix.toString()).toBe('GET / HTTP/1.1\r\n\r\n');
    expect(await p.metrics.registry.metrics()).toMatch(/tcp_open_total\{[^}]*tls="no_identity"[^}]*\} 1/);
  });

  it('TLS for another name passes through: opaque, with its SNI and the ClientHello as the prefix', async () => {
    const p = await proxy();
    const c = tlsConnect({ host: '127.0.0.1', port: p.port, servername: 'db.example.com', rejectUnauthorized: false });
    c.on('error', () => undefined);
    afterTest(() => c.destroy());
    await until(() => p.detecting.length > 0);
    expect(p.detecting[0]).toMatchObject({ opaque: true, parent: { tls: 'opaque', sni: 'db.example.com' } });
    expect(p.detecting[0]!.prefix[0]).toBe(0x16);
  });

  it('mTLS to our identity is terminated and names the client; without ALPN h2 detection goes on, decrypted', async () => {
    const p = await proxy();
    const c = tlsConnect({
      host: '127.0.0.1',
      port: p.port,
      servername: PROXY_ID,
      ca: pki.anchorPem,
      cert: client.certPem,
      key: client.keyPem,
      checkServerIdentity: () => undefined,
    });
    afterTest(() => c.destroy());
    await until(() => p.detecting.length > 0);
    expect(p.detecting[0]).toMatchObject({ opaque: false, parent: { tls: 'true', clientId: CLIENT_ID } });
    expect(p.detecting[0]!.prefix.length).toBe(0);
    expect(await p.metrics.registry.metrics()).toMatch(
      new RegExp(`tcp_open_total\\{[^}]*tls="true"[^}]*client_id="${CLIENT_ID.replace(/\./g, '\\.')}"[^}]*\\} 1`),
    );
  });

  it('HTTP/2 over mTLS (ALPN h2) goes straight to the HTTP server with the connection named', async () => {
    const p = await proxy();
    const session = h2connect(`https://127.0.0.1:${p.port}`, {
      servername: PROXY_ID,
      ca: pki.anchorPem,
      cert: client.certPem,
      key: client.keyPem,
      checkServerIdentity: () => undefined,
    });
    afterTest(() => session.destroy());
    const status = await new Promise<number>((resolve, reject) => {
      const req = session.request({ ':path': '/h2' });
      req.on('response', (h) => resolve(Number(h[':status'])));
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(204);
    expect(p.detecting).toEqual([]);
    expect(p.requests[0]![0]).toMatchObject({ tls: 'true', clientId: CLIENT_ID, orig: { key: '10.0.0.9:8080' } });
  });
});
