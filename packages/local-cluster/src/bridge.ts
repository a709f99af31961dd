#!/usr/bin/env node
// Byte pipes across network namespaces through unix sockets (a unix socket's path is reachable from
// every network namespace, a TCP address is not).
//   bridge.js dialer <socket> [--loopback-only]
//       Accepts unix connections; each starts with one line "host:port\n" and is then piped to a new TCP
//       connection to host:port made from this process's network namespace. "?host:port\n" only tests
//       the connection and answers "1" or "0" (TCP probes).
//   bridge.js listen <host:port> <socket> <target host:port>
//       Listens on TCP host:port; pipes each connection to the dialer at <socket>, asking for target.
// The node namespace runs one dialer (host → node) and the host runs one (node → host, loopback only).
import { connect, createServer, isIPv4 } from 'node:net';
import { rmSync } from 'node:fs';
import { pipeBoth } from '@minimesh/runtime/pipe';

function splitHostPort(s: string): { host: string; port: number } {
  const i = s.lastIndexOf(':');
  const host = s.slice(0, i);
  const port = Number(s.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`address ${s} is not valid: expected host:port`);
  return { host, port };
}

function dialer(socketPath: string, loopbackOnly: boolean): void {
  rmSync(socketPath, { force: true });
  const server = createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) {
        if (head.length > 300) client.destroy();
        return;
      }
      client.off('data', onData);
      client.pause();
      const line = head.subarray(0, nl).toString('utf8').trim();
      const rest = head.subarray(nl + 1);
      const probe = line.startsWith('?');
      let target: { host: string; port: number };
      try {
        target = splitHostPort(probe ? line.slice(1) : line);
      } catch {
        client.destroy();
        return;
      }
      if (loopbackOnly && !(isIPv4(target.host) && target.host.startsWith('127.')) && target.host !== '::1') {
        client.destroy();
        return;
      }
      const upstream = connect({ host: target.host, port: target.port });
      upstream.setTimeout(probe ? 2000 : 0);
      if (probe) {
        upstream.on('connect', () => {
          client.end('1');
          upstream.destroy();
        });
        const fail = () => {
          client.end('0');
          upstream.destroy();
        };
        upstream.on('error', fail);
        upstream.on('timeout', fail);
        return;
      }
      upstream.on('connect', () => {
        if (rest.length) upstream.write(rest);
        pipeBoth(client, upstream);
        client.resume();
      });
      upstream.on('error', () => client.destroy());
    };
    client.on('data', onData);
    client.on('error', () => client.destroy());
  });
  server.listen(socketPath);
}

function listen(addr: string, socketPath: string, target: string): void {
  const { host, port } = splitHostPort(addr);
  splitHostPort(target);
  const server = createServer((client) => {
    client.pause();
    const upstream = connect({ path: socketPath }, () => {
      upstream.write(`${target}\n`);
      pipeBoth(client, upstream);
      client.resume();
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.on('error', (err) => {
    process.stderr.write(`bridge: listen ${addr}: ${err.message}\n`);
    process.exit(1);
  });
  server.listen({ host, port }, () => process.stdout.write(`listening ${addr}\n`));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'dialer' && args[0]) dialer(args[0], args.includes('--loopback-only'));
else if (mode === 'listen' && args.length === 3) listen(args[0]!, args[1]!, args[2]!);
else {
  process.stderr.write(
    'usage: bridge.js dialer <socket> [--loopback-only] | bridge.js listen <host:port> <socket> <target host:port>\n',
  );
  process.exit(2);
}
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => process.exit(0));
