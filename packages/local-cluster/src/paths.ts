// Where everything lives: the instance's names, the state directory, the cached binaries and images,
// the repository, and the fixed addresses of the local cluster's network.
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const K8S_VERSION = process.env.MINIMESH_K8S_VERSION ?? 'v1.33.13';

/**
 * The instance name (MINIMESH_CLUSTER_NAME, default `mm`): the node network namespace and the Node are
 * `<name>-node`, the cgroup root `/minimesh-<name>`, the default state directory `/tmp/minimesh-cluster`
 * (`/tmp/minimesh-cluster-<name>` for other names). Two instances never share a name, a namespace or a
 * directory; only one kubelet may run per machine at a time (see docs/local-cluster.md).
 */
export function clusterName(): string {
  const name = process.env.MINIMESH_CLUSTER_NAME ?? 'mm';
  if (!/^[a-z][a-z0-9]{0,9}$/.test(name))
    throw new Error(
      `MINIMESH_CLUSTER_NAME "${name}" is not valid: expected 1-10 lowercase letters or digits, starting with a letter`,
    );
  return name;
}

function apiPort(): number {
  const raw = process.env.MINIMESH_API_PORT ?? '6443';
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1024 || port > 65535)
    throw new Error(`MINIMESH_API_PORT "${raw}" is not valid: expected a port number from 1024 to 65535`);
  return port;
}

const NAME = clusterName();
/** The node network namespace (etcd, kube-apiserver, controllers, containerd, kubelet, kube-proxy, the pod bridge). */
export const NODE_NETNS = `${NAME}-node`;
/** The Node object's name (kubelet --hostname-override). */
export const NODE_NAME = `${NAME}-node`;
/** The pod bridge inside the node namespace (CNI bridge plugin). */
export const BRIDGE = 'mm0';
/** The node's address on the bridge: pods' default gateway, the Node's InternalIP, the API server's advertise address. */
export const NODE_IP = '10.23.0.1';
export const CLUSTER_CIDR = '10.23.0.0/16';
export const SERVICE_CIDR = '10.247.0.0/16';
export const KUBERNETES_SERVICE_IP = '10.247.0.1';
/** The cluster DNS Service `kube-system/kube-dns` (CoreDNS): kubelet's clusterDNS. */
export const CLUSTER_DNS_IP = '10.247.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
/** kube-apiserver's port: on the host's 127.0.0.1 and inside the node namespace alike (MINIMESH_API_PORT). */
export const API_PORT = apiPort();
export const API_SERVER = `https://127.0.0.1:${API_PORT}`;
/** The service-account token issuer (and default API audience). */
export const SA_ISSUER = 'https://kubernetes.default.svc.cluster.local';
/** kubelet's cgroupRoot, made in every cgroup v1 hierarchy before kubelet starts and removed by `down`. */
export const CGROUP_ROOT = `/minimesh-${NAME}`;
/** The cgroup of the node's own programs (etcd ... kubelet, containerd), beside CGROUP_ROOT (src/cgroups.ts). */
export const SYSTEM_CGROUP = `/minimesh-${NAME}-system`;

/** The images every node needs before pods can run (the sandbox and the cluster DNS). */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';
export const COREDNS_IMAGE = 'registry.k8s.io/coredns/coredns:v1.15.0';
/** The command that builds every image (scripts/images.sh, the interface with the image build). */
export const IMAGES_BUILD_COMMAND = 'bash scripts/images.sh build';

/** packages/local-cluster (works from src/ under tsx and from dist/). */
export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = resolve(packageDir, '..', '..');

export function stateDir(): string {
  const fallback = NAME === 'mm' ? '/tmp/minimesh-cluster' : `/tmp/minimesh-cluster-${NAME}`;
  return resolve(process.env.MINIMESH_CLUSTER_DIR ?? fallback);
}

export function cacheDir(): string {
  return resolve(process.env.MINIMESH_CACHE ?? join(homedir(), '.cache', 'minimesh'));
}

export function binDir(): string {
  return join(cacheDir(), 'k8s', K8S_VERSION, 'bin');
}

export const K8S_BINARIES = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
  'etcd',
  'kubectl',
] as const;
export type K8sBinary = (typeof K8S_BINARIES)[number];

export function binPath(name: K8sBinary): string {
  return join(binDir(), name);
}

/** containerd's root (content store, image snapshots): in the cache, so imported images survive `down`. */
export function containerdRoot(): string {
  return join(cacheDir(), 'containerd', NAME);
}

/** Well-known files inside the state directory. */
export function statePaths(dir = stateDir()) {
  return {
    dir,
    pki: join(dir, 'pki'),
    caCert: join(dir, 'pki', 'ca.crt'),
    caKey: join(dir, 'pki', 'ca.key'),
    adminCert: join(dir, 'pki', 'admin.crt'),
    adminKey: join(dir, 'pki', 'admin.key'),
    adminKubeconfig: join(dir, 'admin.kubeconfig'),
    kubeconfigs: join(dir, 'kubeconfigs'),
    auditLog: join(dir, 'audit.log'),
    etcdData: join(dir, 'etcd'),
    logs: join(dir, 'logs'),
    pids: join(dir, 'pids'),
    sockets: join(dir, 'sock'),
    nodeDialer: join(dir, 'sock', 'node-dialer.sock'),
    hostDialer: join(dir, 'sock', 'host-dialer.sock'),
    tokens: join(dir, 'tokens'),
    containerd: join(dir, 'containerd'),
    containerdSocket: join(dir, 'containerd', 'containerd.sock'),
    kubelet: join(dir, 'kubelet'),
    podLogs: join(dir, 'pod-logs'),
    cni: join(dir, 'cni'),
    kubeProxy: join(dir, 'kube-proxy'),
    /** Host directories made as mount points for the node's private mount namespace (removed by `down` when empty). */
    createdMountpoints: join(dir, 'created-mountpoints'),
    lock: `${dir}.lock`,
  };
}
export type StatePaths = ReturnType<typeof statePaths>;
