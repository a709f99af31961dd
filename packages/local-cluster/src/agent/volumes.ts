// Volumes, made on the host under <state>/pods/<uid>/volumes/<name> and bind-mounted into each
// container's private mount namespace at its mountPath: emptyDir (medium Memory is a tmpfs),
// configMap, secret, projected (serviceAccountToken via TokenRequest, configMap, secret, downwardAPI),
// downwardAPI and hostPath.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { KubeClient, KubeObject } from '../kube-client.js';
import { fieldValue } from './fields.js';

export interface MaterializedVolume {
  name: string;
  hostPath: string;
}

interface TokenFile {
  file: string;
  audience?: string;
  expirationSeconds: number;
  mode: number;
}

export interface PodVolumes {
  volumes: Map<string, MaterializedVolume>;
  /** Projected token files to renew before they expire. */
  tokens: TokenFile[];
}

export class VolumeNotReadyError extends Error {
  readonly code = 'MINIMESH_LOCAL_CLUSTER_VOLUME';
}

function writeFileAtomic(file: string, data: string | Buffer, mode: number): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, data, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

function writeKeys(
  dir: string,
  data: Record<string, string | Buffer>,
  items: KeyToPath[] | undefined,
  mode: number,
  what: string,
): void {
  if (items && items.length > 0) {
    for (const item of items) {
      const value = data[item.key];
      if (value === undefined) throw new VolumeNotReadyError(`${what}: key ${item.key} not found`);
      writeFileAtomic(join(dir, item.path), value, item.mode ?? mode);
    }
  } else {
    for (const [k, v] of Object.entries(data)) writeFileAtomic(join(dir, k), v, mode);
  }
}

async function sourceData(
  client: KubeClient,
  ns: string,
  kind: 'configMap' | 'secret',
  src: KubeObject,
): Promise<Record<string, string | Buffer> | undefined> {
  const path =
    kind === 'configMap'
      ? `/api/v1/namespaces/${ns}/configmaps/${src.name}`
      : `/api/v1/namespaces/${ns}/secrets/${src.secretName ?? src.name}`;
  const obj = await client.get(path);
  if (!obj) {
    if (src.optional) return undefined;
    throw new VolumeNotReadyError(`${kind} ${ns}/${src.name ?? src.secretName} not found`);
  }
  if (kind === 'secret') {
    return Object.fromEntries(
      Object.entries((obj.data ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
    );
  }
  const bin = Object.fromEntries(
    Object.entries((obj.binaryData ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
  );
  return { ...(obj.data ?? {}), ...bin };
}

export async function requestPodToken(
  client: KubeClient,
  pod: KubeObject,
  audience: string | undefined,
  expirationSeconds: number,
): Promise<string> {
  const ns = pod.metadata.namespace;
  const sa = pod.spec.serviceAccountName ?? 'default';
  const res = await client.request('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: {
      ...(audience ? { audiences: [audience] } : {}),
      expirationSeconds,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid },
    },
  });
  return String(res.status.token);
}

function writeDownward(dir: string, pod: KubeObject, items: KubeObject[], mode: number, podIp: string): void {
  for (const item of items ?? []) {
    let value = '';
    if (item.fieldRef) value = fieldValue(pod, item.fieldRef.fieldPath, podIp) ?? '';
    else if (item.resourceFieldRef) value = '0';
    writeFileAtomic(join(dir, item.path), value, item.mode ?? mode);
  }
}

export async function renewTokens(client: KubeClient, pod: KubeObject, tokens: TokenFile[]): Promise<void> {
  for (const t of tokens)
    writeFileAtomic(t.file, await requestPodToken(client, pod, t.audience, t.expirationSeconds), t.mode);
}

/** Makes every volume of the pod on the host. Throws VolumeNotReadyError while a source is missing. */
export async function materializeVolumes(
  client: KubeClient,
  pod: KubeObject,
  podDir: string,
  podIp: string,
): Promise<PodVolumes> {
  const ns = pod.metadata.namespace;
  const result: PodVolumes = { volumes: new Map(), tokens: [] };
  for (const vol of (pod.spec.volumes ?? []) as KubeObject[]) {
    const dir = join(podDir, 'volumes', vol.name);
    if (vol.hostPath) {
      result.volumes.set(vol.name, { name: vol.name, hostPath: vol.hostPath.path });
      continue;
    }
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    if (vol.emptyDir) {
      chmodSync(dir, 0o777);
      if (vol.emptyDir.medium === 'Memory' && !isMountPoint(dir)) {
        execFileSync('mount', [
          '-t',
          'tmpfs',
          '-o',
          `mode=1777${vol.emptyDir.sizeLimit ? `,size=${toBytes(vol.emptyDir.sizeLimit)}` : ''}`,
          'tmpfs',
          dir,
        ]);
      }
    } else if (vol.configMap || vol.secret) {
      const kind = vol.configMap ? 'configMap' : 'secret';
      const src = vol.configMap ?? vol.secret;
      const data = await sourceData(client, ns, kind, src);
      if (data) writeKeys(dir, data, src.items, src.defaultMode ?? 0o644, `volume ${vol.name}`);
    } else if (vol.downwardAPI) {
      writeDownward(dir, pod, vol.downwardAPI.items, vol.downwardAPI.defaultMode ?? 0o644, podIp);
    } else if (vol.projected) {
      const mode = vol.projected.defaultMode ?? 0o644;
      for (const s of (vol.projected.sources ?? []) as KubeObject[]) {
        if (s.serviceAccountToken) {
          const t: TokenFile = {
            file: join(dir, s.serviceAccountToken.path),
            audience: s.serviceAccountToken.audience,
            expirationSeconds: s.serviceAccountToken.expirationSeconds ?? 3607,
            mode,
          };
          writeFileAtomic(t.file, await requestPodToken(client, pod, t.audience, t.expirationSeconds), mode);
          result.tokens.push(t);
        } else if (s.configMap || s.secret) {
          const kind = s.configMap ? 'configMap' : 'secret';
          const data = await sourceData(client, ns, kind, s.configMap ?? s.secret);
          if (data) writeKeys(dir, data, (s.configMap ?? s.secret).items, mode, `volume ${vol.name}`);
        } else if (s.downwardAPI) {
          writeDownward(dir, pod, s.downwardAPI.items, mode, podIp);
        }
      }
    }
    // Other volume types (persistentVolumeClaim, csi...) become empty directories.
    result.volumes.set(vol.name, { name: vol.name, hostPath: dir });
  }
  return result;
}

function toBytes(q: string): string {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(q);
  if (!m) return '64m';
  const unit = { Ki: 'k', Mi: 'm', Gi: 'g', K: 'k', M: 'm', G: 'g' }[m[2] ?? ''] ?? '';
  return `${m[1]}${unit}`;
}

export function isMountPoint(dir: string): boolean {
  try {
    execFileSync('mountpoint', ['-q', dir]);
    return true;
  } catch {
    return false;
  }
}
