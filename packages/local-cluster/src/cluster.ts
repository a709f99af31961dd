// Starting, checking and stopping the local cluster: a real Kubernetes node in one network namespace
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet, kube-proxy, and
// CoreDNS as the cluster DNS; each process is a row of COMPONENTS in components.ts, which `up` and
// `down` walk). `up` is idempotent (it starts only what is not running);
// ensureCluster() runs it under a file lock so parallel test files and packages can call it.
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { COMPONENTS, distFile, startPhase, stopComponents } from './components.js';
import { assertRunning, ComponentError, waitFor } from './wait.js';
import { coreDnsObjects, objectPath } from './coredns.js';
import {
  mountNamespaceHolders,
  pidsWithArg,
  removeCgroupTree,
  removeSystemCgroup,
  removeCreatedMountpoints,
  restoreSysctls,
} from './host.js';
import { ctrFor, importImages, listImages, requireNodeImages, staleImages } from './images.js';
import { createKubeClient, credentialsFromFiles, renderKubeconfig, type KubeClient } from './kube-client.js';
import {
  containerdConfig,
  cniConfig,
  kubeProxyConfig,
  kubeletConfig,
  kubeletResolvConf,
  nodePaths,
  HOST_CNI_PLUGINS_DIR,
} from './node-config.js';
import { ensurePki } from './pki.js';
import {
  API_SERVER,
  BRIDGE,
  CLUSTER_CIDR,
  K8S_BINARIES,
  NODE_IP,
  NODE_NAME,
  NODE_NETNS,
  SERVICE_CIDR,
  binDir,
  binPath,
  containerdRoot,
  packageDir,
  repoRoot,
  stateDir,
  statePaths,
  type StatePaths,
} from './paths.js';
import {
  destroyNetns,
  isRunning,
  killGroup,
  listNetns,
  pidAlive,
  pidFileNames,
  readPid,
  run,
  stopProcess,
} from './procs.js';

export interface ClusterInfo {
  /** The state directory (MINIMESH_CLUSTER_DIR, default /tmp/minimesh-cluster). */
  dir: string;
  /** Admin kubeconfig (user minimesh-admin, group system:masters), server https://127.0.0.1:<port>. */
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
  /** Where the Kubernetes binaries (kube-apiserver, kubelet, kubectl...) live. */
  binDir: string;
  kubectlPath: string;
  /** containerd's socket (ctr --address, crictl --runtime-endpoint). */
  containerdSocket: string;
  /** The node's CNI directories (host paths, in the state directory): plugins, and the conflist containerd reads. */
  cniBinDir: string;
  cniConfDir: string;
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
    containerdSocket: p.containerdSocket,
    cniBinDir: nodePaths(p).cniBinDir,
    cniConfDir: nodePaths(p).cniConfDir,
  };
}

/** A client authenticated as the cluster admin. */
export function adminClient(dir = stateDir()): KubeClient {
  const p = statePaths(dir);
  return createKubeClient(credentialsFromFiles({ ca: p.caCert, cert: p.adminCert, key: p.adminKey }));
}

type Log = (msg: string) => void;

/**
 * Builds the Kubernetes binaries when one is missing (scripts/setup.sh normally has): one line before,
 * one after, the go command's output in build-k8s.log (its tail in the error when the build fails).
 */
