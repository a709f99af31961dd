// The tap service (minimesh-tap): GET /tap?namespace=&kind=&name=&... finds the workload's meshed
// pods, asks each pod's proxy for its requests (io.linkerd.proxy.tap.Tap/Observe on port 4190, through
// this pod's own proxy, which dials it over mTLS as the tap service's identity), and streams them as
// watch-like NDJSON lines: {"type":"BOOKMARK","object":{"pods":[...]}} first, then
// {"type":"ADDED","object":<TapRecord>} per event, {"type":"ERROR","object":{"message"}} per proxy that
// failed (fatal when all did). Bad input and unknown workloads answer 400/404 with a Kubernetes Status.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toIdentityName } from '@minimesh/config';
import type { tap } from '@minimesh/proto';
import { VizError } from '../errors.js';
import { listPods, requireResource, type VizKube } from '../kube-io.js';
import { parseResource, ResourceError, RESOURCE_KINDS, type Resource, type ResourceKind } from '../resource.js';
import { toTapRecord, type TapContext } from '../tap-record.js';
import { TapFilterError, toObserveRequest } from '../tap-request.js';
import { groupWorkloads, toPodInfo, type PodInfo } from '../workloads.js';

/** One Observe call to one proxy: events until its limit, then end; or an error. */
export interface TapCall {
  on(event: 'data', fn: (ev: tap.TapEvent) => void): this;
  on(event: 'error', fn: (err: Error & { code?: number; details?: string }) => void): this;
  on(event: 'end', fn: () => void): this;
  cancel(): void;
}

/** Opens Observe on the proxy at <podIP>:4190. */
export type TapDialer = (podIp: string, req: tap.ObserveRequest) => TapCall;

export interface TapServiceOptions {
  kube: VizKube;
  dial: TapDialer;
  controlPlaneNamespace: string;
  trustDomain: string;
  /** The largest limit a tap may ask of each proxy. */
  maxLimit: number;
  log?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

const GRPC_CODES: Record<number, string> = {
  1: 'CANCELLED',
  4: 'DEADLINE_EXCEEDED',
  7: 'PERMISSION_DENIED',
  12: 'UNIMPLEMENTED',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** A proxy's refusal or failure, in words. */
export function describeTapFailure(pod: string, err: { code?: number; details?: string; message: string }): string {
  const detail = err.details || err.message;
  switch (err.code) {
    case 7:
    case 16:
      return `pod ${pod}: the proxy refused tap (${GRPC_CODES[err.code]}: ${detail})`;
    case 12:
      return `pod ${pod}: the proxy does not serve tap (UNIMPLEMENTED: ${detail}); is MINIMESH_PROXY_TAP_SVC_NAME set on it?`;
    case 14:
      return `pod ${pod}: the proxy's tap server is unreachable (UNAVAILABLE: ${detail})`;
    case undefined:
    default:
      return `pod ${pod}: tap failed (${err.code !== undefined ? (GRPC_CODES[err.code] ?? `code ${err.code}`) : 'error'}: ${detail})`;
  }
}

function sendStatus(res: ServerResponse, code: number, message: string, reason: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code }));
}

interface ParsedTap {
  resource: Resource;
  to?: Resource;
  req: tap.ObserveRequest;
}

export function parseTapQuery(q: URLSearchParams, maxLimit: number): ParsedTap {
  const namespace = q.get('namespace') ?? '';
  const kind = q.get('kind') ?? '';
  if (namespace === '') throw new ResourceError('namespace is required');
  if (!RESOURCE_KINDS.includes(kind as ResourceKind) || kind === 'namespace')
    throw new ResourceError(
      `kind "${kind}" cannot be tapped: expected one of ${RESOURCE_KINDS.filter((k) => k !== 'namespace').join(', ')}`,
    );
  const resource = { ...parseResource(kind, q.get('name') ?? undefined), namespace };
  const limit = Number(q.get('limit') ?? '100');
  if (limit > maxLimit) throw new TapFilterError(`limit ${limit} is over this tap service's maximum of ${maxLimit}`);
  let to: Resource | undefined;
  const toKind = q.get('toKind');
  if (toKind)
    to = { ...parseResource(toKind, q.get('toName') ?? undefined), namespace: q.get('toNamespace') || namespace };
  const req = toObserveRequest({
    limit,
    ...(to ? { to } : {}),
    ...(q.get('method') ? { method: q.get('method') ?? '' } : {}),
    ...(q.get('path') ? { path: q.get('path') ?? '' } : {}),
    ...(q.get('authority') ? { authority: q.get('authority') ?? '' } : {}),
    headers: q.get('headers') === 'true',
  });
  return { resource, ...(to ? { to } : {}), req };
}

