// Reaching across network namespaces from the host: host → node namespace (forwardToNode), node
// namespace → host (exposeHostPort), and host programs inside a pod's network namespace (execInPod).
import { execFile } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { adminClient } from './cluster.js';
import { ctrFor } from './images.js';
import { pipeBoth } from '@minimesh/runtime/pipe';
import { NODE_NETNS, packageDir, stateDir, statePaths } from './paths.js';
import { startDetached, stopProcess } from './procs.js';

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
    pipeBoth(client, upstream, () => {
      sockets.delete(client);
      sockets.delete(upstream);
    });
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

/**
 * The pid of the pod's sandbox (pause) process, from containerd: its network namespace is the pod's.
 * Throws when the pod has no running sandbox on the node.
 */
export async function podSandboxPid(namespace: string, pod: string): Promise<number> {
  const obj = await adminClient().get(`/api/v1/namespaces/${namespace}/pods/${pod}`);
  if (!obj) throw new Error(`pod ${namespace}/${pod} not found`);
  const uid = String(obj.metadata.uid);
  const ctr = ctrFor(statePaths(stateDir()).containerdSocket);
  const ids = (
    await ctr([
      'containers',
      'ls',
      '-q',
      `labels."io.kubernetes.pod.uid"==${uid},labels."io.cri-containerd.kind"==sandbox`,
    ])
  )
    .split('\n')
    .filter(Boolean);
  const tasks = new Map(
    (await ctr(['tasks', 'ls']))
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => f.length >= 3 && f[2] === 'RUNNING')
      .map((f) => [f[0]!, Number(f[1])]),
  );
  const pid = ids.map((id) => tasks.get(id)).find((p) => p !== undefined && p > 0);
  if (pid === undefined) throw new Error(`pod ${namespace}/${pod} has no running sandbox on the node`);
  return pid;
}

/**
 * Runs a host program inside a pod's network namespace, from the node: `nsenter --net` into the
 * namespace of the pod's sandbox, with the host's file system and tools (curl, iptables-save...), as
 * root with every capability. Test tooling only: what users do is `kubectl exec` or an ephemeral
 * debug container (`kubectl debug --profile=netadmin`), which is what `minimesh explain` does.
 */
export async function execInPod(
  namespace: string,
  pod: string,
  command: string[],
  opts: { timeoutMs?: number } = {},
): Promise<ExecResult> {
  let pid: number;
  try {
    pid = await podSandboxPid(namespace, pod);
  } catch (err) {
    throw new Error(`execInPod ${namespace}/${pod}: ${(err as Error).message}`, { cause: err });
  }
  return new Promise((resolve) => {
    execFile(
      'nsenter',
      [`--net=/proc/${pid}/ns/net`, '--', ...command],
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
