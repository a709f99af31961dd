// Prometheus metrics with Linkerd's names and labels, as linkerd2-proxy reports them (its 2026 sources,
// linkerd/app/core/src/transport/labels.rs and linkerd/http/metrics): request_total, response_total and
// response_latency_ms per direction, authority, target_addr, tls (client_id / server_id, or
// no_tls_reason), the endpoint's metric labels re-emitted as dst_*; tcp_* per connection and peer.
// Label sets are built once per connection/route and the labelled children cached, so the per-request
// cost is a few increments, not label hashing.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Direction, TlsLabel } from '../targets.js';
import { SeriesCounter, SeriesHistogram, type CounterHandle, type HistogramHandle } from './series.js';

export type { Direction, TlsLabel };

/** The destination metric_labels we re-emit, prefixed dst_ (others are dropped: labels are fixed). */
export const DST_LABELS = [
  'namespace',
  'service',
  'pod',
  'serviceaccount',
  'deployment',
  'replicaset',
  'statefulset',
  'daemonset',
  'job',
  'zone',
] as const;

/** Linkerd's response_latency_ms buckets: 1–5, 10–50, 100–500, 1000–5000, 10000–50000 ms. */
export const LATENCY_BUCKETS = [
  1, 2, 3, 4, 5, 10, 20, 30, 40, 50, 100, 200, 300, 400, 500, 1000, 2000, 3000, 4000, 5000, 10000, 20000, 30000, 40000,
  50000,
];

export type Labels = Record<string, string>;

export interface TrafficLabels {
  direction: Direction;
  targetAddr: string;
  tls: TlsLabel;
  /** Inbound: the client's identity when mTLS. */
  clientId?: string | undefined;
  /** Outbound: the server's identity when mTLS. */
  serverId?: string | undefined;
  noTlsReason?: string | undefined;
  sni?: string | undefined;
  authority?: string | undefined;
  /** Endpoint metric_labels from destination (namespace, pod, ...). */
  dst?: Record<string, string> | undefined;
}

export function toLabels(t: TrafficLabels): Labels {
  const l: Labels = {
    direction: t.direction,
    authority: t.authority ?? '',
    target_addr: t.targetAddr,
    tls: t.tls,
    client_id: t.clientId ?? '',
    server_id: t.serverId ?? '',
    no_tls_reason: t.tls === 'no_identity' ? (t.noTlsReason ?? 'not_provided_by_remote') : '',
    sni: t.sni ?? '',
  };
  for (const k of DST_LABELS) l[`dst_${k}`] = t.dst?.[k] ?? '';
  return l;
}

export interface ConnRecorder {
  read(n: number): void;
  write(n: number): void;
  close(errored: boolean): void;
}

export class ProxyMetrics {
  readonly requestTotal: SeriesCounter;
  readonly responseTotal: SeriesCounter;
  readonly responseLatency: SeriesHistogram;
  readonly tcpOpenTotal: SeriesCounter;
  readonly tcpOpenConnections: SeriesCounter;
  readonly tcpReadBytes: SeriesCounter;
  readonly tcpWriteBytes: SeriesCounter;
  readonly tcpCloseTotal: SeriesCounter;
  private readonly responses = new WeakMap<Labels, Map<string, { total: CounterHandle; latency: HistogramHandle }>>();
  private readonly tcpLabels = new WeakMap<Labels, { src?: Labels; dst?: Labels }>();
  readonly errorsTotal: Counter;
  readonly certExpiration: Gauge;
  readonly certRefreshTimestamp: Gauge;
  readonly certRefreshes: Counter;

