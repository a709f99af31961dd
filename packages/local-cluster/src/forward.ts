// Reaching across network namespaces from the host: host → node namespace (forwardToNode), node
// namespace → host (exposeHostPort), and commands inside a pod's network namespace (execInPod).
import { execFile } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { adminClient } from './cluster.js';
import { NODE_NETNS, POD_NETNS_PREFIX, packageDir, stateDir, statePaths } from './paths.js';
import { startDetached, stopProcess } from './procs.js';

/** The network namespace the node agent made for a pod with this uid. */
export function podNetnsName(uid: string): string {
  return `${POD_NETNS_PREFIX}${uid.replace(/-/g, '').slice(0, 12)}`;
}

/** A connection from the node namespace to host:port (through the node namespace's dialer). */
export function dialNode(target: string): Socket {
  const sock = connect({ path: statePaths(stateDir()).nodeDialer });
  sock.write(`${target}\n`);
  return sock;
}

/** Asks the node namespace's dialer whether host:port accepts TCP connections. */
export function probeNodeTcp(target: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ path: statePaths(stateDir()).nodeDialer });
    let answer = '';
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.on('data', (d: Buffer) => (answer += d.toString()));
    sock.on('close', () => {
      clearTimeout(timer);
      resolve(answer === '1');
    });
    sock.on('error', () => undefined);
    sock.write(`?${target}\n`);
  });
}

export interface Forward {
  host: '127.0.0.1';
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1:<random> on the host (in this process) and pipes each connection to `target`
 * (e.g. a pod IP and port, "10.23.1.2:8080") as seen from the node namespace.
 */
export async function forwardToNode(target: string): Promise<Forward> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = dialNode(target);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const done = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', done).on('close', done);
    upstream.on('error', done).on('close', done);
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen({ host: '127.0.0.1', port: 0 }, resolve),
  );
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  server.unref();
  return {
    host: '127.0.0.1',
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface Exposure {
  /** The port, the same on the host's loopback and in the node namespace (127.0.0.1 and 10.23.0.1). */
  port: number;
  close(): Promise<void>;
}

/**
 * Makes the host's 127.0.0.1:<hostPort> reachable inside the node namespace as 0.0.0.0:<hostPort>
 * (so kube-apiserver reaches a host test server at https://127.0.0.1:<hostPort>, and pods at
 * 10.23.0.1:<hostPort>). A detached listener in the node namespace; `down` stops it too.
 */
export async function exposeHostPort(hostPort: number): Promise<Exposure> {
  const p = statePaths(stateDir());
  const name = `expose-${hostPort}`;
  await stopProcess(p, name, 500);
  process.env.NODE_NO_WARNINGS ??= '1';
  startDetached(
    p,
    name,
    process.execPath,
    [join(packageDir, 'dist', 'bridge.js'), 'listen', `0.0.0.0:${hostPort}`, p.hostDialer, `127.0.0.1:${hostPort}`],
    {
      netns: NODE_NETNS,
    },
  );
  const deadline = Date.now() + 10_000;
  while (!(await probeNodeTcp(`127.0.0.1:${hostPort}`))) {
    if (Date.now() > deadline)
      throw new Error(`exposeHostPort ${hostPort}: the node-namespace listener did not come up (see logs/${name}.log)`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port: hostPort, close: () => stopProcess(p, name, 500) };
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command inside a pod's network namespace (like `kubectl debug --profile=netadmin`). */
export async function execInPod(
  namespace: string,
  pod: string,
  command: string[],
  opts: { timeoutMs?: number } = {},
): Promise<ExecResult> {
  const obj = await adminClient().get(`/api/v1/namespaces/${namespace}/pods/${pod}`);
  if (!obj) throw new Error(`execInPod ${namespace}/${pod}: pod not found`);
  const netns = podNetnsName(String(obj.metadata.uid));
  return new Promise((resolve) => {
    execFile(
      'ip',
      ['netns', 'exec', netns, ...command],
      { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
