// A small JSON client for the Kubernetes API on top of a KubeConfig: the TLS, token and client
// certificate settings come from @kubernetes/client-node; requests go through node:http(s).
import { request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { ApiRequestError, DestinationError } from '../errors.js';

/** Shown in the API server's audit log next to the ServiceAccount. */
export const USER_AGENT = 'minimesh-destination/0.1.0';

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
}

export interface ApiClient {
  readonly kubeConfig: KubeConfig;
  readonly server: string;
  /** Any status is returned; only transport failures throw. */
  request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    opts?: { timeoutMs?: number },
  ): Promise<ApiResponse<T>>;
  /** Like request, but a status outside 2xx throws ApiRequestError. */
  requestOk<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  readonly watch: Watch;
}

/** Loads a kubeconfig file, else the in-cluster service account, else the default locations. */
export function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (path) kc.loadFromFile(path);
    else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else kc.loadFromDefault();
  } catch (err) {
    throw new DestinationError(
      'MINIMESH_DESTINATION_KUBECONFIG',
      `kubeconfig ${path ?? '(default)'}: cannot be loaded: ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (!kc.getCurrentCluster())
    throw new DestinationError(
      'MINIMESH_DESTINATION_KUBECONFIG',
      `kubeconfig ${path ?? '(default)'}: has no current cluster`,
    );
  return kc;
}

function statusMessage(body: unknown): string {
  if (
    body &&
    typeof body === 'object' &&
    'message' in body &&
    typeof (body as { message: unknown }).message === 'string'
  )
    return (body as { message: string }).message;
  return typeof body === 'string' ? body.slice(0, 200) : '';
}

export function createApiClient(kc: KubeConfig): ApiClient {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new DestinationError('MINIMESH_DESTINATION_KUBECONFIG', 'kubeconfig: has no current cluster');
  const server = cluster.server.replace(/\/$/, '');
  const proxied = Boolean(cluster.proxyUrl);
  // One keep-alive agent for every request (client-node makes a new agent, so a new TLS connection, per call).
  let keepAlive: HttpsAgent | undefined;

  async function request<T>(
    method: string,
    path: string,
    body?: unknown,
    opts: { timeoutMs?: number } = {},
  ): Promise<ApiResponse<T>> {
    const options: RequestOptions = { method, headers: {} };
    await kc.applyToHTTPSOptions(options);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    options.headers = {
      ...(options.headers as Record<string, string>),
      accept: 'application/json',
      'user-agent': USER_AGENT,
      ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
    };
    const url = new URL(server + path);
    if (url.protocol === 'https:' && !proxied) {
      keepAlive ??= new HttpsAgent({
        keepAlive: true,
        maxSockets: 8,
        ...(options.ca !== undefined ? { ca: options.ca } : {}),
        ...(options.cert !== undefined ? { cert: options.cert } : {}),
        ...(options.key !== undefined ? { key: options.key } : {}),
        ...(options.rejectUnauthorized !== undefined ? { rejectUnauthorized: options.rejectUnauthorized } : {}),
        ...(options.servername !== undefined ? { servername: options.servername } : {}),
      });
      options.agent = keepAlive;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return await new Promise<ApiResponse<T>>((resolve, reject) => {
      const req = send(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(new ApiRequestError(method, path, 0, err.message, { cause: err })));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text === '' ? undefined : JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed as T });
        });
      });
      req.setTimeout(opts.timeoutMs ?? 30_000, () =>
        req.destroy(new Error(`no response within ${opts.timeoutMs ?? 30_000} ms`)),
      );
      req.on('error', (err) => reject(new ApiRequestError(method, path, 0, err.message, { cause: err })));
      if (payload) req.write(payload);
      req.end();
    });
  }

  return {
    kubeConfig: kc,
    server,
    request,
    async requestOk<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await request<T>(method, path, body);
      if (res.status < 200 || res.status > 299)
        throw new ApiRequestError(method, path, res.status, statusMessage(res.body));
      return res.body;
    },
    watch: new Watch(kc),
  };
}
