// CNI mode's init container, in place of minimesh-init: minimesh-network-validator (in the
// proxy-init image) checks that minimesh-cni redirected the pod's traffic before anything else
// starts. No capability, read-only, non-root, and never the proxy's uid: its own connection must be
// redirected like the app's. It passes Pod Security "restricted".
import {
  CONTAINER_NAMES,
  foldRanges,
  parsePortRanges,
  portInRanges,
  type MeshConfig,
  type PortRange,
} from '@minimesh/config';
import type { InjectSettings } from './overrides.js';
import type { Container } from './types.js';

/** Where the proxy-init image has the validator on its PATH (Dockerfile, proxy-init stage). */
export const VALIDATOR_COMMAND = 'minimesh-network-validator';

/** The pod's outbound ports that are not redirected (what proxy-init's --outbound-ports-to-ignore says). */
export function outboundIgnored(config: MeshConfig, s: InjectSettings): PortRange[] {
  return foldRanges([
    ...parsePortRanges('proxyInit.kubeAPIServerPorts', config.proxyInit.kubeAPIServerPorts),
    ...parsePortRanges('proxyInit.ignoreOutboundPorts', config.proxyInit.ignoreOutboundPorts),
    ...s.skipOutboundPorts,
  ]);
}

/**
 * The validator's target: the configured address, on a port the pod's rules redirect (the next one
 * up when the pod skips the configured port, so a skip-outbound-ports annotation cannot fail it).
 */
export function validatorConnectAddr(config: MeshConfig, s: InjectSettings): string {
  const text = config.cni.validator.connectAddr;
  const cut = text.lastIndexOf(':');
  const host = text.slice(0, cut);
  let port = Number(text.slice(cut + 1));
  const ignored = outboundIgnored(config, s);
  while (portInRanges(port, ignored) && port < 65535) port++;
  return `${host}:${port}`;
}

export function buildValidatorContainer(config: MeshConfig, s: InjectSettings): Container {
  const { image } = config.proxyInit;
  const wanted = config.cni.validator.uid;
  const uid = wanted !== s.proxyUid ? wanted : wanted > 1 ? wanted - 1 : wanted + 1;
  return {
    name: CONTAINER_NAMES.validator,
    image: `${image.name}:${image.version}`,
    imagePullPolicy: image.pullPolicy,
    command: [VALIDATOR_COMMAND],
    args: [
      '--connect-addr',
      validatorConnectAddr(config, s),
      '--listen-port',
      String(config.proxy.ports.outbound),
      '--timeout',
      config.cni.validator.timeout,
      '--cni-namespace',
      config.controlPlaneNamespace,
    ],
    env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
    resources: {
      requests: { cpu: '10m', memory: '10Mi' },
      limits: { memory: '50Mi' },
    },
    securityContext: {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      privileged: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      runAsUser: uid,
      runAsGroup: uid,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}
