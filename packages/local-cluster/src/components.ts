// The local cluster's processes, one row each, in start order: how `up` starts each (and in which
// phase), what it waits for, and how `down` stops it. up() and down() in cluster.ts walk this table;
// componentStatus and isHealthy read its names.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ensureCgroupRoot,
  ensureMountpoints,
  mountNamespaceScript,
  PRIVATE_TMPFS,
  pidsWithArg,
  saveSysctls,
} from './host.js';
import { ctrFor } from './images.js';
import { kubeletArgs, nodePaths } from './node-config.js';
import {
  API_PORT,
  CLUSTER_CIDR,
  NODE_IP,
  NODE_NAME,
  NODE_NETNS,
  SA_ISSUER,
  SERVICE_CIDR,
  binPath,
  containerdRoot,
  packageDir,
  type StatePaths,
} from './paths.js';
import { isRunning, killGroup, readPid, startDetached, stopProcess } from './procs.js';
import { assertRunning, ComponentError, waitFor } from './wait.js';

type Log = (msg: string) => void;

export interface Component {
  name: string;
  /**
   * When `up` starts it: `network` at once (the node network is there), `runtime` one after another
   * while kube-apiserver starts (containerd, and the images imported into it, do not need the API),
   * `api` once the API answers /readyz.
   */
  phase: 'network' | 'runtime' | 'api';
  /** Whether `up` says "starting <name>" (the quiet ones are our own bridges). */
  announce: boolean;
  start(p: StatePaths): unknown;
  /** Awaited after a start and also when it was already running: it must answer before `up` goes on. */
  ready?(p: StatePaths): Promise<void>;
  /**
   * When `down` stops it: `first` in table order (controllers first, so nothing recreates pods; then
   * kubelet and kube-proxy), before the containers are removed; `runtime` in reverse table order after
   * them; `rest` all at once at the end (nothing there depends on the order).
   */
  down: 'first' | 'runtime' | 'rest';
  /** How it stops (default: its process group, 3 s grace). */
  stop?(p: StatePaths): Promise<void>;
}

