// The one Kubernetes API client: JSON requests and watch streams over one reused connection
// (transport.ts), client-side QPS/burst (rate-limit.ts), credentials from the kubeconfig (auth.ts).
// A 429 is retried after the server's Retry-After (bounded), then handed to the caller, who keeps
// serving from its cache. Callers see statuses, never a request body: a TokenReview echoes the token.
import { Backoff, sleep } from '@minimesh/runtime';
import { createCredentialSource, type CredentialSource } from './auth.js';
import { KubeApiError, statusMessage, statusReason } from './errors.js';
import type { KubeConfig } from './kubeconfig.js';
import { TokenBucket, type RateLimit } from './rate-limit.js';
import { createTransport, type Transport, type TransportResponse } from './transport.js';

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

export interface RequestOptions {
  /** Default 30 s. */
  timeoutMs?: number;
  /** For PATCH: "application/merge-patch+json", "application/strategic-merge-patch+json", ... */
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
}

export interface WatchQuery {
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  labelSelector?: string;
  fieldSelector?: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export type WatchEnd = 'ended' | 'aborted';

export interface KubeClientStats {
  /** TLS (or TCP) connections opened to the API server since the client was made. */
  connectionsOpened: number;
  /** "h2" or "http/1.1" once connected. */
  protocol: string | undefined;
  requests: number;
  /** Requests the API server answered 429 (each retry counts). */
  throttled: number;
  /** Requests that waited for the client-side rate limit, and for how long in all. */
  rateLimited: number;
  rateLimitedMs: number;
}

/** The interface every program and test uses; createFakeKubeClient (@minimesh/kube/testing) has the same one. */
export interface KubeClient {
  /** "https://host:port" */
  readonly server: string;
  /** The namespace of the kubeconfig's context, or the pod's own in cluster. */
  readonly namespace: string | undefined;
  /** Any status is returned; only transport failures throw (KubeApiError with statusCode 0). */
  request<T = unknown>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<ApiResponse<T>>;
  /** Like request, but a status outside 2xx throws KubeApiError. */
  requestOk<T = unknown>(method: string, path: string, body?: unknown, opts?: RequestOptions): Promise<T>;
  /** GET that resolves to undefined on 404 and throws on other failures. */
  get<T = unknown>(path: string, opts?: RequestOptions): Promise<T | undefined>;
  /**
   * Opens a watch on a collection path and calls onEvent per event until the server ends the stream
   * ('ended') or the signal aborts it ('aborted'). A status other than 200 throws KubeApiError
   * (410 Gone: the version is too old). An exception from onEvent ends the watch with that error.
   */
  watch(
    path: string,
    query: WatchQuery,
    onEvent: (type: WatchEventType, object: unknown) => void,
    opts?: { signal?: AbortSignal },
  ): Promise<WatchEnd>;
  stats(): KubeClientStats;
  close(): Promise<void>;
}

export interface KubeClientOptions {
  /** Shown in the API server's audit log beside the user, e.g. "minimesh-identity/0.1.0". */
  userAgent: string;
  /** Client-side limit; default 100 QPS / 200 burst, Linkerd's. */
  rateLimit?: RateLimit;
  /** Retries of a 429 before it is returned to the caller (default 3). */
  maxThrottleRetries?: number;
  /** Force HTTP/1.1 (a keep-alive pool) even where h2 is offered. */
  http1Only?: boolean;
  /** Sockets in the HTTP/1.1 pool (default 4). */
  poolSize?: number;
}

export const DEFAULT_RATE_LIMIT: RateLimit = { qps: 100, burst: 200 };
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_RETRY_AFTER_MS = 10_000;

function retryAfterMs(res: ApiResponse, fallbackMs: number): number {
  const h = res.headers['retry-after'];
  const v = Array.isArray(h) ? h[0] : h;
  const secs = v !== undefined ? Number(v) : NaN;
  return Math.min(MAX_RETRY_AFTER_MS, Number.isFinite(secs) && secs >= 0 ? secs * 1000 : fallbackMs);
}

function readAll(body: TransportResponse['body']): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.on('data', (c: Buffer) => chunks.push(c));
    body.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    body.once('error', reject);
  });
}

