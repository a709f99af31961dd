// The inverse of the patch, for `minimesh uninject`: removes exactly the containers, volumes,
// annotations and labels the injector adds, and the containers/maps it had to create.
import { ANNOTATIONS, CONTAINER_NAMES, LABELS } from '@minimesh/config';
import type { PodLike, StringMap } from './types.js';
import { VOLUME_NAMES } from './volumes.js';

const OUR_CONTAINERS: readonly string[] = [CONTAINER_NAMES.init, CONTAINER_NAMES.validator, CONTAINER_NAMES.proxy];
const OUR_VOLUMES: readonly string[] = Object.values(VOLUME_NAMES);
const OUR_ANNOTATIONS: readonly string[] = [
  ANNOTATIONS.createdBy,
  ANNOTATIONS.proxyVersion,
  ANNOTATIONS.trustRootSha256,
  ANNOTATIONS.proxyInitArgs,
];
const OUR_LABELS: readonly string[] = [LABELS.controlPlaneNs, LABELS.workloadNs];

/** Returns a copy of the pod without the mesh, and whether anything was removed. */
export function uninjectPod(input: PodLike): { pod: PodLike; changed: boolean } {
  const pod = structuredClone(input);
  let changed = false;
  const spec = pod.spec;
  if (spec) {
    for (const key of ['initContainers', 'containers'] as const) {
      const list = spec[key];
      if (!Array.isArray(list)) continue;
      const kept = list.filter((c) => !OUR_CONTAINERS.includes(c.name));
      if (kept.length === list.length) continue;
      changed = true;
      if (kept.length === 0 && key === 'initContainers') delete spec.initContainers;
      else spec[key] = kept;
    }
    if (Array.isArray(spec.volumes)) {
      const kept = spec.volumes.filter((v) => !OUR_VOLUMES.includes(v.name));
      if (kept.length !== spec.volumes.length) {
        changed = true;
        if (kept.length === 0) delete spec.volumes;
        else spec.volumes = kept;
      }
    }
  }
  const meta = pod.metadata;
  if (meta) {
    const dropAnnotation = (k: string, v: string): boolean =>
      OUR_ANNOTATIONS.includes(k) || (k === ANNOTATIONS.inject && v === 'enabled');
    const dropLabel = (k: string): boolean => OUR_LABELS.includes(k);
    for (const [field, drop] of [
      ['annotations', dropAnnotation],
      ['labels', dropLabel],
    ] as const) {
      const map = meta[field] as StringMap | undefined;
      if (!map) continue;
      const keys = Object.keys(map).filter((k) => drop(k, map[k] as string));
      if (keys.length === 0) continue;
      changed = true;
      for (const k of keys) delete map[k];
      if (Object.keys(map).length === 0) delete meta[field];
    }
    if (changed && Object.keys(meta).length === 0) delete pod.metadata;
  }
  return { pod, changed };
}
