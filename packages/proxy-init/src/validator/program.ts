// minimesh-network-validator: the init container that CNI mode puts in a meshed pod instead of
// proxy-init. It has no capability and runs as a uid other than the proxy's, so its own connection
// is redirected like the app's; it exits 0 when that redirect works and 1, with one line saying
// what is wrong and what to do, when it does not (the kubelet shows it as the container's message).
import { DEFAULT_PORTS, MINIMESH_VERSION, parseDuration, parsePort } from '@minimesh/config';
import { defineProgram, type FlagSpecs, type Program, type ProgramIO } from '@minimesh/runtime';
import { formatHostPort, parseHostPort, validateRedirect, type HostPort } from './validate-redirect.js';

/** TEST-NET-1 (RFC 5737): documentation only, never routed on the internet. */
export const DEFAULT_CONNECT_ADDR = '192.0.2.2:20001';

export const VALIDATOR_PROGRAM = {
  name: 'minimesh-network-validator',
  summary:
    "checks that this pod's outbound TCP is redirected to the proxy (CNI mode): connects to a reserved address and expects to reach its own listener on the proxy's outbound port",
  usage: 'minimesh-network-validator [--connect-addr 192.0.2.2:20001] [--listen-port 4140] [--timeout 10s]',
};

export const VALIDATOR_FLAGS = {
  'connect-addr': {
    type: 'string',
    default: DEFAULT_CONNECT_ADDR,
    description: 'an address outside the pod that nothing answers on (ip:port or [ip6]:port)',
  },
  'listen-port': {
    type: 'string',
    default: String(DEFAULT_PORTS.outbound),
    description: "the proxy's outbound port: where the redirect must lead",
  },
  timeout: { type: 'string', default: '10s', description: 'how long to wait for the connection' },
  'cni-namespace': {
    type: 'string',
    default: 'minimesh',
    description: 'namespace of the minimesh-cni DaemonSet (named in the failure message)',
  },
} as const satisfies FlagSpecs;

export interface ValidatorConfig {
  connectAddr: HostPort;
  listenPort: number;
  timeoutMs: number;
  cniNamespace: string;
}

/** The message for a pod whose traffic is not redirected: what was seen, why, and what to do. */
export function notRedirectedMessage(cfg: ValidatorConfig, detail: string, node: string | undefined): string {
  const where = node ? ` on node ${node}` : '';
  return (
    `this pod's traffic is not redirected to the proxy: a connection to ${formatHostPort(cfg.connectAddr)} ` +
    `did not reach 127.0.0.1:${cfg.listenPort} (${detail}). The minimesh-cni plugin did not configure the pod's ` +
    `network when its sandbox was created${where}: check that the minimesh-cni DaemonSet is ready there ` +
    `(kubectl -n ${cfg.cniNamespace} get daemonset minimesh-cni; minimesh check), then delete this pod so that ` +
    `it is created again`
  );
}

export function validatorProgram(): Program {
  return defineProgram({
    ...VALIDATOR_PROGRAM,
    version: MINIMESH_VERSION,
    logName: 'network-validator',
    flags: VALIDATOR_FLAGS,
    configure: ({ flags }): ValidatorConfig => ({
      connectAddr: parseHostPort('--connect-addr', flags['connect-addr']),
      listenPort: parsePort('--listen-port', flags['listen-port']),
      timeoutMs: parseDuration('--timeout', flags.timeout),
      cniNamespace: flags['cni-namespace'].trim() || 'minimesh',
    }),
    async run({ config, logger, env }) {
      const result = await validateRedirect(config);
      if (result.ok) {
        logger.info(
          { ms: result.ms },
          `traffic is redirected: a connection to ${formatHostPort(config.connectAddr)} reached ${result.listen} in ${result.ms} ms`,
        );
        return 0;
      }
      if (result.reason === 'listen')
        throw new ValidatorError(
          `${result.detail}: the proxy's outbound port must be free when the validator runs (it runs before the proxy)`,
        );
      throw new ValidatorError(notRedirectedMessage(config, result.detail, env.NODE_NAME));
    },
  });
}

export class ValidatorError extends Error {
  readonly code = 'MINIMESH_PROXY_INIT_NOT_REDIRECTED';
  readonly exitCode = 1;
}

export function validatorMain(argv: string[], io: ProgramIO = {}): Promise<number> {
  return validatorProgram().main(argv, io);
}
