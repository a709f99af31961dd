// The leader's only write: mirror ExternalWorkloads into EndpointSlices for the Services whose
// selectors match them, so workloads outside Kubernetes join the mesh like pods. The desired state
// is a pure function of the index (toDesiredSlices); reconcile() writes only what differs.
import { createHash } from 'node:crypto';
import { backoffDelay, type Logger } from '@minimesh/runtime';
import type { EndpointIndex } from '../index/endpoint-index.js';
import type { KubeClient } from '@minimesh/kube';
import { EXTERNAL_WORKLOAD_API } from '../k8s/resource-informers.js';
import {
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
  toSliceRecord,
  type ExternalWorkloadRecord,
  type ServiceRecord,
  type SliceRecord,
} from '../k8s/records.js';
import type { DestinationMetrics } from '../metrics.js';

/** Our managed-by value: the endpointslice controller of kube-controller-manager leaves such slices alone. */
export const MIRROR_MANAGER = 'external-workloads-controller.workload.minimesh.io';

export interface SliceManifest {
  apiVersion: 'discovery.k8s.io/v1';
  kind: 'EndpointSlice';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller: boolean }>;
  };
  addressType: 'IPv4';
  ports: Array<{ name: string; port: number; protocol: string }>;
  endpoints: Array<{
    addresses: string[];
    conditions: { ready: boolean };
    targetRef: { apiVersion: string; kind: string; namespace: string; name: string; uid: string };
  }>;
}

export function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

/** The Service's ports as this workload serves them; ports it cannot resolve are left out. */
function workloadPorts(service: ServiceRecord, ew: ExternalWorkloadRecord): SliceManifest['ports'] {
  const out: SliceManifest['ports'] = [];
  for (const sp of service.ports) {
    const port =
      typeof sp.targetPort === 'number' ? sp.targetPort : ew.ports.find((p) => p.name === sp.targetPort)?.port;
    if (port !== undefined && port > 0) out.push({ name: sp.name, port, protocol: sp.protocol });
  }
  return out;
}

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8);
}

/**
 * One slice per (Service, port layout): workloads whose named ports resolve to the same numbers
 * share a slice. IPv4 workload addresses only.
 */
export function toDesiredSlices(
  services: readonly ServiceRecord[],
  workloads: readonly ExternalWorkloadRecord[],
): SliceManifest[] {
  const out: SliceManifest[] = [];
  for (const svc of services) {
    if (!svc.selector || svc.type === 'ExternalName') continue;
    const groups = new Map<string, SliceManifest>();
    const members = workloads
      .filter((ew) => ew.namespace === svc.namespace && selects(svc.selector, ew.labels))
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const ew of members) {
      const ports = workloadPorts(svc, ew);
      const ip = ew.ips.find((a) => !a.includes(':'));
      if (ports.length === 0 || ip === undefined) continue;
      const signature = JSON.stringify(ports);
      let slice = groups.get(signature);
      if (!slice) {
        slice = {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: {
            name: `${svc.name.slice(0, 40)}-ew-${shortHash(`${svc.name}/${signature}`)}`,
            namespace: svc.namespace,
            labels: { [SERVICE_NAME_LABEL]: svc.name, [MANAGED_BY_LABEL]: MIRROR_MANAGER },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: svc.name, uid: svc.uid, controller: true }],
          },
          addressType: 'IPv4',
          ports,
          endpoints: [],
        };
        groups.set(signature, slice);
      }
      slice.endpoints.push({
        addresses: [ip],
        conditions: { ready: ew.ready },
        targetRef: {
          apiVersion: `${EXTERNAL_WORKLOAD_API.group}/${EXTERNAL_WORKLOAD_API.version}`,
          kind: EXTERNAL_WORKLOAD_API.kind,
          namespace: ew.namespace,
          name: ew.name,
          uid: ew.uid,
        },
      });
    }
    out.push(...groups.values());
  }
  return out;
}

/** The parts of a slice the mirror owns, for comparing what exists with what should. */
function comparable(r: SliceRecord): string {
  return JSON.stringify([
    r.serviceName,
    r.addressType,
    r.ports,
    r.endpoints.map((e) => [e.addresses, e.ready, e.targetRef]),
  ]);
}

