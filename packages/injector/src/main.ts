#!/usr/bin/env node
// minimesh-injector: wiring only. flags → logger → config → namespace watch → admin → HTTPS webhook.
import { KubeConfig } from '@kubernetes/client-node';
import {
  createLogger,
  createRegistry,
  parseFlags,
  parseListenAddr,
  runMain,
  startAdminServer,
  UsageError,
} from '@minimesh/runtime';
import { InjectorError } from './errors.js';
import { createNamespaceWatcher } from './k8s/namespace-watcher.js';
import { loadMeshConfig } from './load-config.js';
import { createWebhookMetrics } from './webhook/webhook-metrics.js';
import { createWebhookServer } from './webhook/webhook-server.js';

const info = {
  name: 'minimesh-injector',
  summary: 'the mutating admission webhook that adds proxy-init and the proxy to pods that ask for the mesh',
};

const flags = {
  addr: { type: 'string', default: '0.0.0.0:8443', description: 'HTTPS address of the webhook' },
  'admin-addr': { type: 'string', default: '0.0.0.0:9995', description: 'address of /live, /ready and /metrics' },
  'tls-cert': {
    type: 'string',
    description: 'PEM certificate of the webhook (reloaded when the file changes); required',
  },
  'tls-key': {
    type: 'string',
    description: 'PEM private key of the webhook (reloaded when the file changes); required',
  },
  config: {
    type: 'string',
    description: 'mesh configuration file (JSON or YAML, as the chart renders it); defaults when absent',
  },
  kubeconfig: {
    type: 'string',
    description: 'kubeconfig for the namespace watch; else $KUBECONFIG, in-cluster, ~/.kube/config',
  },
  'log-level': { type: 'string', default: 'info', description: 'trace, debug, info, warn, error' },
  'log-format': { type: 'string', default: 'plain', description: 'plain or json' },
} as const;

async function main(argv: string[]): Promise<void> {
  const parsed = parseFlags(info, flags, argv);
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return;
  }
  const f = parsed.values;
  if (parsed.positionals.length > 0)
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}" (see --help)`);
  if (!f['tls-cert'] || !f['tls-key'])
    throw new UsageError('--tls-cert and --tls-key are required: the API server only calls webhooks over HTTPS');
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(f['log-level'])) {
    throw new UsageError(`--log-level: "${f['log-level']}" is not valid: expected trace, debug, info, warn or error`);
  }
  if (f['log-format'] !== 'plain' && f['log-format'] !== 'json') {
    throw new UsageError(`--log-format: "${f['log-format']}" is not valid: expected plain or json`);
  }
  let addr: { host: string; port: number };
  try {
    addr = parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  let config;
  try {
    config = loadMeshConfig(f.config);
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }

  const logger = createLogger({ name: 'minimesh-injector', level: f['log-level'], format: f['log-format'] });
  const kubeConfig = new KubeConfig();
  // --kubeconfig, else $KUBECONFIG, else in-cluster when running in a pod, else ~/.kube/config.
  if (f.kubeconfig) {
    try {
      kubeConfig.loadFromFile(f.kubeconfig);
    } catch (err) {
      throw new UsageError(`--kubeconfig: cannot load ${f.kubeconfig}: ${(err as Error).message.split('\n')[0]}`, {
        cause: err,
      });
    }
  } else if (!process.env.KUBECONFIG && process.env.KUBERNETES_SERVICE_HOST) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();

  const registry = createRegistry();
  const metrics = createWebhookMetrics(registry);
  // Load the certificate before anything listens or watches, so a bad pair exits at once.
  let server;
  try {
    server = await createWebhookServer({
      certFile: f['tls-cert'],
      keyFile: f['tls-key'],
      config: () => config,
      // Called only once the server listens, after the watcher below exists.
      namespaceAnnotations: (ns) => watcher.annotations(ns),
      logger: logger.child({ component: 'webhook' }),
      metrics,
    });
  } catch (err) {
    if (err instanceof InjectorError && err.code === 'MINIMESH_INJECTOR_TLS')
      throw new UsageError(err.message, { cause: err });
    throw err;
  }
  const watcher = await createNamespaceWatcher({ kubeConfig, logger: logger.child({ component: 'namespace-watch' }) });
  void watcher.start();

  let listening = false;
  let admin;
  try {
    admin = await startAdminServer({
      addr: f['admin-addr'],
      logger,
      registry,
      ready: () => (!listening ? 'webhook not listening yet' : watcher.synced() ? true : 'namespace cache not synced'),
    });
  } catch (err) {
    await Promise.allSettled([server.close(), watcher.stop()]);
    throw new UsageError(`--admin-addr ${f['admin-addr']}: cannot listen: ${(err as Error).message}`, { cause: err });
  }
  let port: number;
  try {
    port = await server.listen(addr.host, addr.port);
  } catch (err) {
    await Promise.allSettled([server.close(), watcher.stop(), admin.close()]);
    throw new UsageError(`--addr ${f.addr}: cannot listen: ${(err as Error).message}`, { cause: err });
  }
  listening = true;
  logger.info(
    {
      addr: `${addr.host}:${port}`,
      controlPlaneNamespace: config.controlPlaneNamespace,
      proxyImage: `${config.proxy.image.name}:${config.proxy.image.version}`,
    },
    'webhook listening',
  );

  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  listening = false;
  await server.close();
  await watcher.stop();
  await admin.close();
}

void runMain('minimesh-injector', main);
