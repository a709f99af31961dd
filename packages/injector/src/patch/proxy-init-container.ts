// The `minimesh-init` init container: runs proxy-init once with Linkerd's proxy-init arguments.
import { CONTAINER_NAMES, foldRanges, formatPortRanges, parsePortRanges, type MeshConfig } from '@minimesh/config';
import type { InjectSettings } from './overrides.js';
import type { Container } from './types.js';
import { outboundIgnored } from './validator-container.js';
import { VOLUME_NAMES } from './volumes.js';

/** proxy-init's arguments, in the order and style of Linkerd's (as the Linkerd tutorial's pods show them). */
export function toProxyInitArgs(config: MeshConfig, s: InjectSettings): string[] {
  const { ports } = config.proxy;
  const inbound = foldRanges([
    { lo: ports.control, hi: ports.control },
    { lo: ports.admin, hi: ports.admin },
    ...parsePortRanges('proxyInit.ignoreInboundPorts', config.proxyInit.ignoreInboundPorts),
    ...s.skipInboundPorts,
  ]);
  const outbound = outboundIgnored(config, s);
  const subnets = [
    ...config.proxyInit.skipSubnets
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    ...s.skipSubnets,
  ];
  const args = [
    `--ipv6=${String(config.proxyInit.ipv6)}`,
    '--incoming-proxy-port',
    String(ports.inbound),
    '--outgoing-proxy-port',
    String(ports.outbound),
    '--proxy-uid',
    String(s.proxyUid),
    '--inbound-ports-to-ignore',
    formatPortRanges(inbound),
  ];
  if (outbound.length > 0) args.push('--outbound-ports-to-ignore', formatPortRanges(outbound));
  if (subnets.length > 0) args.push('--subnets-to-ignore', [...new Set(subnets)].join(','));
  args.push('--iptables-mode', config.proxyInit.iptablesMode);
  if (config.proxyInit.closeWaitTimeoutSecs > 0)
    args.push('--timeout-close-wait-secs', String(config.proxyInit.closeWaitTimeoutSecs));
  return args;
}

export function buildProxyInitContainer(config: MeshConfig, s: InjectSettings): Container {
  const { image } = config.proxyInit;
  return {
    name: CONTAINER_NAMES.init,
    image: `${image.name}:${image.version}`,
    imagePullPolicy: image.pullPolicy,
    args: toProxyInitArgs(config, s),
    resources: {
      requests: { cpu: '10m', memory: '10Mi' },
      limits: { memory: '50Mi' },
    },
    securityContext: {
      // iptables needs CAP_NET_ADMIN/NET_RAW in the pod's network namespace, and root unless the
      // image's binary carries file capabilities; nothing else is granted.
      allowPrivilegeEscalation: false,
      capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: false,
      runAsUser: 0,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    terminationMessagePolicy: 'FallbackToLogsOnError',
    volumeMounts: [{ name: VOLUME_NAMES.xtablesLock, mountPath: config.proxyInit.xtMountPath }],
  };
}