/** Labels the tap service gives a pod it knows, as a proxy's metric labels name them. */
function podLabels(p: PodInfo): Record<string, string> {
  const l: Record<string, string> = { namespace: p.namespace, pod: p.name, serviceaccount: p.serviceAccount };
  for (const [k, v] of Object.entries(p.owners)) if (v) l[k] = v;
  return l;
}

export function createTapService(opts: TapServiceOptions) {
  const identityOf = (p: PodInfo): string => {
    try {
      return toIdentityName({
        serviceAccount: p.serviceAccount,
        namespace: p.namespace,
        controlPlaneNamespace: opts.controlPlaneNamespace,
        trustDomain: opts.trustDomain,
      });
    } catch {
      return '';
    }
  };

  async function tapHandler(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let parsed: ParsedTap;
    try {
      parsed = parseTapQuery(url.searchParams, opts.maxLimit);
    } catch (err) {
      return sendStatus(res, 400, (err as Error).message, 'BadRequest');
    }
    const { resource } = parsed;
    try {
      await requireResource(opts.kube, resource);
      if (parsed.to) await requireResource(opts.kube, parsed.to);
    } catch (err) {
      if (err instanceof VizError && err.code === 'MINIMESH_VIZ_NOT_FOUND')
        return sendStatus(res, 404, err.message, 'NotFound');
      throw err;
    }
    const all = (await listPods(opts.kube, '')).map(toPodInfo);
    const target = groupWorkloads(
      all.filter((p) => p.namespace === resource.namespace),
      resource.kind,
      resource.name,
    )[0];
    const running = (target?.pods ?? []).filter((p) => p.status === 'Running' && p.ip !== '');
    const meshed = running.filter((p) => p.meshed);
    const what = `${resource.kind} "${resource.name}" in namespace "${resource.namespace}"`;
    if (meshed.length === 0) {
      const why =
        running.length === 0
          ? 'has no running pods'
          : `has no meshed pods (${running.length} running without a minimesh-proxy container)`;
      return sendStatus(res, 404, `${what} ${why}`, 'NotFound');
    }
    const byIp = new Map<string, Record<string, string>>();
    for (const p of all) if (p.ip !== '' && p.status === 'Running') byIp.set(p.ip, podLabels(p));

    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    const line = (type: string, object: unknown) => {
      if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
    };
    line('BOOKMARK', { pods: meshed.map((p) => `${p.namespace}/${p.name}`) });
    opts.log?.info(
      {
        resource: `${resource.kind}/${resource.name}`,
        namespace: resource.namespace,
        pods: meshed.length,
        limit: parsed.req.limit,
      },
      'tap started',
    );

    const calls: TapCall[] = [];
    let open = meshed.length;
    let failed = 0;
    const done = () => {
      if (--open > 0) return;
      if (failed === meshed.length)
        line('ERROR', { message: `tap of ${what}: every proxy failed`, fatal: true, code: 'MINIMESH_VIZ_TAP_REFUSED' });
      res.end();
    };
    const stop = () => {
      for (const c of calls) c.cancel();
    };
    req.on('close', stop);
    res.on('close', stop);
    for (const p of meshed) {
      const pod = `${p.namespace}/${p.name}`;
      const ctx: TapContext = { pod, identity: identityOf(p), labels: podLabels(p), lookup: (ip) => byIp.get(ip) };
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        done();
      };
      const call = opts.dial(p.ip, parsed.req);
      calls.push(call);
      call.on('data', (ev) => {
        const r = toTapRecord(ev, ctx);
        if (r) line('ADDED', r);
      });
      call.on('error', (err) => {
        if (err.code === 1) return finish(); // cancelled by us: the client went away
        failed++;
        const message = describeTapFailure(pod, err);
        opts.log?.warn({ pod, code: err.code }, message);
        line('ERROR', { message, pod });
        finish();
      });
      call.on('end', finish);
    }
  }

  /** The HTTP handler: GET /tap, 404 for anything else. */
  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://tap');
    if (url.pathname !== '/tap' && url.pathname !== '/tap/')
      return sendStatus(res, 404, `no such path ${url.pathname}: try GET /tap`, 'NotFound');
    if (req.method !== 'GET') return sendStatus(res, 405, `${req.method} /tap: expected GET`, 'MethodNotAllowed');
    try {
      await tapHandler(url, req, res);
    } catch (err) {
      opts.log?.warn({ err: (err as Error).message }, 'tap failed');
      if (!res.headersSent) sendStatus(res, 500, `tap failed: ${(err as Error).message}`, 'InternalError');
      else {
        res.write(`${JSON.stringify({ type: 'ERROR', object: { message: (err as Error).message, fatal: true } })}\n`);
        res.end();
      }
    }
  };
}
