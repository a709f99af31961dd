#!/usr/bin/env node
// minimesh-identity: its flags and wiring (trust anchors + issuer → TokenReview client → gRPC + admin
// servers); the skeleton (@minimesh/runtime defineProgram) does the rest.
import { MINIMESH_VERSION, parseDuration } from '@minimesh/config';
import { kubeClientFromFlags, kubeFlags, parseKubeFlags } from '@minimesh/kube';
import { createRegistry, defineProgram, parseListenAddr, startAdminServer, UsageError } from '@minimesh/runtime';
import { isIssuerScheme, readTrustAnchors, ISSUER_SCHEMES, type Issuer } from './ca/issuer.js';
import {
  createSigningPool,
  parseCertifyWorkers,
  MAX_AUTO_CERTIFY_WORKERS,
  MAX_CERTIFY_WORKERS,
} from './ca/signing-pool.js';
import { createCertifier } from './certifier.js';
import { createIssuerWatcher } from './issuer-watcher.js';
import { startApiProbe } from './k8s/api-probe.js';
import { createKubeTokenReviewer } from './k8s/token-reviewer.js';
import { createIdentityMetrics } from './metrics.js';
import { DEFAULT_CERTIFY_CONCURRENCY, DEFAULT_LISTEN_BACKLOG, startIdentityServer } from './server/identity-server.js';

