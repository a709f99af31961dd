// The "outside host" of the egress tests: a network namespace of the test's own, 203.0.113.10
// (TEST-NET-3, which exists only inside the test's namespaces), routed through the mesh's virtual node,
// outside the cluster networks. It serves HTTP on 80, gRPC (h2c) on 8081, a TCP echo on 9000 and TLS on
// 443 (a self-signed certificate for allowed.partner.example and other.partner.example; it answers
// "outside tls: <SNI>" and closes), logging what reached it.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor, type NetnsMesh } from './netns-mesh.js';

export const OUTSIDE_IP = '203.0.113.10';

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
).on('connection', (s) => console.log('TLS connection from ' + s.remoteAddress)).on('tlsClientError', () => {}).listen(443, '0.0.0.0');
net.createServer((s) => {
  console.log('TCP connection from ' + s.remoteAddress);
  s.on('data', (d) => s.write(d));
  s.on('error', () => {});
}).listen(9000, '0.0.0.0', () => console.log('listening'));
`;

export interface OutsideHost {
  /** What reached it so far (its app's log). */
  log(): string;
  /** Deletes its namespace (the mesh's destroy stops its app). */
  remove(): void;
}

/** Makes the outside host beside `mesh` and waits until its app listens. */
export async function addOutsideHost(mesh: NetnsMesh): Promise<OutsideHost> {
  const ns = `${mesh.kns}-outside`;
  const [node, out] = [`eg${mesh.tag}n`, `eg${mesh.tag}o`];
  const host: OutsideHost = {
    log: () => mesh.logOf('outside'),
    remove: () => void mesh.sh(['ip', 'netns', 'del', ns], { allowFail: true }),
  };
  mesh.sh(['ip', 'netns', 'add', ns]);
  mesh.sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
  mesh.sh(['ip', 'link', 'add', node, 'netns', mesh.nodeNs, 'type', 'veth', 'peer', 'name', out, 'netns', ns]);
  mesh.sh(['ip', '-n', mesh.nodeNs, 'addr', 'add', '203.0.113.1/24', 'dev', node]);
  mesh.sh(['ip', '-n', mesh.nodeNs, 'link', 'set', node, 'up']);
  mesh.sh(['ip', '-n', ns, 'addr', 'add', `${OUTSIDE_IP}/24`, 'dev', out]);
  mesh.sh(['ip', '-n', ns, 'link', 'set', out, 'up']);
  mesh.sh(['ip', '-n', ns, 'route', 'add', 'default', 'via', '203.0.113.1']);
  mesh.sh(['ip', 'netns', 'exec', mesh.nodeNs, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  const app = join(mesh.dir, 'outside-app.cjs');
  writeFileSync(app, OUTSIDE_APP);
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
  mesh.start('outside', ['ip', 'netns', 'exec', ns, process.execPath, app, mesh.dir]);
  await waitFor('the outside host', () => host.log().includes('listening'), 10_000);
  return host;
}