  constructor(readonly registry: Registry) {
    const r = [registry];
    this.requestTotal = new SeriesCounter('request_total', 'Total count of HTTP requests.', registry);
    this.responseTotal = new SeriesCounter('response_total', 'Total count of HTTP responses.', registry);
    this.responseLatency = new SeriesHistogram(
      'response_latency_ms',
      "Elapsed times between a request's headers being received and its response stream completing.",
      registry,
      LATENCY_BUCKETS,
    );
    this.tcpOpenTotal = new SeriesCounter('tcp_open_total', 'Total count of opened connections.', registry);
    this.tcpOpenConnections = new SeriesCounter(
      'tcp_open_connections',
      'Number of currently-open connections.',
      registry,
      'gauge',
    );
    this.tcpReadBytes = new SeriesCounter('tcp_read_bytes_total', 'Total count of bytes read from peers.', registry);
    this.tcpWriteBytes = new SeriesCounter('tcp_write_bytes_total', 'Total count of bytes written to peers.', registry);
    this.tcpCloseTotal = new SeriesCounter('tcp_close_total', 'Total count of closed connections.', registry);
    this.errorsTotal = new Counter({
      name: 'proxy_errors_total',
      help: 'Errors the proxy answered for, by direction and code.',
      labelNames: ['direction', 'error'],
      registers: r,
    });
    this.certExpiration = new Gauge({
      name: 'control_identity_cert_expiration_timestamp_seconds',
      help: "Time when this proxy's current certificate expires (seconds since the epoch).",
      registers: r,
    });
    this.certRefreshTimestamp = new Gauge({
      name: 'control_identity_cert_refresh_timestamp_seconds',
      help: 'Time of the last certificate refresh (seconds since the epoch).',
      registers: r,
    });
    this.certRefreshes = new Counter({
      name: 'control_identity_cert_refreshes_total',
      help: 'Certificate refreshes by result.',
      labelNames: ['result'],
      registers: r,
    });
  }

  error(direction: Direction, code: string): void {
    this.errorsTotal.inc({ direction, error: code });
  }

  /** Counts one request (request_total) and returns its start time, for response(). Label objects must not change. */
  request(labels: Labels): number {
    this.requestTotal.with(labels).value++;
    return performance.now();
  }

  /**
   * Counts a response once its stream ended (response_total, response_latency_ms since `t0`); `failed` = the
   * stream broke after the head.
   */
  response(labels: Labels, t0: number, status: number, grpcStatus: number | undefined, failed: boolean): void {
    const ms = performance.now() - t0;
    const failure = failed || status >= 500 || (grpcStatus !== undefined && grpcStatus !== 0);
    const key = `${status}|${grpcStatus ?? ''}|${failure ? 1 : 0}|${failed ? 1 : 0}`;
    let byStatus = this.responses.get(labels);
    if (!byStatus) this.responses.set(labels, (byStatus = new Map()));
    let h = byStatus.get(key);
    if (!h) {
      h = {
        total: this.responseTotal.with({
          ...labels,
          status_code: String(status),
          grpc_status: grpcStatus === undefined ? '' : String(grpcStatus),
          classification: failure ? 'failure' : 'success',
          error: failed ? 'stream' : '',
        }),
        latency: this.responseLatency.with({ ...labels, status_code: String(status) }),
      };
      byStatus.set(key, h);
    }
    h.total.value++;
    h.latency.observe(ms);
  }

  /** Counts one connection from its open to its close; `peer` is "src" (accepted) or "dst" (dialed). */
  connection(labels: Labels, peer: 'src' | 'dst' = 'src'): ConnRecorder {
    const c = this.connectionLabels(labels, peer);
    this.tcpOpenTotal.with(c).value++;
    const open = this.tcpOpenConnections.with(c);
    open.value++;
    let closed = false;
    return {
      read: (n) => {
        if (n > 0) this.tcpReadBytes.with(c).value += n;
      },
      write: (n) => {
        if (n > 0) this.tcpWriteBytes.with(c).value += n;
      },
      close: (errored) => {
        if (closed) return;
        closed = true;
        open.value--;
        this.tcpCloseTotal.with({ ...c, errno: errored ? 'error' : '' }).value++;
      },
    };
  }

  /** The TCP label set of a request label set (no authority, plus peer), made once per label object. */
  private connectionLabels(labels: Labels, peer: 'src' | 'dst'): Labels {
    let byPeer = this.tcpLabels.get(labels);
    if (!byPeer) this.tcpLabels.set(labels, (byPeer = {}));
    let c = byPeer[peer];
    if (!c) {
      c = { ...labels, peer };
      delete c.authority;
      byPeer[peer] = c;
    }
    return c;
  }
}

/** Attaches byte and close accounting to a socket (bytesRead/bytesWritten are read once, at close). */
export function trackSocket(
  socket: { bytesRead: number; bytesWritten: number; once(ev: 'close', l: (hadError: boolean) => void): unknown },
  rec: ConnRecorder,
): void {
  socket.once('close', (hadError: boolean) => {
    try {
      rec.read(socket.bytesRead);
      rec.write(socket.bytesWritten);
    } catch {
      // An HTTP/2 session's socket proxy may already be unbound; the counts are then lost, not the close.
    }
    rec.close(hadError);
  });
}
