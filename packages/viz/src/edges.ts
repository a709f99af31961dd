// `viz edges`: who talks to whom, as the source's proxies saw it (server identity verified by mTLS) and
// as the destination's saw it (client identity). Pure: samples of edgeQueries() in, rows out.
import type { Sample } from './prometheus.js';
import { inboundLabel, outboundLabel, type ResourceKind } from './resource.js';
import { renderTable } from './table.js';
import type { Workload } from './workloads.js';

export interface EdgeRow {
  kind: ResourceKind;
  src: string;
  srcNamespace: string;
  dst: string;
  dstNamespace: string;
  /** The source's identity, as the destination's proxies verified it; '' when unknown. */
  clientId: string;
  /** The destination's identity, as the source's proxies verified it; '' without mTLS. */
  serverId: string;
  /** Every request on this edge went over mTLS. */
  secured: boolean;
  /** Why not, when not (the proxy's no_tls_reason, or the tls label). */
  msg: string;
}

export interface EdgeInput {
  kind: ResourceKind;
  outbound: readonly Sample[];
  inbound: readonly Sample[];
  /** Workloads of the kind that Kubernetes knows, for their pods' service accounts. */
  workloads: readonly Workload[];
}

/** The first two parts of <sa>.<ns>.serviceaccount.identity.<cp-ns>.<trust-domain>. */
function identityParts(id: string): { sa: string; ns: string } | undefined {
  const parts = id.split('.');
  if (parts.length < 4 || parts[2] !== 'serviceaccount') return undefined;
  return { sa: parts[0] ?? '', ns: parts[1] ?? '' };
}

export function toEdgeRows(input: EdgeInput): EdgeRow[] {
  const src = inboundLabel(input.kind);
  const dst = outboundLabel(input.kind);
  const accounts = new Map<string, Set<string>>();
  for (const w of input.workloads)
    accounts.set(`${w.namespace}/${w.name}`, new Set(w.pods.map((p) => p.serviceAccount)));

  // Client identities each destination's proxies saw.
  const clients = new Map<string, Set<string>>();
  for (const s of input.inbound) {
    const id = s.metric.client_id ?? '';
    if (id === '') continue;
    const key = `${s.metric.namespace ?? ''}/${s.metric[src] ?? ''}`;
    let set = clients.get(key);
    if (!set) clients.set(key, (set = new Set()));
    set.add(id);
  }

  const edges = new Map<string, EdgeRow>();
  for (const s of input.outbound) {
    const m = s.metric;
    const row: EdgeRow = {
      kind: input.kind,
      src: m[src] ?? '',
      srcNamespace: m.namespace ?? '',
      dst: m[dst] ?? '',
      dstNamespace: m.dst_namespace ?? '',
      clientId: '',
      serverId: m.server_id ?? '',
      secured: m.tls === 'true',
      msg: m.tls === 'true' ? '' : m.no_tls_reason || m.tls || 'no_tls',
    };
    if (row.src === '' || row.dst === '') continue;
    const key = `${row.srcNamespace}/${row.src}>${row.dstNamespace}/${row.dst}`;
    const seen = edges.get(key);
    if (!seen) edges.set(key, row);
    else {
      // Several series for one edge: secured only if all of them are.
      if (!row.secured && seen.secured) Object.assign(seen, { secured: false, msg: row.msg });
      if (seen.serverId === '') seen.serverId = row.serverId;
    }
  }

  for (const e of edges.values()) {
    const seenBy = [...(clients.get(`${e.dstNamespace}/${e.dst}`) ?? [])];
    const sas = accounts.get(`${e.srcNamespace}/${e.src}`);
    const fromSrc = seenBy.filter((id) => {
      const p = identityParts(id);
      return p !== undefined && p.ns === e.srcNamespace && (sas === undefined || sas.has(p.sa));
    });
    // Without the source's service accounts, only an unambiguous namespace match is taken.
    if (fromSrc.length === 1 || (sas !== undefined && fromSrc.length > 0)) e.clientId = fromSrc.sort()[0] ?? '';
  }
  return [...edges.values()].sort(
    (a, b) =>
      a.srcNamespace.localeCompare(b.srcNamespace) ||
      a.src.localeCompare(b.src) ||
      a.dstNamespace.localeCompare(b.dstNamespace) ||
      a.dst.localeCompare(b.dst),
  );
}

export function renderEdges(rows: readonly EdgeRow[], opts: { wide?: boolean } = {}): string {
  const cols = [
    { header: 'SRC' },
    { header: 'DST' },
    { header: 'SRC_NS' },
    { header: 'DST_NS' },
    { header: 'SECURED' },
  ];
  if (opts.wide) cols.push({ header: 'CLIENT_ID' }, { header: 'SERVER_ID' }, { header: 'MSG' });
  return renderTable(
    cols,
    rows.map((r) => {
      const c = [r.src, r.dst, r.srcNamespace, r.dstNamespace, r.secured ? '√' : '×'];
      if (opts.wide) c.push(r.clientId || '-', r.serverId || '-', r.msg);
      return c;
    }),
  );
}

/** -o json: Linkerd's keys, plus secured. */
export function toEdgesJson(rows: readonly EdgeRow[]): unknown[] {
  return rows.map((r) => ({
    src: r.src,
    src_namespace: r.srcNamespace,
    dst: r.dst,
    dst_namespace: r.dstNamespace,
    client_id: r.clientId,
    server_id: r.serverId,
    no_tls_reason: r.msg,
    secured: r.secured,
  }));
}
