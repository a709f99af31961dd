// The "outside host" of the egress tests: a network namespace of the test's own, 203.0.113.10
// (TEST-NET-3, which exists only inside the test's namespaces), routed through the mesh's virtual node,
// outside the cluster networks. It serves HTTP on 80, gRPC (h2c) on 8081 and a TCP echo on 9000, logging
// what reached it.
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
  mesh.start('outside', ['ip', 'netns', 'exec', ns, process.execPath, app]);
  await waitFor('the outside host', () => host.log().includes('listening'), 10_000);
  return host;
}
