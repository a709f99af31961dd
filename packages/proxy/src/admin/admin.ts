// The admin server (4191): /live, /ready (503 until the first certificate, then 200 for good: a latch),
// /metrics, /env.json, and POST /shutdown from localhost when enabled (so a Job's app can end its proxy).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startAdminServer, type AdminServer, type Logger } from '@minimesh/runtime';
import type { Registry } from 'prom-client';

export class ReadyLatch {
  private ready = false;
  private reason = 'waiting for an identity certificate';
  release(): void {
    this.ready = true;
  }
  get isReady(): boolean {
    return this.ready;
  }
  state(): true | string {
    return this.ready ? true : this.reason;
  }
}

export interface AdminOptions {
  addr: string;
  logger: Logger;
  registry: Registry;
  latch: ReadyLatch;
  shutdownEnabled: boolean;
  onShutdown: () => void;
  /** Environment shown at /env.json (secrets are not in it: the token is a file path). */
  env: Record<string, string | undefined>;
  /** The proxy's HTTP/1 header read timeout; the admin server uses it when shorter than its own 10 s. */
  headerReadTimeoutMs?: number;
}

/** The admin server's own header read bound (runtime's default): probes and scrapes send their heads at once. */
const ADMIN_HEADERS_TIMEOUT_MS = 10_000;

function isLocal(req: IncomingMessage): boolean {
  const a = req.socket.remoteAddress ?? '';
  return a === '127.0.0.1' || a === '::1' || a === '::ffff:127.0.0.1';
}

export function startProxyAdmin(opts: AdminOptions): Promise<AdminServer> {
  return startAdminServer({
    addr: opts.addr,
    logger: opts.logger,
    registry: opts.registry,
    ready: () => opts.latch.state(),
    headersTimeoutMs: Math.min(opts.headerReadTimeoutMs ?? ADMIN_HEADERS_TIMEOUT_MS, ADMIN_HEADERS_TIMEOUT_MS),
    routes: {
      '/shutdown': (req: IncomingMessage, res: ServerResponse) => {
        if (!opts.shutdownEnabled) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
        if (req.method !== 'POST')
          return void res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('method not allowed\n');
        if (!isLocal(req))
          return void res
            .writeHead(403, { 'content-type': 'text/plain' })
            .end('shutdown is only accepted from localhost\n');
        res.writeHead(202, { 'content-type': 'text/plain' }).end('shutting down\n');
        opts.onShutdown();
      },
      '/env.json': (req: IncomingMessage, res: ServerResponse) => {
        if (!isLocal(req))
          return void res.writeHead(403, { 'content-type': 'text/plain' }).end('only from localhost\n');
        const env: Record<string, string> = {};
        for (const [k, v] of Object.entries(opts.env))
          if (k.startsWith('MINIMESH_PROXY_') && v !== undefined) env[k] = v;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(env, null, 2));
      },
    },
  });
}
