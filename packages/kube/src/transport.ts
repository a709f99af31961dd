// One connection to the API server per client: HTTP/2 when the server offers it over TLS (every
// kube-apiserver does), so lists, watches, Lease updates and TokenReviews share one TLS session, as
// client-go's do. When ALPN does not pick h2 (a plain http:// test server, an HTTP/1-only proxy),
// requests go through a keep-alive pool of at most `poolSize` sockets; each watch then holds a
// socket of its own outside the pool, so a long watch never starves the pool.
import { connect as h2connect, constants as h2c, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import type { Duplex, Readable } from 'node:stream';
import { isStaleKeepAlive } from '@minimesh/runtime';

export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  insecureSkipTlsVerify: boolean;
  servername?: string;
}

export interface TransportRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
  /** A long-lived response (a watch): in HTTP/1 mode it gets its own socket. */
  long?: boolean;
}

export interface TransportResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export interface TransportStats {
  /** TCP+TLS connections opened since the start (the figure the API server pays a handshake for). */
  connectionsOpened: number;
  /** "h2", "http/1.1", or undefined before the first connection. */
  protocol: string | undefined;
}

export interface Transport {
  send(req: TransportRequest): Promise<TransportResponse>;
  stats(): TransportStats;
  /** Client credentials changed (an exec plugin's new certificate): the next request reconnects. */
  setClientCertificate(cert: Buffer | undefined, key: Buffer | undefined): void;
  close(): void;
}

export interface TransportOptions {
  server: string;
  tls: TlsSettings;
  /** "http://proxy:3128": tunnel with CONNECT. */
  proxyUrl?: string;
  /** Force the HTTP/1.1 pool even where h2 is offered (measurements, odd proxies). */
  http1Only?: boolean;
  /** Sockets in the HTTP/1.1 pool. */
  poolSize?: number;
}

/** Per-stream and per-connection receive windows: a 1000-object list arrives without stalls. */
const STREAM_WINDOW = 4 << 20;
const SESSION_WINDOW = 16 << 20;

