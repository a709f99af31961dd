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
}

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
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    void handle(path, req, res).catch((err: unknown) => {
      log.warn({ err, path }, 'admin request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  });
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
