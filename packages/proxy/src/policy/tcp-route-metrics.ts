// Linkerd's outbound opaque-route metrics, with its names and labels (linkerd2-proxy
// linkerd/app/outbound/src/metrics/transport.rs and opaq/logical/route.rs, commit 29637b64f6ce, read on
// 2026-11-28):
//   outbound_tcp_route_open_total    connections opened on a route    parent_*, route_*, target_ip, target_port
//   outbound_tcp_route_close_total   connections closed               + error ("" | forbidden | invalid_backend)
// minimesh-proxy counts them for the connections its egress stage routes (an address outside the
// cluster networks whose outbound policy has an opaque route): a Deny EgressNetwork's connection opens
// and closes with error="forbidden" at once.
import type { CompiledOpaqueRoute, CompiledOutboundPolicy } from '@minimesh/policy/client';
import type { Registry } from 'prom-client';
import { SeriesCounter, type CounterHandle } from '../metrics/series.js';
import { parentLabels } from './route-metrics.js';

export type TcpRouteError = '' | 'forbidden' | 'invalid_backend';

/** One connection's record: its close is counted once. */
export interface TcpRouteStats {
  close(error: TcpRouteError): void;
}

export class TcpRouteMetrics {
  private readonly open: SeriesCounter;
  private readonly closed: SeriesCounter;
  private readonly handles = new Map<
    string,
    { open: CounterHandle; close: Map<string, CounterHandle>; labels: Record<string, string> }
  >();

  constructor(registry: Registry) {
    this.open = new SeriesCounter('outbound_tcp_route_open_total', 'The number of connections opened', registry);
    this.closed = new SeriesCounter('outbound_tcp_route_close_total', 'The number of connections closed', registry);
  }

  /** Counts a connection opened on `route` of `policy` to ip:port. */
  start(policy: CompiledOutboundPolicy, route: CompiledOpaqueRoute, ip: string, port: number): TcpRouteStats {
    const key = `${policy.meta.group}|${policy.meta.kind}|${policy.ref.namespace}|${policy.meta.name}|${policy.ref.port}|${route.meta.kind}|${route.meta.name}|${ip}|${port}`;
    let h = this.handles.get(key);
    if (h === undefined) {
      if (this.handles.size >= 10_000) this.handles.clear();
      const labels = {
        ...parentLabels(policy),
        route_group: route.meta.group,
        route_kind: route.meta.kind,
        route_namespace: '',
        route_name: route.meta.name,
        target_ip: ip,
        target_port: String(port),
      };
      this.handles.set(key, (h = { open: this.open.with(labels), close: new Map(), labels }));
    }
    const handles = h;
    handles.open.value++;
    let done = false;
    return {
      close: (error) => {
        if (done) return;
        done = true;
        let c = handles.close.get(error);
        if (c === undefined) handles.close.set(error, (c = this.closed.with({ ...handles.labels, error })));
        c.value++;
      },
    };
  }
}