const node = process.execPath;
export const distFile = (f: string): string => join(packageDir, 'dist', f);

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
    '--enable-admission-plugins=NodeRestriction',
    '--allow-privileged=true',
    `--service-account-issuer=${SA_ISSUER}`,
    `--service-account-key-file=${join(p.pki, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(p.pki, 'sa.key')}`,
    `--api-audiences=${SA_ISSUER}`,
    // kubectl logs/exec/port-forward and the API proxy reach the kubelet at the Node's InternalIP
    // (the default tries the Hostname first, which no resolver here knows).
    '--kubelet-preferred-address-types=InternalIP,Hostname',
    `--kubelet-client-certificate=${join(p.pki, 'apiserver-kubelet-client.crt')}`,
    `--kubelet-client-key=${join(p.pki, 'apiserver-kubelet-client.key')}`,
    `--kubelet-certificate-authority=${p.caCert}`,
    `--audit-policy-file=${join(p.dir, 'audit-policy.yaml')}`,
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
    `--kubeconfig=${nodePaths(p).controllerManagerKubeconfig}`,
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
      'daemonset-controller',
      'statefulset-controller',
      'job-controller',
      'namespace-controller',
      'garbage-collector-controller',
      'root-ca-certificate-publisher-controller',
      'pod-garbage-collector-controller',
      // Takes the not-ready taint kubelet registers the Node with off once it is Ready (and taints it
      // again, evicting pods after 5 minutes, if the kubelet stops reporting).
      'node-lifecycle-controller',
      'taint-eviction-controller',
    ].join(','),
    `--service-account-private-key-file=${join(p.pki, 'sa.key')}`,
    `--root-ca-file=${p.caCert}`,
    `--cluster-cidr=${CLUSTER_CIDR}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--profiling=false',
  ];
}

function schedulerArgs(p: StatePaths): string[] {
  const kc = nodePaths(p).schedulerKubeconfig;
  return [
    `--kubeconfig=${kc}`,
    `--authentication-kubeconfig=${kc}`,
    `--authorization-kubeconfig=${kc}`,
    '--secure-port=0',
    '--leader-elect=false',
    '--profiling=false',
  ];
}

export const COMPONENTS: readonly Component[] = [
  {
    name: 'etcd',
    phase: 'network',
    announce: true,
    down: 'rest',
    start: (p) =>
      startDetached(
        p,
        'etcd',
        binPath('etcd'),
        [
          `--name=${NODE_NAME}-etcd`,
          `--data-dir=${p.etcdData}`,
          '--listen-client-urls=http://127.0.0.1:2379',
          '--advertise-client-urls=http://127.0.0.1:2379',
          '--listen-peer-urls=http://127.0.0.1:2380',
          '--initial-advertise-peer-urls=http://127.0.0.1:2380',
          `--initial-cluster=${NODE_NAME}-etcd=http://127.0.0.1:2380`,
          '--unsafe-no-fsync',
          '--log-level=warn',
        ],
        { netns: NODE_NETNS },
      ),
  },
  {
    name: 'node-dialer',
    phase: 'network',
    announce: false,
    down: 'rest',
    start: (p) =>
      startDetached(p, 'node-dialer', node, [distFile('bridge.js'), 'dialer', p.nodeDialer], { netns: NODE_NETNS }),
  },
  {
    name: 'host-dialer',
    phase: 'network',
    announce: false,
    down: 'rest',
    start: (p) =>
      startDetached(p, 'host-dialer', node, [distFile('bridge.js'), 'dialer', p.hostDialer, '--loopback-only']),
  },
  {
    name: 'api-bridge',
    phase: 'network',
    announce: false,
    down: 'rest',
    start: (p) =>
      startDetached(p, 'api-bridge', node, [
        distFile('bridge.js'),
        'listen',
        `127.0.0.1:${API_PORT}`,
        p.nodeDialer,
        `127.0.0.1:${API_PORT}`,
      ]),
  },
  {
    name: 'kube-apiserver',
    phase: 'network',
    announce: true,
    down: 'rest',
    start: (p) =>
      startDetached(p, 'kube-apiserver', binPath('kube-apiserver'), apiserverArgs(p), { netns: NODE_NETNS }),
  },
  {
    // containerd and kubelet share one private mount namespace: their container mounts and the fixed
    // host paths they write (PRIVATE_TMPFS) stay inside it and vanish with it.
    name: 'mount-namespace',
    phase: 'runtime',
    announce: false,
    down: 'runtime',
    async start(p) {
      ensureMountpoints(p);
      startDetached(p, 'mount-namespace', 'unshare', [
        '--mount',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        mountNamespaceScript(),
      ]);
      const holder = readPid(p, 'mount-namespace')!;
      await waitFor(
        10_000,
        () => {
          assertRunning(p, 'mount-namespace');
          const cmd = readFileSync(`/proc/${holder}/cmdline`, 'utf8');
          return cmd.startsWith('sleep');
        },
        () =>
          new ComponentError(
            'mount-namespace',
            join(p.logs, 'mount-namespace.log'),
            `did not mount ${PRIVATE_TMPFS.join(', ')} in 10 s`,
          ),
      );
    },
  },
  {
    name: 'containerd',
    phase: 'runtime',
    announce: true,
    down: 'runtime',
    start(p) {
      mkdirSync(containerdRoot(), { recursive: true });
      startDetached(p, 'containerd', 'containerd', ['--config', nodePaths(p).containerdConfig, '--log-level', 'warn'], {
        netns: NODE_NETNS,
        mountNsPid: readPid(p, 'mount-namespace'),
      });
    },
    async ready(p) {
      const ctr = ctrFor(p.containerdSocket);
      await waitFor(
        30_000,
        async () => {
          assertRunning(p, 'containerd');
          await ctr(['version']);
          return true;
        },
        () => new ComponentError('containerd', join(p.logs, 'containerd.log'), 'did not answer on its socket in 30 s'),
      );
    },
    async stop(p) {
      await stopProcess(p, 'containerd', 5000);
      // Its shims outlive it: they are found by the socket on their command line.
      for (const pid of pidsWithArg(p.containerdSocket)) await killGroup(pid, 500);
    },
  },
  {
    name: 'kube-controller-manager',
    phase: 'api',
    announce: true,
    down: 'first',
    start: (p) =>
      startDetached(p, 'kube-controller-manager', binPath('kube-controller-manager'), controllerManagerArgs(p), {
        netns: NODE_NETNS,
      }),
  },
  {
    name: 'kube-scheduler',
    phase: 'api',
    announce: true,
    down: 'first',
    start: (p) =>
      startDetached(p, 'kube-scheduler', binPath('kube-scheduler'), schedulerArgs(p), { netns: NODE_NETNS }),
  },
  {
    name: 'kubelet',
    phase: 'api',
    announce: true,
    down: 'first',
    start(p) {
      saveSysctls();
      ensureCgroupRoot();
      startDetached(p, 'kubelet', binPath('kubelet'), kubeletArgs(p), {
        netns: NODE_NETNS,
        mountNsPid: readPid(p, 'mount-namespace'),
      });
    },
  },
  {
    name: 'kube-proxy',
    phase: 'api',
    announce: true,
    down: 'first',
    start: (p) =>
      startDetached(p, 'kube-proxy', binPath('kube-proxy'), [`--config=${nodePaths(p).kubeProxyConfig}`], {
        netns: NODE_NETNS,
      }),
  },
];

/** Starts (when it is not running) each component of a phase, in table order, and waits for each to be ready. */
export async function startPhase(p: StatePaths, phase: Component['phase'], log: Log): Promise<void> {
  for (const c of COMPONENTS.filter((x) => x.phase === phase)) {
    if (!isRunning(p, c.name)) {
      if (c.announce) log(`starting ${c.name}`);
      await c.start(p);
    }
    await c.ready?.(p);
  }
}

/** Stops the components `down` stops at this point (`first`: table order; `runtime`: reverse order). */
export async function stopComponents(p: StatePaths, when: 'first' | 'runtime'): Promise<void> {
  const rows = COMPONENTS.filter((c) => c.down === when);
  for (const c of when === 'runtime' ? [...rows].reverse() : rows) await (c.stop ?? ((q) => stopProcess(q, c.name)))(p);
}
