// The CNI protocol (spec 1.0.0, with the versions before it that kubelet-era runtimes send): the
// environment a runtime sets, the network configuration on stdin, and the JSON answers. Pure.
import { CniError } from '../errors.js';

export const PLUGIN_TYPE = 'minimesh-cni';
/** CHECK exists from 0.4.0; the result format we pass through is the runtime's own. */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] as const;
export const COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION'] as const;
export type CniCommand = (typeof COMMANDS)[number];

export interface CniEnv {
  command: CniCommand;
  containerId: string;
  /** The pod sandbox's network namespace (a path); DEL may come without it. */
  netns: string | undefined;
  ifname: string;
  /** CNI_ARGS, e.g. K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID. */
  args: Record<string, string>;
}

/** The pod a Kubernetes runtime names in CNI_ARGS, or undefined for a container that is not a pod. */
export function podOf(env: CniEnv): { namespace: string; name: string; uid: string | undefined } | undefined {
  const namespace = env.args.K8S_POD_NAMESPACE;
  const name = env.args.K8S_POD_NAME;
  if (!namespace || !name) return undefined;
  return { namespace, name, uid: env.args.K8S_POD_UID || undefined };
}

/** Reads the CNI_* variables; throws CniError (code 4) naming a missing one. */
export function parseCniEnv(env: NodeJS.ProcessEnv): CniEnv {
  const command = env.CNI_COMMAND ?? '';
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new CniError(
      'MINIMESH_CNI_BAD_ENV',
      `CNI_COMMAND ${JSON.stringify(command)} is not valid: expected one of ${COMMANDS.join(', ')} (minimesh-cni is run by the container runtime)`,
    );
  }
  const need = (name: string): string => {
    const v = env[name];
    if (v === undefined || v === '')
      throw new CniError('MINIMESH_CNI_BAD_ENV', `${command}: ${name} is not set: the runtime must set it`);
    return v;
  };
  const args: Record<string, string> = {};
  for (const pair of (env.CNI_ARGS ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0) args[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if (command === 'VERSION') return { command, containerId: '', netns: undefined, ifname: '', args };
  return {
    command: command as CniCommand,
    containerId: need('CNI_CONTAINERID'),
    netns: command === 'DEL' ? env.CNI_NETNS || undefined : need('CNI_NETNS'),
    ifname: need('CNI_IFNAME'),
    args,
  };
}

export interface NetConf {
  cniVersion: string;
  name: string;
  type: string;
  /** The result of the plugins before us in the chain; ours to pass on unchanged. */
  prevResult: Record<string, unknown> | undefined;
  /** The kubeconfig the installer wrote (the plugin reads pods with it). */
  kubeconfig: string;
  logLevel: string;
  /** Where the plugin keeps what it wrote per sandbox (DEL, CHECK, the installer's /pods). */
  stateDir: string;
}

export const DEFAULT_STATE_DIR = '/var/run/minimesh-cni';

/** Parses the network configuration from stdin; throws CniError (6 or 7) naming the problem. */
export function parseNetConf(text: string): NetConf {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CniError(
      'MINIMESH_CNI_DECODE',
      `the network configuration on stdin is not JSON: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new CniError('MINIMESH_CNI_DECODE', 'the network configuration on stdin is not a JSON object');
  const o = raw as Record<string, unknown>;
  const str = (key: string, fallback?: string): string => {
    const v = o[key];
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string' || v === '')
      throw new CniError('MINIMESH_CNI_BAD_CONFIG', `network configuration: "${key}" must be a non-empty string`);
    return v;
  };
  const cniVersion = str('cniVersion');
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(cniVersion))
    throw new CniError(
      'MINIMESH_CNI_VERSION',
      `network configuration: cniVersion ${cniVersion} is not supported: minimesh-cni speaks ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  const kube = o.kubernetes;
  const kubeconfig =
    typeof kube === 'object' && kube !== null ? (kube as Record<string, unknown>).kubeconfig : undefined;
  if (typeof kubeconfig !== 'string' || kubeconfig === '')
    throw new CniError(
      'MINIMESH_CNI_BAD_CONFIG',
      'network configuration: "kubernetes.kubeconfig" must name the kubeconfig minimesh-cni reads pods with (the installer writes it)',
    );
  const prev = o.prevResult;
  if (prev !== undefined && (typeof prev !== 'object' || prev === null || Array.isArray(prev)))
    throw new CniError('MINIMESH_CNI_BAD_CONFIG', 'network configuration: "prevResult" must be an object');
  return {
    cniVersion,
    name: str('name'),
    type: str('type'),
    prevResult: prev as Record<string, unknown> | undefined,
    kubeconfig,
    logLevel: str('log_level', 'info'),
    stateDir: str('state_dir', DEFAULT_STATE_DIR),
  };
}

/** ADD's answer: a chained plugin that changes no interface returns the previous result as it is. */
export function addResult(conf: NetConf): Record<string, unknown> {
  return conf.prevResult ? { ...conf.prevResult, cniVersion: conf.cniVersion } : { cniVersion: conf.cniVersion };
}

export function versionResult(cniVersion = '1.0.0'): Record<string, unknown> {
  return { cniVersion, supportedVersions: [...SUPPORTED_VERSIONS] };
}

/** The error answer (printed on stdout, with a non-zero exit). */
export function errorResult(err: CniError, cniVersion = '1.0.0'): Record<string, unknown> {
  return {
    cniVersion,
    code: err.cniCode,
    msg: err.message,
    ...(err.details ? { details: err.details } : {}),
  };
}
