// Starting, checking and stopping the local cluster. `up` is idempotent (it starts only what is not
// running); ensureCluster() runs it under a file lock so parallel test files and packages can call it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePki } from './pki.js';
import { createKubeClient, credentialsFromFiles, renderKubeconfig, type KubeClient } from './kube-client.js';
import {
  API_PORT,
  API_SERVER,
  BRIDGE,
  CLUSTER_CIDR,
  NODE_IP,
  NODE_NAME,
  NODE_NETNS,
  POD_NETNS_PREFIX,
  SA_ISSUER,
  SERVICE_CIDR,
  binDir,
  binPath,
  packageDir,
  repoRoot,
  stateDir,
  statePaths,
  type StatePaths,
} from './paths.js';
import {
  destroyNetns,
  isRunning,
  listNetns,
  pidFileNames,
  readPid,
  killGroup,
  startDetached,
  stopProcess,
  run,
} from './procs.js';

export interface ClusterInfo {
  /** The state directory (MINIMESH_CLUSTER_DIR, default /tmp/minimesh-cluster). */
  dir: string;
  /** Admin kubeconfig (user minimesh-admin, group system:masters), server https://127.0.0.1:6443. */
  kubeconfigPath: string;
  auditLogPath: string;
  server: string;
  caCertPath: string;
  adminCertPath: string;
  adminKeyPath: string;
  /** The node network namespace and the node's address on the pod bridge. */
  nodeNetns: string;
  nodeIp: string;
  nodeName: string;
  clusterCidr: string;
  serviceCidr: string;
  /** Where kube-apiserver, etcd, kubectl and kube-controller-manager live. */
  binDir: string;
  kubectlPath: string;
}

export function clusterInfo(dir = stateDir()): ClusterInfo {
  const p = statePaths(dir);
  return {
    dir,
    kubeconfigPath: p.adminKubeconfig,
    auditLogPath: p.auditLog,
    server: API_SERVER,
    caCertPath: p.caCert,
    adminCertPath: p.adminCert,
    adminKeyPath: p.adminKey,
    nodeNetns: NODE_NETNS,
    nodeIp: NODE_IP,
    nodeName: NODE_NAME,
    clusterCidr: CLUSTER_CIDR,
    serviceCidr: SERVICE_CIDR,
    binDir: binDir(),
    kubectlPath: binPath('kubectl'),
  };
}

/** A client authenticated as the cluster admin. */
export function adminClient(dir = stateDir()): KubeClient {
  const p = statePaths(dir);
  return createKubeClient(credentialsFromFiles({ ca: p.caCert, cert: p.adminCert, key: p.adminKey }));
}

type Log = (msg: string) => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`local cluster: ${what} not ready after ${timeoutMs / 1000}s`);
    await sleep(200);
  }
}

function buildBinaries(log: Log): void {
  const missing = ['kube-apiserver', 'kube-controller-manager', 'etcd', 'kubectl'].some(
    (b) => !existsSync(join(binDir(), b)),
  );
  if (!missing) return;
  log('Kubernetes binaries missing: building them (scripts/build-k8s.sh)');
  execFileSync('bash', [join(packageDir, 'scripts', 'build-k8s.sh')], { stdio: ['ignore', 2, 2] });
}