await defineProgram({
  name: 'minimesh-identity',
  summary: 'the mesh certificate authority: Certify after a TokenReview',
  version: MINIMESH_VERSION,
  // Young generation 2 × 2 MiB, old generation 30 % over live: RSS under Certify load (docs/identity.md).
  heap: { maxSemiSpaceMb: 2, heapGrowingPercent: 30 },
  flags: {
    addr: { type: 'string', default: '0.0.0.0:8080', description: 'gRPC listen address (Certify, reflection, health)' },
    'admin-addr': {
      type: 'string',
      default: '0.0.0.0:9990',
      description: 'admin listen address (/live, /ready, /metrics)',
    },
    'issuer-dir': {
      type: 'string',
      default: '/var/run/minimesh/identity/issuer',
      description: 'directory holding the issuer certificate and key (watched for changes)',
    },
    'issuer-scheme': {
      type: 'string',
      default: 'minimesh.io/tls',
      description: `issuer file names: ${Object.entries(ISSUER_SCHEMES)
        .map(([s, f]) => `${s} (${f.cert}, ${f.key})`)
        .join(' or ')}`,
    },
    'trust-anchors': {
      type: 'string',
      default: '/var/run/minimesh/identity/trust-roots/ca-bundle.crt',
      description: 'PEM bundle of trust anchors the issuer must chain to',
    },
    'trust-domain': { type: 'string', default: 'cluster.local', description: 'trust domain of issued identities' },
    'controller-namespace': {
      type: 'string',
      default: 'minimesh',
      description: 'control-plane namespace (part of every identity)',
    },
    'issuance-lifetime': { type: 'string', default: '24h', description: 'lifetime of issued leaves' },
    'clock-skew-allowance': {
      type: 'string',
      default: '20s',
      description: 'added before NotBefore and after NotAfter',
    },
    'token-audience': {
      type: 'string',
      default: 'identity.minimesh.io',
      description: 'audience a proxy token must carry (TokenReview spec.audiences)',
    },
    'certify-concurrency': {
      type: 'string',
      default: String(DEFAULT_CERTIFY_CONCURRENCY),
      description:
        'Certify calls at work at once; the rest wait in arrival order, so a restart storm does not starve new connections (docs/identity.md)',
    },
    'listen-backlog': {
      type: 'string',
      default: String(DEFAULT_LISTEN_BACKLOG),
      description:
        'backlog of the gRPC listen socket (capped by net.core.somaxconn): connections of a restart storm the kernel holds until identity accepts them (docs/identity.md)',
    },
    'certify-workers': {
      type: 'string',
      default: '0',
      description: `worker threads for Certify's CSR check and signing: 0 (on the main thread) to ${MAX_CERTIFY_WORKERS}, or auto (one per core beyond the first, at most ${MAX_AUTO_CERTIFY_WORKERS}); not shown to help a restart storm on 2 cores (docs/identity.md)`,
    },
    // Linkerd's identity defaults to 100/200, which caps it at 100 certificates/s: ours leaves the API server room to say 429.
    ...kubeFlags({ qps: 1000, burst: 2000 }),
  },
  configure({ flags: f }) {
    const scheme = f['issuer-scheme'];
    if (!isIssuerScheme(scheme))
      throw new UsageError(
        `--issuer-scheme: "${scheme}" is not valid: expected ${Object.keys(ISSUER_SCHEMES).join(' or ')}`,
      );
    parseListenAddr('--addr', f.addr);
    parseListenAddr('--admin-addr', f['admin-addr']);
    parseKubeFlags(f);
    const lifetime = parseDuration('--issuance-lifetime', f['issuance-lifetime']);
    const clockSkew = parseDuration('--clock-skew-allowance', f['clock-skew-allowance']);
    if (lifetime <= 0)
      throw new UsageError(
        `--issuance-lifetime: "${f['issuance-lifetime']}" is not valid: expected a positive duration such as 24h`,
      );
    for (const flag of ['trust-domain', 'controller-namespace', 'token-audience'] as const) {
      if (f[flag].trim() === '') throw new UsageError(`--${flag}: "" is not valid: expected a non-empty value`);
    }
    const concurrency = Number(f['certify-concurrency']);
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new UsageError(
        `--certify-concurrency: "${f['certify-concurrency']}" is not valid: expected a whole number >= 1`,
      );
    const backlog = Number(f['listen-backlog']);
    if (!Number.isInteger(backlog) || backlog < 1 || backlog > 65535)
      throw new UsageError(
        `--listen-backlog: "${f['listen-backlog']}" is not valid: expected a whole number from 1 to 65535`,
      );
    let workers: number;
    try {
      workers = parseCertifyWorkers(f['certify-workers']);
    } catch (err) {
      throw new UsageError(`--certify-workers: ${(err as Error).message}`);
    }
    return { scheme, lifetime, clockSkew, concurrency, workers, backlog };
  },
  async run({ flags: f, config, logger }) {
    const registry = createRegistry();
    const anchors = await readTrustAnchors(f['trust-anchors']);
    const loaded: { watcher?: { current(): Issuer } } = {};
    const metrics = createIdentityMetrics(registry, () => loaded.watcher?.current());
    const watcher = await createIssuerWatcher({
      dir: f['issuer-dir'],
      scheme: config.scheme,
      anchors,
      logger: logger.child({ component: 'issuer-watcher' }),
      metrics,
    });
    loaded.watcher = watcher;
    const issuerValid = (): boolean => watcher.current().notAfter.getTime() > Date.now();

    // One HTTP/2 connection carries every TokenReview and /version probe (docs/identity.md, "The API
    // server connection").
    const kube = await kubeClientFromFlags(f, { userAgent: `minimesh-identity/${MINIMESH_VERSION}` });
    const reviewer = createKubeTokenReviewer({ client: kube, audience: f['token-audience'] });
    const probe = startApiProbe({ probe: () => reviewer.probe(), logger: logger.child({ component: 'api-probe' }) });
    // The CSR check and the signing on worker threads; the main thread keeps the connections.
    const pool =
      config.workers > 0
        ? await createSigningPool({
            size: config.workers,
            onWorkerExit: (w) =>
              logger.warn(
                { threadId: w.threadId, failedCalls: w.failedCalls, replaced: w.replaced },
                `certify worker thread ended: ${w.reason}`,
              ),
          })
        : undefined;
    logger.info({ workers: config.workers }, 'certify worker threads');
    const certifier = createCertifier({
      issuer: () => watcher.current(),
      reviewer: {
        review: async (token) => {
          const r = await reviewer.review(token);
          probe.markReachable();
          return r;
        },
      },
      trustDomain: f['trust-domain'],
      controllerNamespace: f['controller-namespace'],
      lifetime: config.lifetime,
      clockSkew: config.clockSkew,
      ...(pool ? { crypto: pool } : {}),
    });
    const grpcServer = await startIdentityServer({
      addr: f.addr,
      certifier,
      logger: logger.child({ component: 'certify' }),
      metrics,
      serving: issuerValid,
      concurrency: config.concurrency,
      listenBacklog: config.backlog,
    });
    const healthTimer = setInterval(() => grpcServer.refreshHealth(), 5_000);
    const admin = await startAdminServer({
      addr: f['admin-addr'],
      logger,
      registry,
      ready: () =>
        !issuerValid() ? 'the issuer has expired' : !probe.reachable() ? 'the API server is not reachable' : true,
    });

    return {
      async close() {
        clearInterval(healthTimer);
        probe.stop();
        watcher.close();
        await Promise.all([grpcServer.close(), admin.close()]);
        await Promise.all([kube.close(), pool?.close()]);
      },
    };
  },
}).start();
