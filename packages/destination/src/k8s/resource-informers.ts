// The four informers destination runs, each feeding one kind of the index.
import { Informer, type InformerHooks, type KubeClient } from '@minimesh/kube';
import type { BackoffOptions, Logger } from '@minimesh/runtime';
import type { EndpointIndex, ResourceKind } from '../index/endpoint-index.js';
import type { DestinationMetrics } from '../metrics.js';
import { keyOfObject, toExternalWorkloadRecord, toPodRecord, toServiceRecord, toSliceRecord } from './records.js';

export const EXTERNAL_WORKLOAD_API = {
  group: 'workload.minimesh.io',
  version: 'v1beta1',
  plural: 'externalworkloads',
  kind: 'ExternalWorkload',
} as const;

export const RESOURCE_PATHS: Record<ResourceKind, string> = {
  service: '/api/v1/services',
  endpointslice: '/apis/discovery.k8s.io/v1/endpointslices',
  pod: '/api/v1/pods',
  externalworkload: `/apis/${EXTERNAL_WORKLOAD_API.group}/${EXTERNAL_WORKLOAD_API.version}/${EXTERNAL_WORKLOAD_API.plural}`,
};

export interface ResourceInformersOptions {
  api: KubeClient;
  index: EndpointIndex;
  logger: Logger;
  metrics?: DestinationMetrics;
  watchTimeoutSeconds?: number;
  backoff?: BackoffOptions;
}

/** The informers' restarts and syncs, as destination's metrics. */
export function metricsHooks(metrics: Pick<DestinationMetrics, 'watchRestarts' | 'cacheSynced'>): InformerHooks {
  return {
    onRestart: (resource, reason) => metrics.watchRestarts.inc({ resource, reason }),
    onSynced: (resource) => metrics.cacheSynced.set({ resource }, 1),
  };
}

export type ResourceInformers = Record<ResourceKind, Informer<unknown>>;

export function createResourceInformers(opts: ResourceInformersOptions): ResourceInformers {
  const make = <R>(
    kind: ResourceKind,
    resource: string,
    transform: (o: unknown) => R,
    extra: { shortName?: string; optional?: boolean } = {},
  ): Informer<unknown> =>
    new Informer<R>({
      client: opts.api,
      resource,
      path: RESOURCE_PATHS[kind],
      transform,
      keyOf: keyOfObject,
      handler: {
        apply: (r) => opts.index.apply(kind, r as never),
        delete: (key) => opts.index.delete(kind, key),
        reset: (rs) => opts.index.reset(kind, rs as never),
      },
      logger: opts.logger,
      ...(opts.metrics ? { hooks: metricsHooks(opts.metrics) } : {}),
      ...(opts.watchTimeoutSeconds !== undefined ? { timeoutSeconds: opts.watchTimeoutSeconds } : {}),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      ...extra,
    }) as Informer<unknown>;
  return {
    service: make('service', 'services', toServiceRecord),
    endpointslice: make('endpointslice', 'endpointslices', toSliceRecord, { shortName: 'ES' }),
    pod: make('pod', 'pods', toPodRecord),
    externalworkload: make('externalworkload', 'externalworkloads', toExternalWorkloadRecord, { optional: true }),
  };
}
