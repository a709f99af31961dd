// The admin server every program runs: /live, /ready, /metrics (Prometheus), plus program-specific routes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from 'pino';
import { parseListenAddr } from './listen-addr.js';

export type AdminRoute = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface AdminServerOptions {
  /** "0.0.0.0:9990" */
  addr: string;
  logger: Logger;
  /** The program's metrics registry; process metrics are added to it. */
  registry?: Registry;
  /** Ready when this returns true (or a string explaining why not, for 503 bodies). */
  ready?: () => boolean | string;
  /** Extra routes by path, e.g. { '/shutdown': handler }. */
  routes?: Record<string, AdminRoute>;
  /**
   * A client that has not sent a whole request head in this time gets 408 and is closed (the slowloris
   * bound; also an idle connection that never sends a request). Default 10 s: probes and scrapes send
   * their few headers at once.
   */
  headersTimeoutMs?: number;
  /** A whole request (head and body) must arrive in this time, or 408. Default 30 s; never below headersTimeoutMs. */
  requestTimeoutMs?: number;
}

/** The admin server's defaults: short, since its clients (kubelet probes, Prometheus) send small requests at once. */
export const ADMIN_HEADERS_TIMEOUT_MS = 10_000;
export const ADMIN_REQUEST_TIMEOUT_MS = 30_000;

export interface AdminServer {
  server: Server;
  registry: Registry;
  /** The bound port (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const registry = opts.registry ?? createRegistry();
  const log = opts.logger.child({ component: 'admin' });
  const headersTimeout = opts.headersTimeoutMs ?? ADMIN_HEADERS_TIMEOUT_MS;
  const requestTimeout = Math.max(opts.requestTimeoutMs ?? ADMIN_REQUEST_TIMEOUT_MS, headersTimeout);
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      // Node checks both deadlines on this interval (default 30 s, which would let a 10 s bound run to 40 s).
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeout / 4))),
      keepAliveTimeout: 5_000,
    },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      void handle(path, req, res).catch((err: unknown) => {
        log.warn({ err, path }, 'admin request failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      });
    },
  );
  async function handle(path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (path === '/live' || path === '/ping') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('live\n');
      return;
    }
    if (path === '/ready') {
      const state = opts.ready ? opts.ready() : true;
      if (state === true) res.writeHead(200, { 'content-type': 'text/plain' }).end('ready\n');
      else
        res
          .writeHead(503, { 'content-type': 'text/plain' })
          .end(`not ready${typeof state === 'string' ? `: ${state}` : ''}\n`);
      return;
    }
    if (path === '/metrics') {
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType }).end(body);
      return;
    }
    const route = opts.routes?.[path];
    if (route) {
      await route(req, res);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  }
  const { host, port } = parseListenAddr('admin address', opts.addr);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  log.info({ addr: `${host}:${bound}` }, 'admin server listening');
  return {
    server,
    registry,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
