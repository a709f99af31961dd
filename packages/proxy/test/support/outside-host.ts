// The "outside host" of the egress tests (@minimesh/test-support/outside-host): a network namespace of
// the test's own, 203.0.113.10 (TEST-NET-3, which exists only inside the test's namespaces), routed
// through the mesh's virtual node, outside the cluster networks. It serves HTTP on 80, gRPC (h2c) on 8081, a TCP echo on 9000 and TLS on
// 8443 (a self-signed certificate for allowed.partner.example and other.partner.example; it answers
// "outside tls: <SNI>" and closes), logging what reached it.
import { execFileSync } from 'node:child_process';
import { createOutsideHost } from '@minimesh/test-support/outside-host';
import type { NetnsMesh } from './netns-mesh.js';

export { OUTSIDE_IP } from '@minimesh/test-support/outside-host';

const OUTSIDE_APP = `
const http = require('node:http');
const net = require('node:net');
http.createServer((req, res) => {
  console.log('HTTP ' + req.method + ' ' + req.url);
  res.writeHead(200, { 'content-type': 'text/plain', 'x-app': 'outside' });
  res.end('outside host: ' + req.url);
}).listen(80, '0.0.0.0');
require('node:http2').createServer().on('stream', (stream, headers) => {
  // A gRPC (h2c) server: echoes the request's message, grpc-status 0 in the trailers.
  console.log('GRPC ' + headers[':path']);
  const chunks = [];
  stream.on('data', (c) => chunks.push(c));
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.concat(chunks));
  });
}).listen(8081, '0.0.0.0');
const dir = process.argv[2];
require('node:tls').createServer(
  { key: require('node:fs').readFileSync(dir + '/outside-tls.key'), cert: require('node:fs').readFileSync(dir + '/outside-tls.crt') },
  (s) => {
    console.log('TLS ' + s.servername);
    s.end('outside tls: ' + s.servername);
    s.on('error', () => {});
  },
).on('connection', (s) => console.log('TLS connection from ' + s.remoteAddress)).on('tlsClientError', () => {}).listen(8443, '0.0.0.0');
net.createServer((s) => {
  console.log('TCP connection from ' + s.remoteAddress);
  s.on('data', (d) => s.write(d));
  s.on('error', () => {});
}).listen(9000, '0.0.0.0', () => console.log('listening'));
`;

export interface OutsideHost {
  /** What reached it so far (its app's log). */
  log(): string;
  /** Stops its app and deletes its namespace. */
  remove(): void;
}

/** Makes the outside host beside `mesh` (joined to its node namespace) and waits until its app listens. */
export async function addOutsideHost(mesh: NetnsMesh): Promise<OutsideHost> {
  // The TLS server's certificate: self-signed, both names (the client does not check it).
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', 'outside-tls.key', '-out', 'outside-tls.crt', '-days', '1', '-subj', '/CN=partner.example'],
      ...['-addext', 'subjectAltName=DNS:allowed.partner.example,DNS:other.partner.example'],
    ],
    { cwd: mesh.dir, stdio: 'pipe' },
  );
  const host = await createOutsideHost({
    gatewayNetns: mesh.nodeNs,
    tag: mesh.tag,
    app: OUTSIDE_APP,
    args: [mesh.dir],
  });
  return { log: () => host.log(), remove: () => host.remove() };
}
