// `viz stat`: the rows (Kubernetes workloads, with their meshed pods) joined with the golden metrics
// Prometheus answered for them, and the table / JSON Linkerd prints. Pure.
import type { StatPlan } from './promql.js';
import type { Sample } from './prometheus.js';
import type { ResourceKind } from './resource.js';
import {
  formatBytesPerSecond,
  formatCount,
  formatMs,
  formatPercent,
  formatRps,
  renderTable,
  type Column,
} from './table.js';
import { isCounted, type Workload } from './workloads.js';

export interface StatRow {
  namespace: string;
  kind: ResourceKind;
  name: string;
  /** Pods only: Running, Pending, ... */
  status?: string;
  meshedPods: number;
  totalPods: number;
  /** Responses in the window; 0 when none. */
  requests: number;
  /** Fraction of responses classified success; null without responses. */
  success: number | null;
  rps: number | null;
  /** Fraction of responses sent over mTLS; null without responses. */
  tls: number | null;
  latencyP50: number | null;
  latencyP95: number | null;
  latencyP99: number | null;
  tcpConnections: number | null;
  readBytesPerSecond: number | null;
  writeBytesPerSecond: number | null;
}

export interface StatResults {
  requests: Sample[];
  p50: Sample[];
  p95: Sample[];
  p99: Sample[];
  tcpConnections: Sample[];
  readBytes: Sample[];
  writeBytes: Sample[];
}

export interface StatInput {
  kind: ResourceKind;
  plan: StatPlan;
  windowSeconds: number;
  /** The rows Kubernetes knows (every workload of the kind, or the one asked for). */
  workloads: readonly Workload[];
  results: StatResults;
  /** Keep rows with metrics but no workload (deleted since, or in another namespace with --from). */
  includeMetricsOnly?: boolean;
}

const finite = (v: number | undefined): number | null => (v === undefined || !Number.isFinite(v) ? null : v);

export function toStatRows(input: StatInput): StatRow[] {
  const { plan, kind } = input;
  const keyOf = (m: Record<string, string>) => `${m[plan.namespaceLabel] ?? ''}/${m[plan.nameLabel] ?? ''}`;
  const rows = new Map<string, StatRow>();
  const row = (namespace: string, name: string): StatRow => {
    const key = `${namespace}/${name}`;
    let r = rows.get(key);
    if (!r) {
      r = {
        namespace,
        kind,
        name,
        meshedPods: 0,
        totalPods: 0,
        requests: 0,
        success: null,
        rps: null,
        tls: null,
        latencyP50: null,
        latencyP95: null,
        latencyP99: null,
        tcpConnections: null,
        readBytesPerSecond: null,
        writeBytesPerSecond: null,
      };
      rows.set(key, r);
    }
    return r;
  };
  for (const w of input.workloads) {
    const r = row(w.namespace, w.name);
    const counted = w.pods.filter(isCounted);
    r.totalPods = counted.length;
    r.meshedPods = counted.filter((p) => p.meshed).length;
    if (kind === 'pod') r.status = w.pods[0]?.status ?? 'Unknown';
  }
  const known = new Set(rows.keys());
  const target = (m: Record<string, string>): StatRow | undefined => {
    const key = keyOf(m);
    if (!known.has(key) && !input.includeMetricsOnly) return undefined;
    const ns = m[plan.namespaceLabel] ?? '';
    const name = m[plan.nameLabel] ?? '';
    if (name === '') return undefined;
    return row(ns, name);
  };

  const totals = new Map<StatRow, { all: number; success: number; tls: number }>();
  for (const s of input.results.requests) {
    const r = target(s.metric);
    if (!r || !Number.isFinite(s.value)) continue;
    const t = totals.get(r) ?? { all: 0, success: 0, tls: 0 };
    t.all += s.value;
    if (s.metric.classification === 'success') t.success += s.value;
    if (s.metric.tls === 'true') t.tls += s.value;
    totals.set(r, t);
  }
  for (const [r, t] of totals) {
    r.requests = t.all;
    r.rps = t.all / input.windowSeconds;
    r.success = t.all > 0 ? t.success / t.all : null;
    r.tls = t.all > 0 ? t.tls / t.all : null;
  }
  const fill = (samples: Sample[], set: (r: StatRow, v: number | null) => void) => {
    for (const s of samples) {
      const r = target(s.metric);
      if (r) set(r, finite(s.value));
    }
  };
  fill(input.results.p50, (r, v) => (r.latencyP50 = v));
  fill(input.results.p95, (r, v) => (r.latencyP95 = v));
  fill(input.results.p99, (r, v) => (r.latencyP99 = v));
  fill(input.results.tcpConnections, (r, v) => (r.tcpConnections = v));
  fill(input.results.readBytes, (r, v) => (r.readBytesPerSecond = v));
  fill(input.results.writeBytes, (r, v) => (r.writeBytesPerSecond = v));
  // A row without any response shows dashes, not 0 rps: nothing was measured.
  for (const r of rows.values()) if (r.requests === 0) r.rps = r.success = r.tls = null;
  return [...rows.values()].sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}

