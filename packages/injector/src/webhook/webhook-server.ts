// The HTTPS server around the webhook plugin: TLS 1.2+ with the certificate reloaded when its files
// change (a Secret update, a cert-manager renewal) without dropping the listener.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Server as HttpsServer } from 'node:https';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '@minimesh/runtime';
import { InjectorError } from '../errors.js';
import { webhookPlugin, type WebhookPluginOptions } from './webhook-plugin.js';

export interface WebhookServerOptions extends WebhookPluginOptions {
  certFile: string;
  keyFile: string;
  /** How often the certificate files are checked for changes. */
  tlsReloadIntervalMs?: number;
}

export interface WebhookServer {
  app: FastifyInstance<HttpsServer>;
  listen(host: string, port: number): Promise<number>;
  /** Re-reads the certificate and key now; keeps the old pair if the new one does not load. */
  reloadTls(): boolean;
  close(): Promise<void>;
}

function readTls(certFile: string, keyFile: string): { cert: Buffer; key: Buffer } {
  try {
    const pair = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
    createSecureContext(pair); // throws on a bad PEM or a key that does not match the certificate
    return pair;
  } catch (err) {
    throw new InjectorError(
      'MINIMESH_INJECTOR_TLS',
      `TLS certificate ${certFile} / key ${keyFile}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

export async function createWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log: Logger = opts.logger;
  const tls = readTls(opts.certFile, opts.keyFile);
  // Loaded here, not at the top: the package index is also imported by the CLI, which serves nothing.
  const { default: Fastify } = await import('fastify');
  const app = Fastify({
    https: { ...tls, minVersion: 'TLSv1.2' },
    // The plugin logs each admission itself (pino child loggers), so fastify's own logger stays off.
    logger: false,
    bodyLimit: 10 * 1024 * 1024,
    // The API server reuses connections; keep them longer than its idle timeout.
    keepAliveTimeout: 65_000,
  });
  await app.register(webhookPlugin, opts);

  const reloadTls = (): boolean => {
    try {
      const pair = readTls(opts.certFile, opts.keyFile);
      (app.server as HttpsServer).setSecureContext({ ...pair, minVersion: 'TLSv1.2' });
      log.info({ cert: opts.certFile }, 'TLS certificate reloaded');
      return true;
    } catch (err) {
      log.warn(
        { err: (err as Error).message },
        'TLS certificate changed but could not be loaded; keeping the previous one',
      );
      return false;
    }
  };
  const interval = opts.tlsReloadIntervalMs ?? 2000;
  const onChange = (cur: { mtimeMs: number; ino: number }, prev: { mtimeMs: number; ino: number }): void => {
    if (cur.mtimeMs !== prev.mtimeMs || cur.ino !== prev.ino) reloadTls();
  };
  watchFile(opts.certFile, { interval, persistent: false }, onChange);
  watchFile(opts.keyFile, { interval, persistent: false }, onChange);

  return {
    app,
    reloadTls,
    async listen(host, port) {
      await app.listen({ host, port });
      return (app.server.address() as { port: number }).port;
    },
    async close() {
      unwatchFile(opts.certFile, onChange);
      unwatchFile(opts.keyFile, onChange);
      await app.close();
    },
  };
}