export interface ExternalWorkloadMirrorOptions {
  api: KubeClient;
  index: EndpointIndex;
  logger: Logger;
  metrics?: DestinationMetrics;
  /** Changes are batched for this long before a reconcile. */
  debounceMs?: number;
  /** Retry delay after a failed reconcile. */
  retryMs?: number;
}

export class ExternalWorkloadMirror {
  private readonly log: Logger;
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private active = false;
  private failures = 0;

  constructor(private readonly opts: ExternalWorkloadMirrorOptions) {
    this.log = opts.logger.child({ component: 'external-workload-mirror' });
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.log.info('mirroring ExternalWorkloads into EndpointSlices');
    this.unsubscribe = this.opts.index.onChange((kind) => {
      if (kind !== 'pod') this.schedule();
    });
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.active = false;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delay = this.opts.debounceMs ?? 50): void {
    if (!this.active) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      let retryIn: number | undefined;
      this.running = this.reconcile()
        .then(() => {
          this.failures = 0;
        })
        .catch((err: unknown) => {
          // back off: retryMs, doubling per consecutive failure, at most 30 s
          retryIn = backoffDelay(this.failures, { initialMs: this.opts.retryMs ?? 1000, maxMs: 30_000 });
          this.failures++;
          this.log.warn({ err: (err as Error).message, retryInMs: retryIn }, 'reconcile failed: retrying');
        })
        .finally(() => {
          this.running = undefined;
          if (retryIn !== undefined || this.again) {
            this.again = false;
            this.schedule(retryIn ?? this.opts.debounceMs ?? 50);
          }
        });
    }, delay);
  }

  /**
   * Writes the slices that differ from the desired state. One failed write does not hold up the
   * others; if any failed, the error names them all and the caller retries later.
   */
  async reconcile(): Promise<number> {
    const { index, api } = this.opts;
    const desired = toDesiredSlices(index.listServices(), index.listExternalWorkloads());
    const existing = new Map(
      index
        .listSlices()
        .filter((s) => s.managedBy === MIRROR_MANAGER)
        .map((s) => [`${s.namespace}/${s.name}`, s]),
    );
    let writes = 0;
    const failures: Error[] = [];
    const attempt = async (fn: () => Promise<void>) => {
      try {
        await fn();
        writes++;
      } catch (err) {
        failures.push(err as Error);
      }
    };
    for (const manifest of desired) {
      const key = `${manifest.metadata.namespace}/${manifest.metadata.name}`;
      const current = existing.get(key);
      existing.delete(key);
      if (current && comparable(current) === comparable(toSliceRecord(manifest))) continue;
      const base = `/apis/discovery.k8s.io/v1/namespaces/${manifest.metadata.namespace}/endpointslices`;
      if (current) await attempt(() => this.write('update', 'PUT', `${base}/${manifest.metadata.name}`, manifest));
      else await attempt(() => this.write('create', 'POST', base, manifest));
    }
    // Slices nobody wants any more are emptied (the Service's deletion garbage-collects them).
    for (const stale of existing.values()) {
      if (stale.endpoints.length === 0) continue;
      const base = `/apis/discovery.k8s.io/v1/namespaces/${stale.namespace}/endpointslices`;
      await attempt(async () => {
        const got = await api.requestOk<Record<string, unknown>>('GET', `${base}/${stale.name}`);
        await this.write('update', 'PUT', `${base}/${stale.name}`, { ...got, endpoints: [] });
      });
    }
    if (failures.length > 0) {
      throw new AggregateError(
        failures,
        `${failures.length} EndpointSlice write(s) failed: ${failures.map((f) => f.message).join('; ')}`,
      );
    }
    return writes;
  }

  private async write(verb: 'create' | 'update', method: string, path: string, body: unknown): Promise<void> {
    try {
      await this.opts.api.requestOk(method, path, body);
      this.opts.metrics?.mirrorWrites.inc({ verb, result: 'ok' });
      this.log.debug({ verb, path }, 'wrote EndpointSlice');
    } catch (err) {
      this.opts.metrics?.mirrorWrites.inc({ verb, result: 'error' });
      throw err;
    }
  }
}
