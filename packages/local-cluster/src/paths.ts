// Where everything lives: the state directory, the cached Kubernetes binaries, the repository, and
// the fixed addresses of the local cluster's network.
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const K8S_VERSION = process.env.MINIMESH_K8S_VERSION ?? 'v1.33.13';
/** The node network namespace (holds the bridge, etcd, kube-apiserver, kube-controller-manager). */
export const NODE_NETNS = 'mm-node';
/** Every pod network namespace is named `mm-pod-<uid prefix>`. */
export const POD_NETNS_PREFIX = 'mm-pod-';
export const NODE_NAME = 'mm-node';
export const BRIDGE = 'mm0';
/** The node's address on the bridge; pods' default gateway and their way to the API server. */
export const NODE_IP = '10.23.0.1';
export const CLUSTER_CIDR = '10.23.0.0/16';
export const SERVICE_CIDR = '10.247.0.0/16';
export const KUBERNETES_SERVICE_IP = '10.247.0.1';
export const API_PORT = 6443;
export const API_SERVER = `https://127.0.0.1:${API_PORT}`;
/** The service-account token issuer (and default API audience). */
export const SA_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/** packages/local-cluster (works from src/ under tsx and from dist/). */
export const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = resolve(packageDir, '..', '..');

export function stateDir(): string {
  return resolve(process.env.MINIMESH_CLUSTER_DIR ?? '/tmp/minimesh-cluster');
}

export function cacheDir(): string {
  return resolve(process.env.MINIMESH_CACHE ?? join(homedir(), '.cache', 'minimesh'));
}

export function binDir(): string {
  return join(cacheDir(), 'k8s', K8S_VERSION, 'bin');
}

export function binPath(name: 'kube-apiserver' | 'kube-controller-manager' | 'etcd' | 'kubectl'): string {
  return join(binDir(), name);
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
    kcmKubeconfig: join(dir, 'kube-controller-manager.kubeconfig'),
    auditLog: join(dir, 'audit.log'),
    etcdData: join(dir, 'etcd'),
    logs: join(dir, 'logs'),
    pids: join(dir, 'pids'),
    sockets: join(dir, 'sock'),
    nodeDialer: join(dir, 'sock', 'node-dialer.sock'),
    hostDialer: join(dir, 'sock', 'host-dialer.sock'),
    pods: join(dir, 'pods'),
    tokens: join(dir, 'tokens'),
    createdMountpoints: join(dir, 'created-mountpoints'),
    lock: `${dir}.lock`,
  };
}
export type StatePaths = ReturnType<typeof statePaths>;
