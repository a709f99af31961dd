#!/usr/bin/env node
// minimesh-tap: viz's tap service. GET /tap streams the live requests of a workload's proxies
// (Tap.Observe on each pod's port 4190, through this pod's own proxy, which dials them over mTLS as this
// pod's identity, the only one the proxies accept). Its flags and wiring; the skeleton does the rest.
import { createServer } from 'node:http';
import { MINIMESH_VERSION } from '@minimesh/config';
import { kubeClientFromFlags, kubeFlags, parseKubeFlags } from '@minimesh/kube';
import { createRegistry, defineProgram, parseListenAddr, startAdminServer, UsageError } from '@minimesh/runtime';
import { createGrpcDialer } from './tap-service/dial.js';
import { createTapService } from './tap-service/tap-service.js';

await defineProgram({
  name: 'minimesh-tap',
  summary:
    "viz's tap service: live requests from the proxies' tap servers, streamed to minimesh viz tap|top and the dashboard",
  version: MINIMESH_VERSION,
  flags: {
    addr: { type: 'string', default: '0.0.0.0:8089', description: 'HTTP listen address (GET /tap)' },
    'admin-addr': {
      type: 'string',
      default: '0.0.0.0:9998',
      description: 'admin listen address (/live, /ready, /metrics)',
    },
    'controller-namespace': {
      type: 'string',
      default: 'minimesh',
      description: 'control-plane namespace (part of every identity)',
    },
    'trust-domain': { type: 'string', default: 'cluster.local', description: 'trust domain of the identities' },
    'max-limit': {
      type: 'string',
      default: '10000',
      description: 'the largest number of requests a tap may ask of each proxy',
    },
    'tap-port': { type: 'string', default: '4190', description: "the proxies' tap (control) port" },
    ...kubeFlags(),
  },
  configure({ flags: f }) {
    const addr = parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    parseKubeFlags(f);
    const maxLimit = Number(f['max-limit']);
    if (!Number.isInteger(maxLimit) || maxLimit < 1)
      throw new UsageError(`--max-limit: "${f['max-limit']}" is not valid: expected a whole number of at least 1`);
    const tapPort = Number(f['tap-port']);
    if (!Number.isInteger(tapPort) || tapPort < 1 || tapPort > 65535)
      throw new UsageError(`--tap-port: "${f['tap-port']}" is not valid: expected a port (1 to 65535)`);
    for (const flag of ['trust-domain', 'controller-namespace'] as const)
      if (f[flag].trim() === '') throw new UsageError(`--${flag}: "" is not valid: expected a non-empty value`);
    return { addr, maxLimit, tapPort };
  },
  async run({ flags: f, config, logger }) {
    const kube = await kubeClientFromFlags(f, { userAgent: `minimesh-tap/${MINIMESH_VERSION}` });
    const log = logger.child({ component: 'tap' });
    const handle = createTapService({
      kube,
      dial: createGrpcDialer({ port: config.tapPort }),
      controlPlaneNamespace: f['controller-namespace'],
      trustDomain: f['trust-domain'],
      maxLimit: config.maxLimit,
      log,
    });
    const server = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.addr.port, config.addr.host, resolve);
    });
    log.info({ addr: f.addr }, 'tap service listening');
    const admin = await startAdminServer({
      addr: f['admin-addr'],
      logger,
      registry: createRegistry(),
      ready: () => true,
    });
    return {
      async close() {
        server.closeAllConnections();
        await new Promise<void>((r) => server.close(() => r()));
        await admin.close();
        await kube.close();
      },
    };
  },
}).start();