function buildBinaries(p: StatePaths, log: Log): void {
  const missing = K8S_BINARIES.filter((b) => !existsSync(join(binDir(), b)));
  if (missing.length === 0) return;
  mkdirSync(p.logs, { recursive: true });
  const buildLog = join(p.logs, 'build-k8s.log');
  log(
    `Kubernetes binaries (${missing.join(', ')} missing): building from the Go module proxy (first time, ~18 min), output in ${buildLog}`,
  );
  const started = Date.now();
  const out = openSync(buildLog, 'w');
  try {
    execFileSync('bash', [join(packageDir, 'scripts', 'build-k8s.sh')], { stdio: ['ignore', out, out] });
  } catch (err) {
    const tail = readFileSync(buildLog, 'utf8').trimEnd().split('\n').slice(-20).join('\n');
    throw new Error(`local cluster: building the Kubernetes binaries failed; the end of ${buildLog}:\n${tail}`, {
      cause: err,
    });
  } finally {
    closeSync(out);
  }
  log(`Kubernetes binaries: built in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** Host programs the node needs; setup.sh installs them (Debian packages). */
const HOST_TOOLS: [string, string][] = [
  ['containerd', 'containerd'],
  ['containerd-shim-runc-v2', 'containerd'],
  ['ctr', 'containerd'],
  ['runc', 'runc'],
  ['nsenter', 'util-linux'],
  ['unshare', 'util-linux'],
  ['iptables', 'iptables'],
];

function requireHostTools(): void {
  const path = (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin', '/usr/bin']);
  const missing = HOST_TOOLS.filter(([bin]) => !path.some((d) => existsSync(join(d, bin))));
  if (!existsSync('/usr/lib/cni/bridge')) missing.push(['/usr/lib/cni/bridge', 'containernetworking-plugins']);
  if (missing.length > 0)
    throw new Error(
      `local cluster: ${missing.map(([b]) => b).join(', ')} not found: run bash scripts/setup.sh (Debian packages ${[...new Set(missing.map(([, pkg]) => pkg))].join(', ')})`,
    );
}

function inNode(cmd: string, args: string[]): string {
  return run('nsenter', [`--net=/var/run/netns/${NODE_NETNS}`, '--', cmd, ...args]);
}

function ensureNodeNetwork(): void {
  if (!listNetns(NODE_NETNS).includes(NODE_NETNS)) run('ip', ['netns', 'add', NODE_NETNS]);
  const ip = (...args: string[]) => run('ip', ['-n', NODE_NETNS, ...args]);
  ip('link', 'set', 'lo', 'up');
  if (!ip('-o', 'link', 'show').includes(` ${BRIDGE}:`)) ip('link', 'add', BRIDGE, 'type', 'bridge');
  if (!ip('-o', 'addr', 'show', 'dev', BRIDGE).includes(`${NODE_IP}/16`))
    ip('addr', 'add', `${NODE_IP}/16`, 'dev', BRIDGE);
  ip('link', 'set', BRIDGE, 'up');
  // Without this route the node namespace itself (API server, kubelet probes, the host's dialer)
  // cannot reach ClusterIPs: "connect: Network is unreachable". Pods route through the node anyway.
  if (!ip('route', 'show', SERVICE_CIDR).includes(SERVICE_CIDR))
    ip('route', 'add', SERVICE_CIDR, 'dev', BRIDGE, 'src', NODE_IP);
  // Both are per network namespace on this kernel: routing between pods and kube-proxy's rules for
  // traffic between pods on the same bridge.
  inNode('sysctl', ['-qw', 'net.ipv4.ip_forward=1', 'net.bridge.bridge-nf-call-iptables=1']);
}

function kubeconfigFor(p: StatePaths, name: string, user: string): string {
  return renderKubeconfig({
    name: user,
    caPem: readFileSync(p.caCert, 'utf8'),
    certPem: readFileSync(join(p.pki, `${name}.crt`), 'utf8'),
    keyPem: readFileSync(join(p.pki, `${name}.key`), 'utf8'),
  });
}

function writeConfigFiles(p: StatePaths): void {
  const n = nodePaths(p);
  for (const d of [
    p.kubeconfigs,
    p.containerd,
    n.cniConfDir,
    n.cniIpamDir,
    n.cniBinDir,
    p.kubelet,
    p.podLogs,
    p.kubeProxy,
  ])
    mkdirSync(d, { recursive: true });
  // The node's CNI bin dir: Debian's plugins, linked (what a DaemonSet adds there stays the cluster's).
  for (const plugin of readdirSync(HOST_CNI_PLUGINS_DIR)) {
    const link = join(n.cniBinDir, plugin);
    if (!existsSync(link)) symlinkSync(join(HOST_CNI_PLUGINS_DIR, plugin), link);
  }
  const files: [string, string][] = [
    [p.adminKubeconfig, kubeconfigFor(p, 'admin', 'minimesh-admin')],
    [n.controllerManagerKubeconfig, kubeconfigFor(p, 'kube-controller-manager', 'system:kube-controller-manager')],
    [n.schedulerKubeconfig, kubeconfigFor(p, 'kube-scheduler', 'system:kube-scheduler')],
    [n.kubeletKubeconfig, kubeconfigFor(p, 'kubelet-client', `system:node:${NODE_NAME}`)],
    [n.kubeProxyKubeconfig, kubeconfigFor(p, 'kube-proxy', 'system:kube-proxy')],
    [n.containerdConfig, containerdConfig(p, containerdRoot())],
    [join(n.cniConfDir, '10-minimesh.conflist'), cniConfig(p)],
    [n.kubeletConfig, kubeletConfig(p)],
    [n.kubeletResolvConf, kubeletResolvConf()],
    [n.kubeProxyConfig, kubeProxyConfig(p)],
  ];
  // Only when changed: kube-proxy exits when its configuration file is written to.
  for (const [file, text] of files) {
    if (existsSync(file) && readFileSync(file, 'utf8') === text) continue;
    writeFileSync(file, text, { mode: 0o600 });
  }
  // The audit policy is copied, so the running cluster does not depend on this checkout's files.
  copyFileSync(join(repoRoot, 'k3d', 'audit-policy.yaml'), join(p.dir, 'audit-policy.yaml'));
}

const node = process.execPath;

/** Marks a state directory as this kind of cluster (the agent-based one before it had none). */
const KIND_FILE = 'node-kind';
const KIND = 'kubelet+containerd';

/** Starts whatever is not running. Returns once the API, the node (Ready) and CoreDNS are up. */
export async function up(log: Log = () => {}): Promise<ClusterInfo> {
  const started = Date.now();
  const p = statePaths();
  if (existsSync(p.dir) && readKind(p) !== KIND) {
    log(`${p.dir} holds a cluster of another kind (the node agent's): removing it first`);
    await down(log);
  }
  requireHostTools();
  buildBinaries(p, log);
  const images = listImages();
  requireNodeImages(images);
  if (!existsSync(distFile('bridge.js')))
    throw new Error(`local cluster: ${distFile('bridge.js')} is missing: run npm run build -w @minimesh/local-cluster`);
  const fresh = !existsSync(join(p.pki, 'done'));
  for (const d of [p.dir, p.logs, p.pids, p.sockets]) mkdirSync(d, { recursive: true });
  writeFileSync(join(p.dir, KIND_FILE), `${KIND}\n`);
  if (fresh) await sweepLeftovers(p, log);
  ensurePki(p);
  writeConfigFiles(p);
  ensureNodeNetwork();

  await startPhase(p, 'network', log);

  // containerd and the image import do not need the API: they run while kube-apiserver starts.
  const runtime = startRuntime(p, images, log);
  const admin = adminClient();
  const apiLog = join(p.logs, 'kube-apiserver.log');
  // Generous: a loaded 2-core machine has been seen to need more than 90 s.
  const apiReady = waitFor(
    180_000,
    async () => {
      assertRunning(p, 'etcd');
      assertRunning(p, 'kube-apiserver');
      return String(await admin.request<string>('GET', '/readyz')).trim() === 'ok';
    },
    () => new ComponentError('kube-apiserver', apiLog, 'did not answer /readyz in 180 s'),
  );
  await Promise.all([runtime, apiReady]);

  await startPhase(p, 'api', log);
  const kubeletLog = join(p.logs, 'kubelet.log');
  await waitFor(
    120_000,
    async () => {
      assertRunning(p, 'kubelet');
      assertRunning(p, 'containerd');
      const n = await admin.get(`/api/v1/nodes/${NODE_NAME}`);
      return Boolean(
        n?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'),
      );
    },
    () => new ComponentError('kubelet', kubeletLog, `did not report Node ${NODE_NAME} Ready in 120 s`),
  );
  await waitFor(
    120_000,
    async () => {
      assertRunning(p, 'kube-controller-manager');
      return Boolean(await admin.get('/api/v1/namespaces/default/serviceaccounts/default'));
    },
    () =>
      new ComponentError(
        'kube-controller-manager',
        join(p.logs, 'kube-controller-manager.log'),
        'made no default ServiceAccount in 120 s',
      ),
  );
  await ensureCoreDns(p, admin, log);
  log(`cluster up in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return clusterInfo(p.dir);
}

function readKind(p: StatePaths): string | undefined {
  try {
    return readFileSync(join(p.dir, KIND_FILE), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The private mount namespace, containerd, and the images imported into it. */
async function startRuntime(p: StatePaths, images: ReturnType<typeof listImages>, log: Log): Promise<void> {
  await startPhase(p, 'runtime', log);
  await importImages(ctrFor(p.containerdSocket), images, log);
}

/** CoreDNS: applied (server-side apply, idempotent) and available, or the one line that says why not. */
async function ensureCoreDns(p: StatePaths, admin: KubeClient, log: Log): Promise<void> {
  const dep = await admin.get('/apis/apps/v1/namespaces/kube-system/deployments/coredns');
  if (!dep || (dep.status?.availableReplicas ?? 0) < 1) log('starting CoreDNS (kube-system/coredns)');
  for (const o of coreDnsObjects()) {
    await admin.request(
      'PATCH',
      `${objectPath(o)}?fieldManager=minimesh-local-cluster&force=true`,
      o,
      'application/apply-patch+yaml',
    );
  }
  let problem = '';
  let logFile = join(p.podLogs, '(no coredns pod yet)');
  await waitFor(
    60_000,
    async () => {
      const d = await admin.get('/apis/apps/v1/namespaces/kube-system/deployments/coredns');
      if ((d?.status?.availableReplicas ?? 0) >= 1) return true;
      const pods = await admin.request('GET', '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns');
      for (const pod of pods.items ?? []) {
        logFile = join(p.podLogs, `kube-system_${pod.metadata.name}_${pod.metadata.uid}`, 'coredns');
        const st = pod.status?.containerStatuses?.[0];
        const waiting = st?.state?.waiting;
        if (st?.state?.running && !st.ready)
          problem = 'running but not Ready (its readiness probe /ready on 8181 fails)';
        if (!pod.spec?.nodeName)
          problem = `not scheduled: ${pod.status?.conditions?.find((c: { type: string }) => c.type === 'PodScheduled')?.message ?? 'pending'}`;
        if (waiting?.reason && waiting.reason !== 'ContainerCreating')
          problem = `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
        if (waiting?.reason === 'ErrImageNeverPull')
          throw new ComponentError('CoreDNS', logFile, `cannot start: ${problem}`);
      }
      return false;
    },
    () => new ComponentError('CoreDNS', logFile, `was not available in 60 s${problem ? `: ${problem}` : ''}`),
  );
}