function ensureNodeNetwork(): void {
  if (!listNetns(NODE_NETNS).includes(NODE_NETNS)) run('ip', ['netns', 'add', NODE_NETNS]);
  const inNode = (...args: string[]) => run('ip', ['-n', NODE_NETNS, ...args]);
  inNode('link', 'set', 'lo', 'up');
  const links = inNode('-o', 'link', 'show');
  if (!links.includes(` ${BRIDGE}:`)) inNode('link', 'add', BRIDGE, 'type', 'bridge');
  const addrs = inNode('-o', 'addr', 'show', 'dev', BRIDGE);
  if (!addrs.includes(`${NODE_IP}/16`)) inNode('addr', 'add', `${NODE_IP}/16`, 'dev', BRIDGE);
  inNode('link', 'set', BRIDGE, 'up');
  run('ip', ['netns', 'exec', NODE_NETNS, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
}

function writeKubeconfigs(p: StatePaths): void {
  const caPem = readFileSync(p.caCert, 'utf8');
  if (!existsSync(p.adminKubeconfig)) {
    writeFileSync(
      p.adminKubeconfig,
      renderKubeconfig({
        name: 'minimesh-admin',
        caPem,
        certPem: readFileSync(p.adminCert, 'utf8'),
        keyPem: readFileSync(p.adminKey, 'utf8'),
      }),
      { mode: 0o600 },
    );
  }
  if (!existsSync(p.kcmKubeconfig)) {
    writeFileSync(
      p.kcmKubeconfig,
      renderKubeconfig({
        name: 'system:kube-controller-manager',
        caPem,
        certPem: readFileSync(join(p.pki, 'kube-controller-manager.crt'), 'utf8'),
        keyPem: readFileSync(join(p.pki, 'kube-controller-manager.key'), 'utf8'),
      }),
      { mode: 0o600 },
    );
  }
}

function apiserverArgs(p: StatePaths): string[] {
  return [
    '--bind-address=0.0.0.0',
    `--secure-port=${API_PORT}`,
    `--advertise-address=${NODE_IP}`,
    '--etcd-servers=http://127.0.0.1:2379',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    `--tls-cert-file=${join(p.pki, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(p.pki, 'apiserver.key')}`,
    `--client-ca-file=${p.caCert}`,
    '--authorization-mode=Node,RBAC',
    '--allow-privileged=true',
    `--service-account-issuer=${SA_ISSUER}`,
    `--service-account-key-file=${join(p.pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(p.pki, 'sa.key')}`,
    `--api-audiences=${SA_ISSUER}`,
    `--audit-policy-file=${join(repoRoot, 'k3d', 'audit-policy.yaml')}`,
    `--audit-log-path=${p.auditLog}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--enable-aggregator-routing=true',
    `--cert-dir=${join(p.pki, 'generated')}`,
    '--profiling=false',
  ];
}

function controllerManagerArgs(p: StatePaths): string[] {
  return [
    `--kubeconfig=${p.kcmKubeconfig}`,
    '--secure-port=0',
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    [
      '--controllers=serviceaccount-controller',
      'serviceaccount-token-controller',
      'endpointslice-controller',
      'endpoints-controller',
      'deployment-controller',
      'replicaset-controller',
      'job-controller',
      'namespace-controller',
      'garbage-collector-controller',
      'root-ca-certificate-publisher-controller',
    ].join(','),
    `--service-account-private-key-file=${join(p.pki, 'sa.key')}`,
    `--root-ca-file=${p.caCert}`,
    `--cluster-cidr=${CLUSTER_CIDR}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--profiling=false',
  ];
}

const node = process.execPath;
const distFile = (f: string) => join(packageDir, 'dist', f);

/** Starts whatever is not running. Returns once the API, the controllers and the node agent are up. */
export async function up(log: Log = () => {}): Promise<ClusterInfo> {
  const started = Date.now();
  const p = statePaths();
  // The node agent runs pods from the checkout that started it: a cluster left running by another
  // checkout would run that checkout's programs, so it is replaced rather than reused.
  const owner = clusterOwner(p.dir);
  if (owner !== undefined && owner !== repoRoot) {
    log(`the running cluster was started from ${owner}; restarting it from ${repoRoot}`);
    await down(log);
  }
  buildBinaries(log);
  if (!existsSync(distFile('main.js')))
    throw new Error(`local cluster: ${distFile('main.js')} is missing: run npm run build -w @minimesh/local-cluster`);
  for (const d of [p.dir, p.logs, p.pids, p.sockets, p.pods]) mkdirSync(d, { recursive: true });
  writeFileSync(join(p.dir, OWNER_FILE), repoRoot);
  ensurePki(p);
  writeKubeconfigs(p);
  ensureNodeNetwork();

  if (!isRunning(p, 'etcd')) {
    log('starting etcd');
    startDetached(
      p,
      'etcd',
      binPath('etcd'),
      [
        '--name=mm-etcd',
        `--data-dir=${p.etcdData}`,
        '--listen-client-urls=http://127.0.0.1:2379',
        '--advertise-client-urls=http://127.0.0.1:2379',
        '--listen-peer-urls=http://127.0.0.1:2380',
        '--initial-advertise-peer-urls=http://127.0.0.1:2380',
        '--initial-cluster=mm-etcd=http://127.0.0.1:2380',
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      { netns: NODE_NETNS },
    );
  }
  if (!isRunning(p, 'node-dialer')) {
    startDetached(p, 'node-dialer', node, [distFile('bridge.js'), 'dialer', p.nodeDialer], { netns: NODE_NETNS });
  }
  if (!isRunning(p, 'host-dialer')) {
    startDetached(p, 'host-dialer', node, [distFile('bridge.js'), 'dialer', p.hostDialer, '--loopback-only']);
  }
  if (!isRunning(p, 'api-bridge')) {
    startDetached(p, 'api-bridge', node, [
      distFile('bridge.js'),
      'listen',
      `127.0.0.1:${API_PORT}`,
      p.nodeDialer,
      `127.0.0.1:${API_PORT}`,
    ]);
  }
  if (!isRunning(p, 'kube-apiserver')) {
    log('starting kube-apiserver');
    startDetached(p, 'kube-apiserver', binPath('kube-apiserver'), apiserverArgs(p), { netns: NODE_NETNS });
  }
  const admin = adminClient();
  // Generous: a loaded 2-core machine has been seen to need more than 90 s.
  await waitFor('kube-apiserver /readyz (see logs/kube-apiserver.log)', 180_000, async () => {
    if (!isRunning(p, 'kube-apiserver')) throw new Error('kube-apiserver exited');
    const text = await admin.request<string>('GET', '/readyz');
    return String(text).trim() === 'ok';
  }).catch((err: Error) => {
    const tail = readFileSync(join(p.logs, 'kube-apiserver.log'), 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(`${err.message}\n${tail}`, { cause: err });
  });
  if (!isRunning(p, 'kube-controller-manager')) {
    log('starting kube-controller-manager');
    startDetached(p, 'kube-controller-manager', binPath('kube-controller-manager'), controllerManagerArgs(p), {
      netns: NODE_NETNS,
    });
  }
  if (!isRunning(p, 'node-agent')) {
    log('starting the node agent');
    startDetached(p, 'node-agent', node, [distFile('agent/main.js')], {
      env: { ...process.env, MINIMESH_CLUSTER_DIR: p.dir },
    });
  }
  await waitFor(
    'the default ServiceAccount (kube-controller-manager, see logs/kube-controller-manager.log)',
    120_000,
    async () => Boolean(await admin.get('/api/v1/namespaces/default/serviceaccounts/default')),
  );
  await waitFor(`Node ${NODE_NAME} Ready (node agent, see logs/node-agent.log)`, 120_000, async () => {
    const n = await admin.get(`/api/v1/nodes/${NODE_NAME}`);
    return Boolean(
      n?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'),
    );
  });
  log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return clusterInfo(p.dir);
}

const COMPONENTS = [
  'etcd',
  'node-dialer',
  'host-dialer',
  'api-bridge',
  'kube-apiserver',
  'kube-controller-manager',
  'node-agent',
];

/** True when every component runs and the API answers /readyz. */
export async function isHealthy(dir = stateDir()): Promise<boolean> {
  const p = statePaths(dir);
  if (!existsSync(p.adminKubeconfig)) return false;
  if (!COMPONENTS.every((c) => isRunning(p, c))) return false;
  try {
    return String(await adminClient(dir).request<string>('GET', '/readyz')).trim() === 'ok';
  } catch {
    return false;
  }
}

export interface ComponentStatus {
  name: string;
  pid?: number;
  running: boolean;
}

export function componentStatus(dir = stateDir()): ComponentStatus[] {
  const p = statePaths(dir);
  return COMPONENTS.map((name) => ({ name, pid: readPid(p, name), running: isRunning(p, name) }));
}

/**
 * Makes sure the cluster runs and returns where it is. Idempotent and safe to call from parallel
 * processes: the start runs `main.js up` under flock(1) on `<dir>.lock`.
 */
const OWNER_FILE = 'checkout';

/** The repository checkout whose programs the running cluster's node agent starts, if known. */
function clusterOwner(dir: string): string | undefined {
  try {
    return readFileSync(join(dir, OWNER_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function ensureCluster(): Promise<ClusterInfo> {
  const dir = stateDir();
  if (clusterOwner(dir) === repoRoot && (await isHealthy(dir))) return clusterInfo(dir);
  await runLocked('up');
  return clusterInfo(dir);
}

/** `npm run cluster -- down`, under the same lock as ensureCluster(). */
export async function stopCluster(): Promise<void> {
  await runLocked('down');
}

/** Runs `main.js <command>` under flock(1) on `<dir>.lock` (the CLI's up and down take the same lock). */
function runLocked(command: 'up' | 'down'): Promise<void> {
  const dir = stateDir();
  const p = statePaths(dir);
  return new Promise<void>((resolve, reject) => {
    const child = spawn('flock', [p.lock, node, distFile('main.js'), command], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MINIMESH_CLUSTER_DIR: dir },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`local cluster: ${command} failed (exit ${code}):\n${output.slice(-4000)}`)),
    );
  });
}

/** Stops every process, removes every network namespace, mount and file the cluster made. */
export async function down(log: Log = () => {}): Promise<void> {
  const p = statePaths();
  // The node agent first, so it does not restart containers while they are being stopped.
  await stopProcess(p, 'node-agent');
  for (const ns of listNetns(POD_NETNS_PREFIX)) {
    log(`removing ${ns}`);
    await destroyNetns(ns);
  }
  for (const name of pidFileNames(p)) {
    const pid = readPid(p, name);
    if (pid !== undefined) await killGroup(pid);
  }
  if (listNetns(NODE_NETNS).includes(NODE_NETNS)) {
    log(`removing ${NODE_NETNS}`);
    await destroyNetns(NODE_NETNS);
  }
  unmountUnder(p.dir);
  removeCreatedMountpoints(p);
  rmSync(p.dir, { recursive: true, force: true });
  rmSync(p.lock, { force: true });
}

/** Mounts (tmpfs emptyDirs) below `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  let lines: string[] = [];
  try {
    lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  } catch {
    return [];
  }
  return lines
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' '))
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

function unmountUnder(dir: string): void {
  for (const m of mountsUnder(dir)) {
    try {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
  }
}

/** Directories the node agent had to create on the host filesystem as mount points; removed when empty. */
function removeCreatedMountpoints(p: StatePaths): void {
  if (!existsSync(p.createdMountpoints)) return;
  const dirs = [...new Set(readFileSync(p.createdMountpoints, 'utf8').split('\n').filter(Boolean))].sort(
    (a, b) => b.length - a.length,
  );
  for (const d of dirs) {
    try {
      if (existsSync(d) && readdirSync(d).length === 0) rmdirSync(d);
    } catch {
      /* not empty or gone */
    }
  }
}
