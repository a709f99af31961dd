#!/usr/bin/env node
// minimesh-identity: wiring only. Flags → logger → trust anchors + issuer → TokenReview client → gRPC + admin servers.
import { ConfigError, parseDuration, parseLogFormat, parseLogLevel } from '@minimesh/config';
import {
  createLogger,
  createRegistry,
  ListenAddrError,
  parseFlags,
  parseListenAddr,
  runMain,
  startAdminServer,
  UsageError,
} from '@minimesh/runtime';
import { isIssuerScheme, readTrustAnchors, ISSUER_SCHEMES, type Issuer } from './ca/issuer.js';
import { createCertifier } from './certifier.js';
import { createIssuerWatcher } from './issuer-watcher.js';
import { startApiProbe } from './k8s/api-probe.js';
import { createKubeTokenReviewer, loadKubeConfig } from './k8s/token-reviewer.js';
import { createIdentityMetrics } from './metrics.js';
import { startIdentityServer } from './server/identity-server.js';

const NAME = 'minimesh-identity';

const FLAGS = {
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
  'clock-skew-allowance': { type: 'string', default: '20s', description: 'added before NotBefore and after NotAfter' },
  'token-audience': {
    type: 'string',
    default: 'identity.minimesh.io',
    description: 'audience a proxy token must carry (TokenReview spec.audiences)',
  },
  kubeconfig: {
    type: 'string',
    default: '',
    description: 'kubeconfig file (in-cluster service-account config when absent)',
  },
  'log-level': { type: 'string', default: 'info', description: 'trace, debug, info, warn, error' },
  'log-format': { type: 'string', default: 'plain', description: 'plain or json' },
} as const;

function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ConfigError || err instanceof ListenAddrError)
      throw new UsageError(`${err.message} (see ${NAME} --help)`, { cause: err });
    throw err;
  }
}

async function main(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    { name: NAME, summary: 'the mesh certificate authority: Certify after a TokenReview' },
    FLAGS,
    argv,
  );
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return 0;
  }
  const f = parsed.values;
  const scheme = f['issuer-scheme'];
  if (!isIssuerScheme(scheme))
    throw new UsageError(
      `--issuer-scheme: "${scheme}" is not valid: expected ${Object.keys(ISSUER_SCHEMES).join(' or ')}`,
    );
  usage(() => parseListenAddr('--addr', f.addr));
  usage(() => parseListenAddr('--admin-addr', f['admin-addr']));
  const lifetime = usage(() => parseDuration('--issuance-lifetime', f['issuance-lifetime']));
  const clockSkew = usage(() => parseDuration('--clock-skew-allowance', f['clock-skew-allowance']));
  const level = usage(() => parseLogLevel('--log-level', f['log-level']));
  const format = usage(() => parseLogFormat('--log-format', f['log-format']));
  if (lifetime <= 0)
    throw new UsageError(
      `--issuance-lifetime: "${f['issuance-lifetime']}" is not valid: expected a positive duration such as 24h`,
    );
  for (const flag of ['trust-domain', 'controller-namespace', 'token-audience'] as const) {
    if (f[flag].trim() === '') throw new UsageError(`--${flag}: "" is not valid: expected a non-empty value`);
  }

  const logger = createLogger({ name: 'identity', level, format });
  const registry = createRegistry();
  const anchors = await readTrustAnchors(f['trust-anchors']);
  const loaded: { watcher?: { current(): Issuer } } = {};
  const metrics = createIdentityMetrics(registry, () => loaded.watcher?.current());
  const watcher = await createIssuerWatcher({
    dir: f['issuer-dir'],
    scheme,
    anchors,
    logger: logger.child({ component: 'issuer-watcher' }),
    metrics,
  });
  loaded.watcher = watcher;
  const issuerValid = (): boolean => watcher.current().notAfter.getTime() > Date.now();

  const kubeConfig = loadKubeConfig(f.kubeconfig || undefined);
  const reviewer = createKubeTokenReviewer({ kubeConfig, audience: f['token-audience'] });
  const probe = startApiProbe({ probe: () => reviewer.probe(), logger: logger.child({ component: 'api-probe' }) });
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
    lifetime,
    clockSkew,
  });
  const grpcServer = await startIdentityServer({
    addr: f.addr,
    certifier,
    logger: logger.child({ component: 'certify' }),
    metrics,
    serving: issuerValid,
  });
  const healthTimer = setInterval(() => grpcServer.refreshHealth(), 5_000);
  const admin = await startAdminServer({
    addr: f['admin-addr'],
    logger,
    registry,
    ready: () =>
      !issuerValid() ? 'the issuer has expired' : !probe.reachable() ? 'the API server is not reachable' : true,
  });

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  logger.info({ signal }, 'shutting down');
  clearInterval(healthTimer);
  probe.stop();
  watcher.close();
  await Promise.all([grpcServer.close(), admin.close()]);
  // Idle keep-alive sockets to the API server must not hold the exit up.
  setTimeout(() => process.exit(0), 200).unref();
  return 0;
}

void runMain(NAME, main);
