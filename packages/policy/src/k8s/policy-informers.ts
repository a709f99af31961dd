// The watches the policy controller runs: pods, Services, ExternalWorkloads, the seven
// policy.minimesh.io kinds and the Gateway API's HTTPRoute, GRPCRoute, TLSRoute and TCPRoute, each
// feeding the index.
// Objects are trimmed to what the index reads before they are kept (a pod keeps its labels, policy
// annotations, ports and probes; a route its status too, which the status writer compares against).
import { Informer, keyOfObject, type InformerHooks, type KubeClient } from '@minimesh/kube';
import type { BackoffOptions, Logger } from '@minimesh/runtime';
import type { PolicyIndex } from '../index/policy-index.js';
import { isRouteKind, type IndexedKind } from '../index/store.js';
import type { PolicyMetrics } from '../metrics.js';
import { RESOURCE_KINDS, resourcePath } from '../resources/kinds.js';

export const EXTERNAL_WORKLOADS_PATH = '/apis/workload.minimesh.io/v1beta1/externalworkloads';

export type PolicyInformers = Record<IndexedKind, Informer<unknown>>;

export interface PolicyInformersOptions {
  api: KubeClient;
  index: PolicyIndex;
  logger: Logger;
  metrics?: PolicyMetrics;
  watchTimeoutSeconds?: number;
  backoff?: BackoffOptions;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What a pod keeps: metadata the index reads (config.minimesh.io/* annotations only), ports, probes. */
export function trimPod(o: unknown): unknown {
  if (!isObj(o) || !isObj(o.metadata)) return o;
  const m = o.metadata;
  const annotations = Object.fromEntries(
    Object.entries(isObj(m.annotations) ? m.annotations : {}).filter(([k]) => k.startsWith('config.minimesh.io/')),
  );
  const spec = isObj(o.spec) ? o.spec : {};
  const container = (c: unknown) => {
    if (!isObj(c)) return c;
    const probe = (p: unknown) => (isObj(p) && isObj(p.httpGet) ? { httpGet: p.httpGet } : undefined);
    return {
      name: c.name,
      ports: c.ports,
      livenessProbe: probe(c.livenessProbe),
      readinessProbe: probe(c.readinessProbe),
      startupProbe: probe(c.startupProbe),
    };
  };
  return {
    kind: 'Pod',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      labels: m.labels,
      annotations,
      creationTimestamp: m.creationTimestamp,
    },
    spec: {
      containers: Array.isArray(spec.containers) ? spec.containers.map(container) : [],
      initContainers: Array.isArray(spec.initContainers) ? spec.initContainers.map(container) : [],
    },
  };
}

/** Anything else keeps metadata (without managedFields) and spec. */
export function trimObject(o: unknown): unknown {
  if (!isObj(o) || !isObj(o.metadata)) return o;
  const { managedFields: _m, ownerReferences: _o, ...metadata } = o.metadata;
  return { apiVersion: o.apiVersion, kind: o.kind, metadata, spec: o.spec };
}

/** An EgressNetwork keeps its status.conditions as well (the status writer compares against them). */
export function trimEgressNetwork(o: unknown): unknown {
  const t = trimObject(o);
  if (!isObj(t) || !isObj(o) || !isObj(o.status)) return t;
  return { ...t, status: { conditions: o.status.conditions } };
}

/** A route keeps its status.parents as well. */
export function trimRoute(o: unknown): unknown {
  const t = trimObject(o);
  if (!isObj(t) || !isObj(o) || !isObj(o.status)) return t;
  return { ...t, status: { parents: o.status.parents } };
}

export function metricsHooks(metrics: Pick<PolicyMetrics, 'watchRestarts' | 'cacheSynced'>): InformerHooks {
  return {
    onRestart: (resource, reason) => metrics.watchRestarts.inc({ resource, reason }),
    onSynced: (resource) => metrics.cacheSynced.set({ resource }, 1),
  };
}

export function createPolicyInformers(opts: PolicyInformersOptions): PolicyInformers {
  const make = (kind: IndexedKind, path: string, resource: string, optional: boolean): Informer<unknown> => {
    const splitKey = (key: string): [string, string] => {
      const i = key.indexOf('/');
      return [key.slice(0, i), key.slice(i + 1)];
    };
    return new Informer<unknown>({
      client: opts.api,
      resource,
      path,
      transform:
        kind === 'Pod'
          ? trimPod
          : isRouteKind(kind)
            ? trimRoute
            : kind === 'EgressNetwork'
              ? trimEgressNetwork
              : trimObject,
      keyOf: keyOfObject,
      handler: {
        apply: (r) => opts.index.apply(kind, r),
        delete: (key) => opts.index.delete(kind, ...splitKey(key)),
        reset: (rs) => opts.index.reset(kind, rs),
      },
      logger: opts.logger,
      // A CRD that is not installed (yet) counts as an empty list, retried later.
      optional,
      ...(opts.metrics ? { hooks: metricsHooks(opts.metrics) } : {}),
      ...(opts.watchTimeoutSeconds !== undefined ? { timeoutSeconds: opts.watchTimeoutSeconds } : {}),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    });
  };
  const crd = (kind: keyof typeof RESOURCE_KINDS & IndexedKind) =>
    make(kind, resourcePath(kind), RESOURCE_KINDS[kind].plural, true);
  return {
    Pod: make('Pod', resourcePath('Pod'), 'pods', false),
    Service: make('Service', resourcePath('Service'), 'services', false),
    ExternalWorkload: make('ExternalWorkload', EXTERNAL_WORKLOADS_PATH, 'externalworkloads', true),
    Server: crd('Server'),
    AuthorizationPolicy: crd('AuthorizationPolicy'),
    MeshTLSAuthentication: crd('MeshTLSAuthentication'),
    NetworkAuthentication: crd('NetworkAuthentication'),
    HTTPRoute: crd('HTTPRoute'),
    HTTPLocalRateLimitPolicy: crd('HTTPLocalRateLimitPolicy'),
    EgressNetwork: crd('EgressNetwork'),
    // The Gateway API's CRDs may be missing (installGatewayAPI=false and none installed): an empty list.
    GatewayHTTPRoute: make(
      'GatewayHTTPRoute',
      resourcePath('GatewayHTTPRoute'),
      'httproutes.gateway.networking.k8s.io',
      true,
    ),
    GRPCRoute: make('GRPCRoute', resourcePath('GRPCRoute'), 'grpcroutes.gateway.networking.k8s.io', true),
    TLSRoute: make('TLSRoute', resourcePath('TLSRoute'), 'tlsroutes.gateway.networking.k8s.io', true),
    TCPRoute: make('TCPRoute', resourcePath('TCPRoute'), 'tcproutes.gateway.networking.k8s.io', true),
  };
}