export function createTransport(opts: TransportOptions): Transport {
  const url = new URL(opts.server);
  const secure = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || (secure ? 443 : 80));
  let tls: TlsSettings = { ...opts.tls };
  let connectionsOpened = 0;
  let protocol: string | undefined;
  let mode: 'h2' | 'http1' | undefined = !secure || opts.http1Only ? 'http1' : undefined;
  let session: ClientHttp2Session | undefined;
  let connecting: Promise<ClientHttp2Session | undefined> | undefined;
  let active = 0;
  let closed = false;
  let pool: HttpAgent | undefined;
  let longPool: HttpAgent | undefined;

  const tlsOptions = (): ConnectionOptions => ({
    host,
    port,
    servername: tls.servername ?? (/^[\d.]+$|:/.test(host) ? undefined : host),
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    rejectUnauthorized: !tls.insecureSkipTlsVerify,
  });

  /** A TCP socket to the server, through the proxy's CONNECT tunnel when one is configured. */
  const rawSocket = (): Promise<Duplex | undefined> => {
    if (!opts.proxyUrl) return Promise.resolve(undefined);
    const proxy = new URL(opts.proxyUrl);
    return new Promise((resolve, reject) => {
      const req = httpRequest({
        host: proxy.hostname,
        port: proxy.port || 80,
        method: 'CONNECT',
        path: `${host.includes(':') ? `[${host}]` : host}:${port}`,
        headers: proxy.username
          ? {
              'proxy-authorization': `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`,
            }
          : {},
      });
      req.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy();
          reject(new Error(`proxy ${proxy.host}: CONNECT answered HTTP ${res.statusCode}`));
        } else resolve(socket);
      });
      req.once('error', reject);
      req.end();
    });
  };

  const tlsSocket = async (alpn: string[]): Promise<TLSSocket> => {
    const under = await rawSocket();
    return await new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ ...tlsOptions(), ...(under ? { socket: under } : {}), ALPNProtocols: alpn });
      connectionsOpened++;
      s.once('secureConnect', () => resolve(s));
      s.once('error', reject);
    });
  };

  const idle = (): void => {
    // Idle sessions must not keep a CLI alive; busy ones must (a pending request is not a handle).
    if (active === 0) session?.unref();
    else session?.ref();
  };

  async function h2Session(): Promise<ClientHttp2Session | undefined> {
    if (session && !session.closed && !session.destroyed) return session;
    connecting ??= (async () => {
      const socket = await tlsSocket(['h2', 'http/1.1']);
      protocol = socket.alpnProtocol || 'http/1.1';
      if (socket.alpnProtocol !== 'h2') {
        // The server speaks HTTP/1.1 only: from now on the pool (this probe socket is not reused).
        socket.destroy();
        mode = 'http1';
        return undefined;
      }
      mode = 'h2';
      const s = h2connect(opts.server, {
        createConnection: () => socket,
        settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
      });
      s.on('error', () => undefined); // surfaced through the streams; the session is replaced below
      const drop = (): void => {
        if (session === s) session = undefined;
      };
      s.once('close', drop);
      s.once('goaway', drop);
      s.once('connect', () => {
        try {
          s.setLocalWindowSize(SESSION_WINDOW);
        } catch {
          // an old peer: the default window works, only slower
        }
      });
      session = s;
      idle();
      return s;
    })().finally(() => (connecting = undefined));
    return connecting;
  }

  function sendH2(s: ClientHttp2Session, req: TransportRequest): Promise<TransportResponse> {
    return new Promise((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = s.request(
          {
            [h2c.HTTP2_HEADER_METHOD]: req.method,
            [h2c.HTTP2_HEADER_PATH]: req.path,
            ...req.headers,
          },
          { endStream: req.body === undefined, ...(req.signal ? { signal: req.signal } : {}) },
        );
      } catch (err) {
        reject(err as Error);
        return;
      }
      active++;
      idle();
      stream.once('close', () => {
        active--;
        idle();
      });
      stream.once('error', reject);
      stream.once('response', (headers) => {
        stream.off('error', reject);
        const status = Number(headers[h2c.HTTP2_HEADER_STATUS] ?? 0);
        resolve({ status, headers: headers as TransportResponse['headers'], body: stream });
      });
      if (req.body !== undefined) stream.end(req.body);
    });
  }

  function agent(long: boolean): HttpAgent {
    const make = (maxSockets: number): HttpAgent => {
      const options = { keepAlive: !long, maxSockets, ...(secure ? tlsOptions() : {}) };
      const a = secure ? new HttpsAgent(options) : new HttpAgent(options);
      const create = a.createConnection.bind(a) as (...args: unknown[]) => Duplex;
      (a as unknown as { createConnection: (...args: unknown[]) => Duplex }).createConnection = (...args) => {
        connectionsOpened++;
        protocol ??= 'http/1.1';
        return create(...args);
      };
      return a;
    };
    if (long) return (longPool ??= make(Infinity));
    return (pool ??= make(opts.poolSize ?? 4));
  }

  function sendHttp1(req: TransportRequest): Promise<TransportResponse> {
    return new Promise((resolve, reject) => {
      const options = {
        method: req.method,
        host,
        port,
        path: req.path,
        headers: { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
        agent: agent(req.long === true),
        ...(req.signal ? { signal: req.signal } : {}),
      };
      if (opts.proxyUrl && secure) {
        // Through a proxy: one tunnelled TLS socket per request (rare: CLI use behind a proxy).
        (options as Record<string, unknown>).agent = false;
        (options as Record<string, unknown>).createConnection = (
          _o: unknown,
          cb: (e: Error | null, s?: Duplex) => void,
        ) => {
          tlsSocket(['http/1.1']).then((s) => cb(null, s), cb);
          return undefined;
        };
      }
      // The keep-alive race (isStaleKeepAlive): the API server closed an idle pooled connection just as
      // it was reused. Nothing reached it, and the body is a buffer: send once more on another connection.
      const send = (retry: boolean): void => {
        const r: ClientRequest = (secure ? httpsRequest : httpRequest)(options, (res: IncomingMessage) =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }),
        );
        r.once('error', (err: NodeJS.ErrnoException) => {
          if (retry && isStaleKeepAlive(r, err)) send(false);
          else reject(err);
        });
        r.end(req.body);
      };
      send(true);
    });
  }

  return {
    async send(req) {
      if (closed) throw new Error('the Kubernetes client is closed');
      if (mode !== 'http1') {
        const s = await h2Session();
        if (s) return sendH2(s, req);
      }
      return sendHttp1(req);
    },
    stats: () => ({ connectionsOpened, protocol }),
    setClientCertificate(cert, key) {
      if (cert?.equals(tls.cert ?? Buffer.alloc(0)) && key?.equals(tls.key ?? Buffer.alloc(0))) return;
      tls = { ...tls, ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
      session?.close();
      session = undefined;
      pool?.destroy();
      pool = undefined;
    },
    close() {
      closed = true;
      session?.destroy();
      session = undefined;
      pool?.destroy();
      longPool?.destroy();
    },
  };
}
