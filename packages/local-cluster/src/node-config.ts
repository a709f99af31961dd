// The node's configuration files, as pure functions of the state paths: containerd (CRI), the CNI
// network, kubelet and kube-proxy. docs/local-cluster.md explains each setting that matters here.
import { join } from 'node:path';
import {
  BRIDGE,
  CGROUP_ROOT,
  CLUSTER_CIDR,
  CLUSTER_DNS_IP,
  CLUSTER_DOMAIN,
  NODE_IP,
  NODE_NAME,
  PAUSE_IMAGE,
  type StatePaths,
} from './paths.js';

/** Debian's CNI plugins (bridge, host-local, portmap, loopback...): linked into the node's own bin dir. */
export const HOST_CNI_PLUGINS_DIR = '/usr/lib/cni';
export const CNI_NETWORK = 'minimesh';

/** Paths of the node's own files inside the state directory. */
export function nodePaths(p: StatePaths) {
  return {
    containerdConfig: join(p.containerd, 'config.toml'),
    containerdState: join(p.containerd, 'state'),
    runcRoot: join(p.containerd, 'runc'),
    cniConfDir: join(p.cni, 'net.d'),
    /**
     * The node's CNI bin dir: links to Debian's plugins, in the state directory so that a chained
     * plugin a DaemonSet installs (minimesh-cni) lands in the cluster's files, never in /usr/lib/cni.
     */
    cniBinDir: join(p.cni, 'bin'),
    cniIpamDir: join(p.cni, 'ipam'),
    kubeletConfig: join(p.kubelet, 'config.yaml'),
    kubeletRoot: join(p.kubelet, 'root'),
    kubeletResolvConf: join(p.kubelet, 'resolv.conf'),
    kubeletVolumePlugins: join(p.kubelet, 'volume-plugins'),
    kubeletKubeconfig: join(p.kubeconfigs, 'kubelet.kubeconfig'),
    kubeProxyConfig: join(p.kubeProxy, 'config.yaml'),
    kubeProxyKubeconfig: join(p.kubeconfigs, 'kube-proxy.kubeconfig'),
    schedulerKubeconfig: join(p.kubeconfigs, 'kube-scheduler.kubeconfig'),
    controllerManagerKubeconfig: join(p.kubeconfigs, 'kube-controller-manager.kubeconfig'),
  };
}

const toml = (s: string) => JSON.stringify(s);

/**
 * containerd 1.6 (version-2 schema). Everything but the root (content store and image snapshots,
 * kept in the cache so imports survive `down`) lives in the state directory.
 */
export function containerdConfig(p: StatePaths, root: string): string {
  const n = nodePaths(p);
  return `version = 2
root = ${toml(root)}
state = ${toml(n.containerdState)}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = ${toml(p.containerdSocket)}

[ttrpc]
  address = ${toml(`${p.containerdSocket}.ttrpc`)}

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = ${toml(join(p.containerd, 'opt'))}
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = ${toml(PAUSE_IMAGE)}
    # Required here: processes lack CAP_SYS_RESOURCE, so nobody may lower oom_score_adj (kubelet asks -998).
    restrict_oom_score_adj = true
    # Pod network namespaces under the state directory, not /var/run/netns.
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = ${toml(n.runcRoot)}
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = ${toml(n.cniBinDir)}
      conf_dir = ${toml(n.cniConfDir)}
      max_conf_num = 1
`;
}

/** The pod network: Debian's bridge + host-local + portmap plugins on bridge mm0 (the node IP is its gateway). */
export function cniConfig(p: StatePaths): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: CNI_NETWORK,
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: CLUSTER_CIDR, rangeStart: '10.23.1.1', rangeEnd: '10.23.254.254', gateway: NODE_IP }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: nodePaths(p).cniIpamDir,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/** KubeletConfiguration v1beta1. */
export function kubeletConfig(p: StatePaths): string {
  const n = nodePaths(p);
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: NODE_IP,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    tlsCertFile: join(p.pki, 'kubelet.crt'),
    tlsPrivateKeyFile: join(p.pki, 'kubelet.key'),
    rotateCertificates: false,
    serverTLSBootstrap: false,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: p.caCert },
    },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    imageServiceEndpoint: `unix://${p.containerdSocket}`,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: CGROUP_ROOT,
    failSwapOn: false,
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    resolvConf: n.kubeletResolvConf,
    podLogsDir: p.podLogs,
    volumePluginDir: n.kubeletVolumePlugins,
    // A shared test machine: never evict pods or delete the imported images for disk or memory pressure.
    evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '0%', 'imagefs.available': '0%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Quick feedback for tests: a sync loop that notices pod changes fast.
    syncFrequency: '10s',
    fileCheckFrequency: '20s',
    nodeStatusUpdateFrequency: '5s',
    maxPods: 250,
    protectKernelDefaults: false,
    shutdownGracePeriod: '0s',
    logging: { format: 'text' },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

export function kubeletArgs(p: StatePaths): string[] {
  const n = nodePaths(p);
  return [
    `--config=${n.kubeletConfig}`,
    `--kubeconfig=${n.kubeletKubeconfig}`,
    `--root-dir=${n.kubeletRoot}`,
    `--cert-dir=${join(n.kubeletRoot, 'pki')}`,
    `--hostname-override=${NODE_NAME}`,
    `--node-ip=${NODE_IP}`,
    '--v=1',
  ];
}

/**
 * KubeProxyConfiguration v1alpha1: iptables mode in the node namespace. The conntrack settings are 0
 * so kube-proxy leaves the host's conntrack table size and timeouts alone.
 */
export function kubeProxyConfig(p: StatePaths): string {
  const n = nodePaths(p);
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: n.kubeProxyKubeconfig },
    mode: 'iptables',
    clusterCIDR: CLUSTER_CIDR,
    hostnameOverride: NODE_NAME,
    bindAddress: '0.0.0.0',
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    oomScoreAdj: 0,
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
    // NodePorts only on the node IP, and not on 127.0.0.1 (which would need route_localnet).
    nodePortAddresses: ['primary'],
    iptables: { minSyncPeriod: '0s', syncPeriod: '30s', localhostNodePorts: false },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** kubelet's resolv.conf for dnsPolicy Default pods (CoreDNS itself): no upstream, nothing leaves the node. */
export function kubeletResolvConf(): string {
  return `nameserver ${CLUSTER_DNS_IP}\noptions ndots:1\n`;
}