export interface RenderOptions {
  /** Adds the NAMESPACE column (every namespace). */
  allNamespaces?: boolean;
  /** -o wide: also mTLS share and TCP bytes per second. */
  wide?: boolean;
}

/** The table `linkerd viz stat` prints, with minimesh's columns. */
export function renderStat(rows: readonly StatRow[], opts: RenderOptions = {}): string {
  const pods = rows.some((r) => r.kind === 'pod');
  const cols: Column[] = [];
  if (opts.allNamespaces) cols.push({ header: 'NAMESPACE' });
  cols.push({ header: 'NAME' });
  if (pods) cols.push({ header: 'STATUS' });
  cols.push(
    { header: 'MESHED', align: 'right' },
    { header: 'SUCCESS', align: 'right' },
    { header: 'RPS', align: 'right' },
    { header: 'LATENCY_P50', align: 'right' },
    { header: 'LATENCY_P95', align: 'right' },
    { header: 'LATENCY_P99', align: 'right' },
    { header: 'TCP_CONN', align: 'right' },
  );
  if (opts.wide)
    cols.push(
      { header: 'MTLS', align: 'right' },
      { header: 'READ_BYTES/SEC', align: 'right' },
      { header: 'WRITE_BYTES/SEC', align: 'right' },
    );
  const cells = rows.map((r) => {
    const c: string[] = [];
    if (opts.allNamespaces) c.push(r.namespace);
    c.push(r.name);
    if (pods) c.push(r.status ?? '-');
    c.push(
      r.totalPods === 0 && r.meshedPods === 0 ? '-' : `${r.meshedPods}/${r.totalPods}`,
      formatPercent(r.success),
      formatRps(r.rps),
      formatMs(r.latencyP50),
      formatMs(r.latencyP95),
      formatMs(r.latencyP99),
      formatCount(r.tcpConnections),
    );
    if (opts.wide)
      c.push(
        formatPercent(r.tls),
        formatBytesPerSecond(r.readBytesPerSecond),
        formatBytesPerSecond(r.writeBytesPerSecond),
      );
    return c;
  });
  return renderTable(cols, cells);
}

/** -o json: the objects `linkerd viz stat -o json` prints (same keys), plus status and mTLS share. */
export function toStatJson(rows: readonly StatRow[]): unknown[] {
  return rows.map((r) => ({
    namespace: r.namespace,
    kind: r.kind,
    name: r.name,
    ...(r.status !== undefined ? { status: r.status } : {}),
    meshed: `${r.meshedPods}/${r.totalPods}`,
    success: r.success,
    rps: r.rps,
    latency_ms_p50: r.latencyP50,
    latency_ms_p95: r.latencyP95,
    latency_ms_p99: r.latencyP99,
    tcp_open_connections: r.tcpConnections,
    tls: r.tls,
    read_bytes_per_sec: r.readBytesPerSecond,
    write_bytes_per_sec: r.writeBytesPerSecond,
  }));
}
