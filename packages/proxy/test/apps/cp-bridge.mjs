// Runs inside a test pod's network namespace: listens on 127.0.0.1:<port> for each `<port>=<unix socket>`
// argument and pipes every connection to that unix socket (which the test forwards to the control plane
// on the host), so proxies in the pod reach the control plane at a loopback address.
import { connect, createServer } from 'node:net';

const routes = process.argv.slice(2).map((a) => {
  const i = a.indexOf('=');
  return { port: Number(a.slice(0, i)), path: a.slice(i + 1) };
});
let pending = routes.length;
for (const { port, path } of routes) {
  createServer({ noDelay: true }, (c) => {
    const up = connect(path);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  }).listen(port, '127.0.0.1', () => {
    if (--pending === 0) process.stdout.write('listening\n');
  });
}
