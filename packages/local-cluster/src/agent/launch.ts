// Starting one container: its environment (env, envFrom, valueFrom, $(VAR) expansion), its private
// mount namespace with the pod's volumes bind-mounted at their mountPath and /etc/hosts, and its user
// and capabilities (setpriv), all inside the pod's network namespace.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { KubeClient, KubeObject } from '../kube-client.js';
import { API_PORT, NODE_IP } from '../paths.js';
import { fieldValue } from './fields.js';
import type { MaterializedVolume } from './volumes.js';

export class ContainerConfigError extends Error {
  readonly code = 'MINIMESH_LOCAL_CLUSTER_CONTAINER_CONFIG';
}

/** Expands $(VAR) references as the kubelet does ($$ escapes). */
export function expandVars(s: string, env: Record<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && env[name] !== undefined ? env[name] : m;
  });
}

async function keyRef(
  client: KubeClient,
  ns: string,
  kind: 'configmaps' | 'secrets',
  ref: KubeObject,
): Promise<string | undefined> {
  const obj = await client.get(`/api/v1/namespaces/${ns}/${kind}/${ref.name}`);
  const raw = obj?.data?.[ref.key];
  if (raw === undefined) {
    if (ref.optional) return undefined;
    throw new ContainerConfigError(
      `couldn't find key ${ref.key} in ${kind === 'configmaps' ? 'ConfigMap' : 'Secret'} ${ns}/${ref.name}`,
    );
  }
  return kind === 'secrets' ? Buffer.from(String(raw), 'base64').toString('utf8') : String(raw);
}

export async function containerEnv(
  client: KubeClient,
  pod: KubeObject,
  c: KubeObject,
  podIp: string,
): Promise<Record<string, string>> {
  const ns = pod.metadata.namespace;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOSTNAME: pod.spec.hostname ?? pod.metadata.name,
    HOME: '/root',
    KUBERNETES_SERVICE_HOST: NODE_IP,
    KUBERNETES_SERVICE_PORT: String(API_PORT),
    KUBERNETES_SERVICE_PORT_HTTPS: String(API_PORT),
    KUBERNETES_PORT: `tcp://${NODE_IP}:${API_PORT}`,
    KUBERNETES_PORT_443_TCP: `tcp://${NODE_IP}:${API_PORT}`,
  };
  for (const from of (c.envFrom ?? []) as KubeObject[]) {
    const ref = from.configMapRef ?? from.secretRef;
    const kind = from.configMapRef ? 'configmaps' : 'secrets';
    const obj = await client.get(`/api/v1/namespaces/${ns}/${kind}/${ref.name}`);
    if (!obj) {
      if (ref.optional) continue;
      throw new ContainerConfigError(`${kind === 'configmaps' ? 'configmap' : 'secret'} "${ref.name}" not found`);
    }
    for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) {
      env[`${from.prefix ?? ''}${k}`] = kind === 'secrets' ? Buffer.from(v, 'base64').toString('utf8') : v;
    }
  }
  for (const e of (c.env ?? []) as KubeObject[]) {
    if (e.valueFrom) {
      const vf = e.valueFrom;
      let value: string | undefined;
      if (vf.fieldRef) value = fieldValue(pod, vf.fieldRef.fieldPath, podIp);
      else if (vf.configMapKeyRef) value = await keyRef(client, ns, 'configmaps', vf.configMapKeyRef);
      else if (vf.secretKeyRef) value = await keyRef(client, ns, 'secrets', vf.secretKeyRef);
      else if (vf.resourceFieldRef) value = '0';
      if (value !== undefined) env[e.name] = value;
    } else {
      env[e.name] = expandVars(String(e.value ?? ''), env);
    }
  }
  return env;
}