function parseBody(buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  const text = buf.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function createKubeClient(config: KubeConfig, opts: KubeClientOptions): KubeClient {
  const transport: Transport = createTransport({
    server: config.server,
    tls: config.tls,
    ...(config.proxyUrl ? { proxyUrl: config.proxyUrl } : {}),
    ...(opts.http1Only ? { http1Only: true } : {}),
    ...(opts.poolSize ? { poolSize: opts.poolSize } : {}),
  });
  const credentials: CredentialSource = createCredentialSource(config.auth);
  const bucket = new TokenBucket(opts.rateLimit ?? DEFAULT_RATE_LIMIT);
  const maxThrottleRetries = opts.maxThrottleRetries ?? 3;
  const counters = { requests: 0, throttled: 0 };

  async function headers(accept: string, contentType?: string): Promise<Record<string, string>> {
    const creds = await credentials.get();
    if (creds.cert && creds.key) transport.setClientCertificate(creds.cert, creds.key);
    return {
      accept,
      'user-agent': opts.userAgent,
      ...(creds.authorization ? { authorization: creds.authorization } : {}),
      ...(contentType ? { 'content-type': contentType } : {}),
    };
  }

  /** One attempt: rate limit, send, read the whole body. */
  async function once<T>(
    method: string,
    path: string,
    payload: Buffer | undefined,
    ro: RequestOptions,
    signal: AbortSignal,
  ): Promise<ApiResponse<T>> {
    await bucket.take();
    counters.requests++;
    const hdrs = await headers(
      ro.accept ?? 'application/json',
      payload ? (ro.contentType ?? 'application/json') : undefined,
    );
    const res = await transport.send({ method, path, headers: hdrs, ...(payload ? { body: payload } : {}), signal });
    const buf = await readAll(res.body);
    if (res.status === 401) credentials.invalidate();
    return { status: res.status, headers: res.headers, body: parseBody(buf) as T };
  }

  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    ro: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const payload =
      body === undefined
        ? undefined
        : Buffer.isBuffer(body)
          ? body
          : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const timeoutMs = ro.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = ro.signal ? AbortSignal.any([ro.signal, timeout]) : timeout;
    const backoff = new Backoff({ initialMs: 500, maxMs: MAX_RETRY_AFTER_MS });
    for (let attempt = 0; ; attempt++) {
      let res: ApiResponse<T>;
      try {
        res = await once<T>(method, path, payload, ro, signal);
      } catch (err) {
        const why = timeout.aborted
          ? `no response within ${timeoutMs} ms`
          : ro.signal?.aborted
            ? 'aborted'
            : `${(err as NodeJS.ErrnoException).code ? `${(err as NodeJS.ErrnoException).code} ` : ''}${(err as Error).message}`;
        throw new KubeApiError(method, path, 0, why, { cause: err });
      }
      if (res.status !== 429) return res;
      counters.throttled++;
      const wait = retryAfterMs(res as ApiResponse, backoff.next());
      if (attempt >= maxThrottleRetries || signal.aborted) return res;
      await sleep(wait, signal);
      if (signal.aborted) return res;
    }
  }

  async function requestOk<T>(method: string, path: string, body?: unknown, ro?: RequestOptions): Promise<T> {
    const res = await request<T>(method, path, body, ro);
    if (res.status < 200 || res.status > 299) {
      const reason = statusReason(res.body);
      throw new KubeApiError(method, path, res.status, statusMessage(res.body), reason ? { reason } : {});
    }
    return res.body;
  }

  async function watch(
    path: string,
    query: WatchQuery,
    onEvent: (type: WatchEventType, object: unknown) => void,
    wo: { signal?: AbortSignal } = {},
  ): Promise<WatchEnd> {
    const q = new URLSearchParams({ watch: 'true' });
    if (query.allowWatchBookmarks) q.set('allowWatchBookmarks', 'true');
    if (query.resourceVersion) q.set('resourceVersion', query.resourceVersion);
    if (query.timeoutSeconds !== undefined) q.set('timeoutSeconds', String(query.timeoutSeconds));
    if (query.labelSelector) q.set('labelSelector', query.labelSelector);
    if (query.fieldSelector) q.set('fieldSelector', query.fieldSelector);
    const full = `${path}${path.includes('?') ? '&' : '?'}${q.toString()}`;
    const local = new AbortController();
    const signal = wo.signal ? AbortSignal.any([wo.signal, local.signal]) : local.signal;
    await bucket.take();
    counters.requests++;
    let res: TransportResponse;
    try {
      res = await transport.send({
        method: 'GET',
        path: full,
        headers: await headers('application/json'),
        signal,
        long: true,
      });
    } catch (err) {
      if (wo.signal?.aborted) return 'aborted';
      throw new KubeApiError('WATCH', path, 0, (err as Error).message, { cause: err });
    }
    if (res.status !== 200) {
      const parsed = parseBody(await readAll(res.body).catch(() => Buffer.alloc(0)));
      if (res.status === 401) credentials.invalidate();
      if (res.status === 429) counters.throttled++;
      const reason = statusReason(parsed);
      throw new KubeApiError('WATCH', path, res.status, statusMessage(parsed), reason ? { reason } : {});
    }
    return await new Promise<WatchEnd>((resolve, reject) => {
      let buf = '';
      let failed: unknown;
      const body = res.body;
      body.setEncoding('utf8');
      body.on('data', (chunk: string) => {
        if (failed !== undefined) return;
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim() === '') continue;
          try {
            const ev = JSON.parse(line) as { type: WatchEventType; object: unknown };
            onEvent(ev.type, ev.object);
          } catch (err) {
            failed = err;
            local.abort();
            return;
          }
        }
      });
      const finish = (err?: unknown): void => {
        if (failed !== undefined) return reject(failed instanceof Error ? failed : new Error(String(failed)));
        if (signal.aborted) return resolve('aborted');
        if (err) return reject(new KubeApiError('WATCH', path, 0, (err as Error).message, { cause: err }));
        resolve('ended');
      };
      body.once('end', () => finish());
      body.once('error', (err) => finish(err));
      // A stream reset without an error event (h2 RST_STREAM NO_ERROR) ends the watch like 'end'.
      body.once('close', () => finish());
    });
  }

  return {
    server: config.server,
    namespace: config.namespace,
    request,
    requestOk,
    async get<T>(path: string, ro?: RequestOptions): Promise<T | undefined> {
      const res = await request<T>('GET', path, undefined, ro);
      if (res.status === 404) return undefined;
      if (res.status < 200 || res.status > 299) {
        const reason = statusReason(res.body);
        throw new KubeApiError('GET', path, res.status, statusMessage(res.body), reason ? { reason } : {});
      }
      return res.body;
    },
    watch,
    stats: () => ({
      ...transport.stats(),
      requests: counters.requests,
      throttled: counters.throttled,
      rateLimited: bucket.delayed,
      rateLimitedMs: Math.round(bucket.waitedMs),
    }),
    async close() {
      transport.close();
    },
  };
}
