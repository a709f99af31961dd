// Tap events as viz hands them on: the proxy's TapEvent (io.linkerd.proxy.tap) made plain JSON, with
// identities on both ends, and the lines `minimesh viz tap` prints (Linkerd's req/rsp/end format). Pure.
import type { httpTypes } from '@minimesh/proto';
import { fromTcpAddress, tap } from '@minimesh/proto';

export interface TapPeer {
  ip: string;
  port: number;
  /** The proxy's labels for this end (destination's metric labels, tls, client_id / server_id), plus
   *  the tap service's own for pods it knows (namespace, pod, deployment, ...). */
  labels: Record<string, string>;
  /** The mesh identity of this end, when known. */
  identity: string;
}

export type TapRecordType = 'requestInit' | 'responseInit' | 'responseEnd';

export interface TapRecord {
  /** "<base>:<stream>": one request, the same in its three events. */
  id: string;
  /** Which proxy saw it: the tapped pod's inbound (it served the request) or outbound (it sent it). */
  direction: 'inbound' | 'outbound' | 'unknown';
  /** The tapped pod, "<namespace>/<name>". */
  pod: string;
  source: TapPeer;
  destination: TapPeer;
  /** "true" over mTLS, else the reason (no_identity, ...). */
  tls: string;
  type: TapRecordType;
  method?: string;
  scheme?: string;
  authority?: string;
  path?: string;
  status?: number;
  /** requestInit → responseInit (responseInit), requestInit → responseEnd (responseEnd). */
  latencyMs?: number;
  /** responseInit → responseEnd (responseEnd). */
  durationMs?: number;
  responseBytes?: number;
  grpcStatus?: number;
  resetCode?: number;
  /** Request or response headers, when asked for. */
  headers?: Record<string, string>;
}

export interface TapContext {
  /** "<namespace>/<name>" of the tapped pod. */
  pod: string;
  /** The tapped pod's own identity (the far end of its inbound, the near end of its outbound). */
  identity: string;
  /** The tapped pod's labels for its own end. */
  labels: Record<string, string>;
  /** Labels for a peer IP the tap service knows (a pod of the cluster). */
  lookup?: (ip: string) => Record<string, string> | undefined;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'HEAD', 'TRACE'];

export function methodName(m: httpTypes.HttpMethod | undefined): string {
  const t = m?.type;
  if (!t) return '';
  return t.$case === 'registered' ? (METHODS[t.value] ?? String(t.value)) : t.value;
}

/** GET → HttpMethod{registered: GET}; unknown methods go as unregistered strings. */
export function toHttpMethod(method: string): httpTypes.HttpMethod {
  const i = METHODS.indexOf(method.toUpperCase());
  return i >= 0 ? { type: { $case: 'registered', value: i } } : { type: { $case: 'unregistered', value: method } };
}

function schemeName(s: httpTypes.Scheme | undefined): string {
  const t = s?.type;
  if (!t) return '';
  return t.$case === 'registered' ? (t.value === 1 ? 'https' : 'http') : t.value;
}

const ms = (d: { seconds: bigint; nanos: number } | undefined): number | undefined =>
  d === undefined ? undefined : Number(d.seconds) * 1000 + d.nanos / 1e6;

function headersOf(h: httpTypes.Headers | undefined): Record<string, string> | undefined {
  if (!h || h.headers.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const x of h.headers) out[x.name] = Buffer.from(x.value).toString('utf8');
  return out;
}

