// A small Kubernetes REST client (https + JSON + watch streams) for the harness and the tests.
// The harness needs only a handful of calls; keeping them explicit avoids surprises in long watches.
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { readFileSync } from 'node:fs';
import { API_SERVER } from './paths.js';

export interface KubeCredentials {
  server?: string;
  ca: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  token?: string;
}

export class KubeApiError extends Error {
  readonly code = 'MINIMESH_LOCAL_CLUSTER_API';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${path}: HTTP ${status}: ${body.slice(0, 400)}`);
  }
}

export interface WatchEvent<T = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

// Kubernetes objects are handled as plain JSON here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KubeObject = Record<string, any>;

export interface KubeClient {
  request<T = KubeObject>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
  /** Like request, but resolves to undefined on 404. */
  get<T = KubeObject>(path: string): Promise<T | undefined>;
  /** Lists then watches `path` (a collection URL) forever, calling onEvent; restarts on errors. */
  watch(path: string, onEvent: (ev: WatchEvent) => void, onReset?: (items: KubeObject[]) => void): { stop(): void };
}

export function credentialsFromFiles(files: { ca: string; cert: string; key: string }): KubeCredentials {
  return { ca: readFileSync(files.ca), cert: readFileSync(files.cert), key: readFileSync(files.key) };
}

export function createKubeClient(creds: KubeCredentials): KubeClient {
  const base = new URL(creds.server ?? API_SERVER);
  const options = (method: string, path: string, headers: Record<string, string>): RequestOptions => ({
    method,
    host: base.hostname,
    port: base.port,
    path,
    ca: creds.ca,
    cert: creds.cert,
    key: creds.key,
    headers: {
      accept: 'application/json',
      ...(creds.token ? { authorization: `Bearer ${creds.token}` } : {}),
      ...headers,
    },
  });

  function request<T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    return new Promise((resolve, reject) => {
      const payload =
        body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      const headers: Record<string, string> = payload
        ? { 'content-type': contentType, 'content-length': String(payload.length) }
        : {};
      const req = httpsRequest(options(method, path, headers), (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 300) return reject(new KubeApiError(method, path, res.statusCode ?? 0, text));
          try {
            resolve((text ? JSON.parse(text) : {}) as T);
          } catch {
            resolve(text as unknown as T);
          }
        });
        res.on('error', reject);
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: timed out after 30s`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  async function get<T>(path: string): Promise<T | undefined> {
    try {
      return await request<T>('GET', path);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  function watch(path: string, onEvent: (ev: WatchEvent) => void, onReset?: (items: KubeObject[]) => void) {
    let stopped = false;
    let current: { destroy(): void } | undefined;
    const sep = path.includes('?') ? '&' : '?';
    const loop = async (): Promise<void> => {
      let failures = 0;
      while (!stopped) {
        try {
          const list = await request<KubeObject>('GET', path);
          const items = (list.items ?? []) as KubeObject[];
          if (onReset) onReset(items);
          else for (const item of items) onEvent({ type: 'ADDED', object: item });
          let rv = String(list.metadata?.resourceVersion ?? '');
          failures = 0;
          // Watch until the server closes (timeoutSeconds) or the resourceVersion is too old.
          while (!stopped) {
            const outcome = await new Promise<string>((resolve) => {
              const req = httpsRequest(
                options(
                  'GET',
                  `${path}${sep}watch=true&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=${rv}`,
                  {},
                ),
                (res) => {
                  if (res.statusCode !== 200) {
                    res.resume();
                    return resolve('relist');
                  }
                  let buf = '';
                  res.setEncoding('utf8');
                  res.on('data', (chunk: string) => {
                    buf += chunk;
                    let nl: number;
                    while ((nl = buf.indexOf('\n')) >= 0) {
                      const line = buf.slice(0, nl);
                      buf = buf.slice(nl + 1);
                      if (!line.trim()) continue;
                      const ev = JSON.parse(line) as WatchEvent;
                      if (ev.type === 'ERROR') {
                        req.destroy();
                        return resolve('relist');
                      }
                      rv = String(ev.object?.metadata?.resourceVersion ?? rv);
                      if (ev.type !== 'BOOKMARK') onEvent(ev);
                    }
                  });
                  res.on('end', () => resolve('rewatch'));
                  res.on('error', () => resolve('relist'));
                },
              );
              req.on('error', () => resolve('relist'));
              req.end();
              current = req;
            });
            if (outcome === 'relist') break;
          }
        } catch {
          failures++;
        }
        if (!stopped) await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** Math.min(failures, 5))));
      }
    };
    void loop();
    return {
      stop() {
        stopped = true;
        current?.destroy();
      },
    };
  }

  return { request, get, watch };
}

/** A kubeconfig file's text for a client-certificate user or a token user. */
export function renderKubeconfig(opts: {
  name: string;
  server?: string;
  caPem: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
  namespace?: string;
}): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const user: Record<string, string> = {};
  if (opts.token) user.token = opts.token;
  if (opts.certPem) user['client-certificate-data'] = b64(opts.certPem);
  if (opts.keyPem) user['client-key-data'] = b64(opts.keyPem);
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'minimesh-local',
        cluster: { server: opts.server ?? API_SERVER, 'certificate-authority-data': b64(opts.caPem) },
      },
    ],
    users: [{ name: opts.name, user }],
    contexts: [
      {
        name: opts.name,
        context: {
          cluster: 'minimesh-local',
          user: opts.name,
          ...(opts.namespace ? { namespace: opts.namespace } : {}),
        },
      },
    ],
    'current-context': opts.name,
  };
  return JSON.stringify(config, null, 2) + '\n';
}
