// `viz top`: live requests grouped by route (source, destination, method, path), as `linkerd viz top`
// shows them. Pure: tap records in, rows out.
import { formatLatency, type TapPeer, type TapRecord } from './tap-record.js';
import { formatPercent, renderTable } from './table.js';

export interface TopRow {
  source: string;
  destination: string;
  method: string;
  path: string;
  count: number;
  successes: number;
  bestMs: number;
  worstMs: number;
  lastMs: number;
}

/** A peer as top prints it: its pod name when known, else its IP. */
export function peerName(p: TapPeer): string {
  return p.labels.pod || p.ip;
}

/** Success as Linkerd classifies it: a gRPC status of OK, else an HTTP status below 500; no reset. */
function isSuccess(status: number | undefined, end: TapRecord | undefined): boolean {
  if (end?.resetCode !== undefined) return false;
  if (end?.grpcStatus !== undefined) return end.grpcStatus === 0;
  return status !== undefined && status < 500;
}

export interface TopAggregator {
  add(r: TapRecord): void;
  rows(): TopRow[];
}

export function createTopAggregator(opts: { maxPending?: number } = {}): TopAggregator {
  const maxPending = opts.maxPending ?? 10_000;
  // A request in flight: its requestInit and, once seen, its status and latency.
  const pending = new Map<string, { req: TapRecord; status?: number; latencyMs?: number }>();
  const routes = new Map<string, TopRow>();
  const finish = (key: string, end: TapRecord | undefined) => {
    const p = pending.get(key);
    if (!p) return;
    pending.delete(key);
    const latency = end?.latencyMs ?? p.latencyMs ?? 0;
    const row = {
      source: peerName(p.req.source),
      destination: peerName(p.req.destination),
      method: p.req.method ?? '',
      path: p.req.path ?? '',
    };
    const k = `${row.source}\u0000${row.destination}\u0000${row.method}\u0000${row.path}`;
    let r = routes.get(k);
    if (!r) routes.set(k, (r = { ...row, count: 0, successes: 0, bestMs: latency, worstMs: latency, lastMs: latency }));
    r.count++;
    if (isSuccess(p.status, end)) r.successes++;
    r.bestMs = Math.min(r.bestMs, latency);
    r.worstMs = Math.max(r.worstMs, latency);
    r.lastMs = latency;
  };
  return {
    add(r) {
      // Requests are told apart by the tapped pod, the direction and the proxy's stream id.
      const key = `${r.pod}|${r.direction}|${r.id}`;
      if (r.type === 'requestInit') {
        if (pending.size >= maxPending) {
          const oldest = pending.keys().next().value;
          if (oldest !== undefined) pending.delete(oldest);
        }
        pending.set(key, { req: r });
      } else if (r.type === 'responseInit') {
        const p = pending.get(key);
        if (p) {
          p.status = r.status;
          p.latencyMs = r.latencyMs;
        }
      } else finish(key, r);
    },
    rows() {
      return [...routes.values()].sort((a, b) => b.count - a.count || a.path.localeCompare(b.path));
    },
  };
}

export function renderTop(rows: readonly TopRow[]): string {
  return renderTable(
    [
      { header: 'SOURCE' },
      { header: 'DESTINATION' },
      { header: 'METHOD' },
      { header: 'PATH' },
      { header: 'COUNT', align: 'right' },
      { header: 'BEST', align: 'right' },
      { header: 'WORST', align: 'right' },
      { header: 'LAST', align: 'right' },
      { header: 'SUCCESS_RATE', align: 'right' },
    ],
    rows.map((r) => [
      r.source,
      r.destination,
      r.method,
      r.path,
      String(r.count),
      formatLatency(r.bestMs),
      formatLatency(r.worstMs),
      formatLatency(r.lastMs),
      formatPercent(r.count > 0 ? r.successes / r.count : null),
    ]),
  );
}
