#!/usr/bin/env node
// minimesh-injector: its flags and wiring (config → TLS → namespace informer → admin → HTTPS webhook);
// the skeleton (@minimesh/runtime defineProgram) does the rest.
import { MINIMESH_VERSION } from '@minimesh/config';
import { kubeClientFromFlags, kubeFlags, parseKubeFlags } from '@minimesh/kube';
import { createRegistry, defineProgram, parseListenAddr, startAdminServer, UsageError } from '@minimesh/runtime';
import { InjectorError } from './errors.js';
import { createNamespaceLookup } from './k8s/namespace-lookup.js';
import { loadMeshConfig } from './load-config.js';
import { createWebhookMetrics } from './webhook/webhook-metrics.js';
import { createWebhookServer } from './webhook/webhook-server.js';

await defineProgram({
  name: 'minimesh-injector',
  summary: 'the mutating admission webhook that adds proxy-init and the proxy to pods that ask for the mesh',
  version: MINIMESH_VERSION,
  // Young generation 2 × 2 MiB, old generation 30 % over live (as destination and identity).
  heap: { maxSemiSpaceMb: 2, heapGrowingPercent: 30 },
  flags: {
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
    ...kubeFlags(),
  },
  configure({ flags: f }) {
    if (!f['tls-cert'] || !f['tls-key'])
      throw new UsageError('--tls-cert and --tls-key are required: the API server only calls webhooks over HTTPS');
    const addr = parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    parseKubeFlags(f);
    return { addr, mesh: loadMeshConfig(f.config) };
  },
  async run({ flags: f, config: { addr, mesh }, logger }) {
    const registry = createRegistry();
    const metrics = createWebhookMetrics(registry);
    // Load the certificate before anything listens, so a bad pair exits at once.
    let server;
    try {
      server = await createWebhookServer({
        certFile: f['tls-cert'],
        keyFile: f['tls-key'],
        config: () => mesh,
        // Called only once the server listens, after the lookup below exists.
        namespaceAnnotations: (ns) => namespaces.annotations(ns),
        logger: logger.child({ component: 'webhook' }),
        metrics,
      });
    } catch (err) {
      if (err instanceof InjectorError && err.code === 'MINIMESH_INJECTOR_TLS')
        throw new UsageError(err.message, { cause: err });
      throw err;
    }
    const kube = await kubeClientFromFlags(f, { userAgent: `minimesh-injector/${MINIMESH_VERSION}` }).catch(
      async (err: unknown) => {
        await server.close();
        throw err;
      },
    );
    const namespaces = createNamespaceLookup({ client: kube, logger: logger.child({ component: 'namespaces' }) });
    namespaces.start();

    let listening = false;
    let admin;
    try {
      admin = await startAdminServer({
        addr: f['admin-addr'],
        logger,
        registry,
        ready: () => (listening ? true : 'webhook not listening yet'),
      });
    } catch (err) {
      await Promise.allSettled([server.close(), namespaces.stop(), kube.close()]);
      throw new UsageError(`--admin-addr ${f['admin-addr']}: cannot listen: ${(err as Error).message}`, { cause: err });
    }
    let port: number;
    try {
      port = await server.listen(addr.host, addr.port);
    } catch (err) {
      await Promise.allSettled([server.close(), admin.close(), namespaces.stop(), kube.close()]);
      throw new UsageError(`--addr ${f.addr}: cannot listen: ${(err as Error).message}`, { cause: err });
    }
    listening = true;
    logger.info(
      {
        addr: `${addr.host}:${port}`,
        controlPlaneNamespace: mesh.controlPlaneNamespace,
        proxyImage: `${mesh.proxy.image.name}:${mesh.proxy.image.version}`,
      },
      'webhook listening',
    );
    return {
      async close() {
        listening = false;
        await server.close();
        await admin.close();
        await namespaces.stop();
        await kube.close();
      },
    };
  },
}).start();