/** True when every component runs and the API answers /readyz. */
export async function isHealthy(dir = stateDir()): Promise<boolean> {
  const p = statePaths(dir);
  if (!existsSync(p.adminKubeconfig) || readKind(p) !== KIND) return false;
  if (!COMPONENTS.every((c) => isRunning(p, c.name))) return false;
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
  return COMPONENTS.map(({ name }) => ({ name, pid: readPid(p, name), running: isRunning(p, name) }));
}

/**
 * Makes sure the cluster runs, with this checkout's latest built images imported, and returns where
 * it is. Idempotent and safe to call from parallel processes: the start runs `main.js up` under
 * flock(1) on `<dir>.up.lock`. Fast (one /readyz and a stat per image) when nothing is to do.
 */
export async function ensureCluster(): Promise<ClusterInfo> {
  const dir = stateDir();
  if ((await isHealthy(dir)) && staleImages().length === 0) return clusterInfo(dir);
  await runLocked('up');
  return clusterInfo(dir);
}

/** `npm run cluster -- down`, under the same lock as ensureCluster(). */
export async function stopCluster(): Promise<void> {
  await runLocked('down');
}

/** The lock `up` and `down` take (not the machine lock /tmp/minimesh-cluster.lock, which callers may hold). */
export function upLockPath(dir = stateDir()): string {
  return `${dir}.up.lock`;
}