function sh(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

/** The real path of `p` as far as it exists (so /var/run/x and /run/x compare equal). */
function resolvedPath(p: string): string {
  let existing = p;
  const rest: string[] = [];
  while (!existsSync(existing) && existing !== '/') {
    rest.unshift(existing.slice(existing.lastIndexOf('/') + 1));
    existing = dirname(existing);
  }
  return join(realpathSync(existing), ...rest);
}

/**
 * Creates missing mount points on the host filesystem (recorded in `createdFile` so `down` removes
 * them), except those inside another mount of the same container (created inside that volume).
 */
function prepareMountpoints(mounts: Mount[], createdFile: string): void {
  const done: string[] = [];
  for (const m of mounts) {
    const target = resolvedPath(m.target);
    const underEarlier = done.some((d) => target.startsWith(`${d}/`));
    done.push(target);
    if (underEarlier || existsSync(target)) continue;
    const isFile = existsSync(m.source) && statSync(m.source).isFile();
    const dir = isFile ? dirname(target) : target;
    const chain: string[] = [];
    for (let d = dir; !existsSync(d); d = dirname(d)) chain.unshift(d);
    mkdirSync(dir, { recursive: true });
    if (isFile) {
      writeFileSync(target, '');
      chain.push(target);
    }
    if (chain.length) appendFileSync(createdFile, chain.map((c) => `${c}\n`).join(''));
  }
}

export interface LaunchSpec {
  netns: string;
  pod: KubeObject;
  container: KubeObject;
  argv: string[];
  env: Record<string, string>;
  volumes: Map<string, MaterializedVolume>;
  hostsFile: string;
  logFile: string;
  createdMountpointsFile: string;
}

function idOf(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/** Starts the container's process (its own process group) and returns it. */
export function launchContainer(spec: LaunchSpec): ChildProcess {
  const { pod, container: c } = spec;
  const mounts: Mount[] = [];
  for (const vm of (c.volumeMounts ?? []) as KubeObject[]) {
    const vol = spec.volumes.get(vm.name);
    if (!vol) throw new ContainerConfigError(`volumeMount ${vm.name}: no such volume`);
    mounts.push({
      source: vm.subPath ? join(vol.hostPath, vm.subPath) : vol.hostPath,
      target: vm.mountPath,
      readOnly: Boolean(vm.readOnly),
    });
  }
  mounts.sort((a, b) => a.target.split('/').length - b.target.split('/').length);
  prepareMountpoints(mounts, spec.createdMountpointsFile);

  const lines = ['set -e', `mount --bind ${sh(spec.hostsFile)} /etc/hosts`];
  for (const m of mounts) {
    lines.push(
      `[ -e ${sh(m.target)} ] || { [ -f ${sh(m.source)} ] && touch ${sh(m.target)} || mkdir -p ${sh(m.target)}; }`,
    );
    lines.push(`mount --bind ${sh(m.source)} ${sh(m.target)}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${sh(m.target)}`);
  }
  if (c.workingDir) lines.push(`cd ${sh(c.workingDir)}`);

  const psc = pod.spec.securityContext ?? {};
  const csc = c.securityContext ?? {};
  const uid = idOf(csc.runAsUser) ?? idOf(psc.runAsUser);
  const gid = idOf(csc.runAsGroup) ?? idOf(psc.runAsGroup) ?? uid;
  const caps = ((csc.capabilities?.add ?? []) as string[]).map((x) => `+${x.toLowerCase().replace(/^cap_/, '')}`);
  if (uid !== undefined && uid !== 0) {
    const setpriv = ['setpriv', `--reuid=${uid}`, `--regid=${gid ?? uid}`];
    const groups = [...(psc.supplementalGroups ?? []), ...(psc.fsGroup !== undefined ? [psc.fsGroup] : [])] as number[];
    setpriv.push(groups.length ? `--groups=${groups.join(',')}` : '--clear-groups');
    if (caps.length) setpriv.push(`--inh-caps=${caps.join(',')}`, `--ambient-caps=${caps.join(',')}`);
    lines.push(`exec ${setpriv.join(' ')} -- "$@"`);
  } else {
    lines.push('exec "$@"');
  }
  mkdirSync(dirname(spec.logFile), { recursive: true });
  const log = openSync(spec.logFile, 'a');
  const child = spawn('ip', ['netns', 'exec', spec.netns, 'sh', '-c', lines.join('\n'), 'container', ...spec.argv], {
    detached: true,
    stdio: ['ignore', log, log],
    env: spec.env,
    cwd: '/',
  });
  closeSync(log);
  return child;
}