export function toTapRecord(ev: tap.TapEvent, ctx: TapContext): TapRecord | undefined {
  const http = ev.event?.$case === 'http' ? ev.event.value.event : undefined;
  if (!http) return undefined;
  const direction =
    ev.proxyDirection === tap.TapEvent_ProxyDirection.INBOUND
      ? 'inbound'
      : ev.proxyDirection === tap.TapEvent_ProxyDirection.OUTBOUND
        ? 'outbound'
        : 'unknown';
  const peer = (addr: typeof ev.source, meta: tap.TapEvent_EndpointMeta | undefined, own: boolean): TapPeer => {
    const a = fromTcpAddress(addr);
    const ip = a?.ip ?? '';
    const labels = { ...(own ? ctx.labels : (ctx.lookup?.(ip) ?? {})), ...(meta?.labels ?? {}) };
    const identity = own ? ctx.identity : (labels.client_id ?? labels.server_id ?? '');
    return { ip, port: a?.port ?? 0, labels, identity };
  };
  const source = peer(ev.source, ev.sourceMeta, direction === 'outbound');
  const destination = peer(ev.destination, ev.destinationMeta, direction === 'inbound');
  const tls = (direction === 'outbound' ? ev.destinationMeta?.labels.tls : ev.sourceMeta?.labels.tls) ?? '';
  const id = http.value.id;
  const base: TapRecord = {
    id: `${id?.base ?? 0}:${id?.stream ?? 0n}`,
    direction,
    pod: ctx.pod,
    source,
    destination,
    tls,
    type: http.$case,
  };
  switch (http.$case) {
    case 'requestInit': {
      const v = http.value;
      const headers = headersOf(v.headers);
      return {
        ...base,
        method: methodName(v.method),
        scheme: schemeName(v.scheme),
        authority: v.authority,
        path: v.path,
        ...(headers ? { headers } : {}),
      };
    }
    case 'responseInit': {
      const v = http.value;
      const headers = headersOf(v.headers);
      return { ...base, status: v.httpStatus, latencyMs: ms(v.sinceRequestInit), ...(headers ? { headers } : {}) };
    }
    case 'responseEnd': {
      const v = http.value;
      const rec: TapRecord = {
        ...base,
        latencyMs: ms(v.sinceRequestInit),
        durationMs: ms(v.sinceResponseInit),
        responseBytes: Number(v.responseBytes),
      };
      if (v.eos?.end?.$case === 'grpcStatusCode') rec.grpcStatus = v.eos.end.value;
      if (v.eos?.end?.$case === 'resetErrorCode') rec.resetCode = v.eos.end.value;
      const trailers = headersOf(v.trailers);
      if (trailers) rec.headers = trailers;
      return rec;
    }
    default:
      return undefined;
  }
}

/** "1234µs" below 10 ms, as Linkerd prints latencies; "12ms" above. */
export function formatLatency(msValue: number | undefined): string {
  if (msValue === undefined) return '-';
  if (msValue < 10) return `${Math.round(msValue * 1000)}µs`;
  return `${Math.round(msValue)}ms`;
}

const GRPC = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** The resource of a peer, "deploy/web" or "po/web-1", from its labels; '' when unknown. */
export function peerResource(p: TapPeer): string {
  const l = p.labels;
  for (const [label, short] of [
    ['deployment', 'deploy'],
    ['statefulset', 'sts'],
    ['daemonset', 'ds'],
    ['job', 'job'],
    ['pod', 'po'],
  ] as const) {
    if (l[label]) return `${short}/${l[label]}`;
  }
  return '';
}

/** One line per event, as `linkerd viz tap` prints them, with both identities on the req line. */
export function formatTapLine(r: TapRecord, opts: { wide?: boolean } = {}): string {
  const head = `${{ requestInit: 'req', responseInit: 'rsp', responseEnd: 'end' }[r.type]} id=${r.id} proxy=${
    r.direction === 'inbound' ? 'in ' : r.direction === 'outbound' ? 'out' : '?  '
  } src=${r.source.ip}:${r.source.port} dst=${r.destination.ip}:${r.destination.port} tls=${r.tls || '-'}`;
  const parts = [head];
  switch (r.type) {
    case 'requestInit':
      parts.push(`:method=${r.method} :authority=${r.authority} :path=${r.path}`);
      parts.push(`src_id=${r.source.identity || '-'} dst_id=${r.destination.identity || '-'}`);
      break;
    case 'responseInit':
      parts.push(`:status=${r.status} latency=${formatLatency(r.latencyMs)}`);
      break;
    case 'responseEnd':
      if (r.grpcStatus !== undefined) parts.push(`grpc-status=${GRPC[r.grpcStatus] ?? r.grpcStatus}`);
      if (r.resetCode !== undefined) parts.push(`reset-error=${r.resetCode}`);
      parts.push(`duration=${formatLatency(r.durationMs)} response-length=${r.responseBytes ?? 0}B`);
      break;
    default:
  }
  if (opts.wide) {
    const src = peerResource(r.source);
    const dst = peerResource(r.destination);
    if (src) parts.push(`src_res=${src} src_ns=${r.source.labels.namespace ?? ''}`);
    if (dst) parts.push(`dst_res=${dst} dst_ns=${r.destination.labels.namespace ?? ''}`);
  }
  return parts.join(' ');
}