/** Runs `main.js <command>` under flock(1); -o: the lock's descriptor is not inherited by the cluster's processes. */
function runLocked(command: 'up' | 'down'): Promise<void> {
  const dir = stateDir();
  return new Promise<void>((resolve, reject) => {
    const child = spawn('flock', ['-o', upLockPath(dir), node, distFile('main.js'), command], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MINIMESH_CLUSTER_DIR: dir, MINIMESH_UP_LOCKED: '1' },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) return resolve();
      // The last "cluster: ..." line is the reason; the progress lines before it are context.
      const reason = output
        .split('\n')
        .reverse()
        .find((l) => l.startsWith('cluster: '));
      reject(
        new Error(
          reason
            ? reason.slice('cluster: '.length)
            : `local cluster: ${command} failed (exit ${code}):\n${output.slice(-4000)}`,
        ),
      );
    });
  });
}

/** ctr, when containerd answers: removes every container and task of the k8s.io namespace. */
async function removeContainers(p: StatePaths, log: Log): Promise<void> {
  if (!isRunning(p, 'containerd')) return;
  const ctr = ctrFor(p.containerdSocket);
  try {
    const tasks = (await ctr(['tasks', 'ls', '-q'])).split('\n').filter(Boolean);
    if (tasks.length) await ctr(['tasks', 'delete', '--force', ...tasks]).catch(() => '');
    const containers = (await ctr(['containers', 'ls', '-q'])).split('\n').filter(Boolean);
    if (containers.length) {
      await ctr(['containers', 'delete', ...containers]).catch(() => '');
      log(`removed ${containers.length} container(s) from containerd`);
    }
  } catch {
    /* containerd not answering: the cgroup sweep below still stops every process */
  }
}

/**
 * Stops every process and removes every network namespace, mount, cgroup and file the cluster made,
 * and puts back the sysctls kubelet changed. Order matters (COMPONENTS says which goes when):
 * controllers first (so nothing recreates pods), then kubelet and kube-proxy, then the containers
 * (through containerd, then any process left in the node's cgroups), containerd, its shims, the
 * mount namespace, the rest.
 */
export async function down(log: Log = () => {}): Promise<void> {
  const p = statePaths();
  await stopComponents(p, 'first');
  await removeContainers(p, log);
  const left = await removeCgroupTree();
  if (left.length) log(`cgroups still busy: ${left.join(', ')}`);
  await stopComponents(p, 'runtime');
  // The agent-based cluster (before the real node) ran pods in mm-pod-* namespaces: clean those too.
  if (existsSync(join(p.pids, 'node-agent.pid'))) {
    await stopProcess(p, 'node-agent');
    for (const ns of listNetns('mm-pod-')) await destroyNetns(ns);
  }
  // The rest at once (etcd, kube-apiserver, the bridges, exposeHostPort listeners): kube-apiserver's
  // graceful shutdown alone takes seconds, and nothing here depends on the order any more.
  await Promise.all(
    pidFileNames(p)
      .map((name) => readPid(p, name))
      .filter((pid): pid is number => pid !== undefined)
      .map((pid) => killGroup(pid)),
  );
  if (listNetns(NODE_NETNS).includes(NODE_NETNS)) {
    log(`removing ${NODE_NETNS}`);
    await destroyNetns(NODE_NETNS);
  }
  const busy = await removeSystemCgroup();
  if (busy) log(`cgroup still busy: ${busy}`);
  const restored = restoreSysctls();
  if (restored === undefined) log('another instance runs a kubelet: it restores the host sysctls when it stops');
  for (const change of restored ?? []) log(`restored ${change}`);
  unmountUnder(p.dir);
  removeCreatedMountpoints(p);
  rmSync(p.dir, { recursive: true, force: true });
}

/** A fresh start after a crash or someone else's `down`: stop what a previous node left in our cgroups. */
async function sweepLeftovers(p: StatePaths, log: Log): Promise<void> {
  const n = nodePaths(p);
  const stale = [
    ...pidsWithArg(n.kubeletConfig),
    ...pidsWithArg(n.containerdConfig),
    ...pidsWithArg(p.containerdSocket),
    ...mountNamespaceHolders(),
  ].filter(pidAlive);
  for (const pid of stale) await killGroup(pid, 500);
  await removeCgroupTree();
  if (stale.length) log(`stopped ${stale.length} leftover process(es) of an earlier node (kubelet, containerd, shims)`);
}

/** Mounts below `dir`, deepest first. */
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
