// The gRPC edge: io.linkerd.proxy.identity.Identity/Certify, server reflection and grpc.health.v1.
// The only module that knows gRPC status codes.
import * as grpc from '@grpc/grpc-js';
import { createServer, type Server as NetServer } from 'node:net';
import { HealthImplementation, identity, protoDir } from '@minimesh/proto';
import { parseListenAddr, type Logger } from '@minimesh/runtime';
import type { Certifier } from '../certifier.js';
import { isIdentityError, type IdentityErrorCode } from '../errors.js';
import type { CertifyResult, IdentityMetrics } from '../metrics.js';
import { createCertifyQueue, type CertifyQueue } from './certify-queue.js';
import { addLazyReflection } from './reflection.js';

export const IDENTITY_SERVICE_NAME = 'io.linkerd.proxy.identity.Identity';

const STATUS: Record<IdentityErrorCode, [grpc.status, CertifyResult]> = {
  MINIMESH_IDENTITY_ISSUER_UNAVAILABLE: [grpc.status.UNAVAILABLE, 'unavailable'],
  MINIMESH_IDENTITY_ISSUER_INVALID: [grpc.status.UNAVAILABLE, 'unavailable'],
  MINIMESH_IDENTITY_TRUST_ANCHORS_INVALID: [grpc.status.UNAVAILABLE, 'unavailable'],
  MINIMESH_IDENTITY_KUBECONFIG_INVALID: [grpc.status.UNAVAILABLE, 'unavailable'],
  MINIMESH_IDENTITY_REQUEST_INCOMPLETE: [grpc.status.INVALID_ARGUMENT, 'invalid_argument'],
  MINIMESH_IDENTITY_CSR_INVALID: [grpc.status.INVALID_ARGUMENT, 'invalid_argument'],
  MINIMESH_IDENTITY_TOKEN_UNAUTHENTICATED: [grpc.status.UNAUTHENTICATED, 'unauthenticated'],
  MINIMESH_IDENTITY_IDENTITY_MISMATCH: [grpc.status.PERMISSION_DENIED, 'permission_denied'],
  // The API server could not be asked: the caller should retry later.
  MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED: [grpc.status.UNAVAILABLE, 'unavailable'],
  MINIMESH_IDENTITY_SIGN_FAILED: [grpc.status.INTERNAL, 'internal'],
  // A worker thread ended mid-call; it is replaced, so the caller should retry.
  MINIMESH_IDENTITY_WORKER_FAILED: [grpc.status.UNAVAILABLE, 'unavailable'],
};

/** The gRPC status and metric label for an error thrown by the certifier. */
export function toGrpcStatus(err: unknown): { code: grpc.status; result: CertifyResult; message: string } {
  if (isIdentityError(err)) {
    const [code, result] = STATUS[err.code];
    return { code, result, message: err.message };
  }
  return { code: grpc.status.INTERNAL, result: 'internal', message: 'internal error' };
}

export interface IdentityServerOptions {
  certifier: Certifier;
  logger: Logger;
  metrics?: IdentityMetrics;
  /** Whether Certify can currently succeed (an issuer is loaded); drives grpc.health.v1. */
  serving?: () => boolean;
  /** Certify calls at work at once; the rest wait in arrival order (default 16; ./certify-queue.ts). */
  concurrency?: number;
  /**
   * The listen socket's backlog: connections the kernel completes and holds until identity accepts them
   * (default 4096; the kernel caps it at net.core.somaxconn). Node's own default, 511, is what a restart
   * storm overflowed: every SYN past it is dropped and the caller's 1 s connect timeout fires first.
   */
  listenBacklog?: number;
}

/** The listen backlog by default (net.core.somaxconn's default since Linux 5.4). */
export const DEFAULT_LISTEN_BACKLOG = 4096;

/** Certify calls at work at once by default: enough to keep TokenReviews of a few ms each in flight. */
export const DEFAULT_CERTIFY_CONCURRENCY = 16;

export interface IdentityServer {
  server: grpc.Server;
  /** Bound port. */
  port: number;
  /** Re-reads serving() into the health service. */
  refreshHealth(): void;
  close(): Promise<void>;
}

function createCertifyHandler(
  opts: IdentityServerOptions,
  queue: CertifyQueue,
): grpc.handleUnaryCall<identity.CertifyRequest, identity.CertifyResponse> {
  const log = opts.logger;
  return (call, callback) => {
    const started = process.hrtime.bigint();
    const req = call.request;
    const done = (result: CertifyResult): void => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      opts.metrics?.certifyRequests.inc({ result });
      opts.metrics?.certifyDuration.observe({ result }, seconds);
    };
    const work = queue.run(
      () => {
        opts.metrics?.certifyQueued.set(queue.queued);
        return opts.certifier.certify({ identity: req.identity, token: req.token, csr: req.certificateSigningRequest });
      },
      () => call.cancelled,
    );
    opts.metrics?.certifyQueued.set(queue.queued);
    work.then(
      (out) => {
        if (out === undefined) {
          // The client went away while the call waited: nothing to answer, nothing was done.
          done('cancelled');
          callback({ code: grpc.status.CANCELLED, details: 'the client cancelled the call while it waited' });
          return;
        }
        done('ok');
        if (log.isLevelEnabled('debug'))
          log.debug(
            { identity: req.identity, serial: out.serial.toString('hex'), validUntil: out.validUntil.toISOString() },
            'certified',
          );
        callback(null, { leafCertificate: out.leaf, intermediateCertificates: out.chain, validUntil: out.validUntil });
      },
      (err: unknown) => {
        const { code, result, message } = toGrpcStatus(err);
        done(result);
        // Refusals are the caller's problem (debug); failures on our side are warnings.
        const level = result === 'internal' || result === 'unavailable' ? 'warn' : 'debug';
        log[level](
          {
            identity: req.identity,
            code: isIdentityError(err) ? err.code : undefined,
            err: isIdentityError(err) ? undefined : err,
          },
          `certify refused: ${message}`,
        );
        callback({ code, details: message });
      },
    );
  };
}

/** Builds the gRPC server and binds it (insecure: the identity pod's own proxy terminates TLS, as in Linkerd). */
export async function startIdentityServer(opts: IdentityServerOptions & { addr: string }): Promise<IdentityServer> {
  // No channelz: its per-connection bookkeeping is CPU on the one thread that must answer every new
  // connection's HTTP/2 preface during a restart storm (nothing reads channelz here).
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  const queue = createCertifyQueue({ concurrency: opts.concurrency ?? DEFAULT_CERTIFY_CONCURRENCY });
  server.addService(identity.IdentityService, { certify: createCertifyHandler(opts, queue) });
  // identity.proto and health.proto from @minimesh/proto, loaded on the first reflection request.
  addLazyReflection(server, {
    protoFiles: ['identity.proto', 'health.proto'],
    includeDirs: [protoDir],
    services: [IDENTITY_SERVICE_NAME, 'grpc.health.v1.Health'],
  });
  const health = new HealthImplementation({ '': 'NOT_SERVING', [IDENTITY_SERVICE_NAME]: 'NOT_SERVING' });
  health.addToServer(server);
  const refreshHealth = (): void => {
    const s = (opts.serving?.() ?? true) ? 'SERVING' : 'NOT_SERVING';
    health.setStatus('', s);
    health.setStatus(IDENTITY_SERVICE_NAME, s);
  };
  refreshHealth();
  // Our own listener, so that its backlog is ours to set (grpc-js listens with Node's 511), handing
  // each connection to the gRPC server.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const listener: NetServer = createServer({ noDelay: true }, (socket) => injector.injectConnection(socket));
  const { host, port: wanted } = parseListenAddr('addr', opts.addr);
  const port = await new Promise<number>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen({ host, port: wanted, backlog: opts.listenBacklog ?? DEFAULT_LISTEN_BACKLOG }, () => {
      listener.off('error', reject);
      resolve((listener.address() as { port: number }).port);
    });
  });
  opts.logger.info({ addr: opts.addr, port }, 'identity gRPC server listening');
  return {
    server,
    port,
    refreshHealth,
    close: () =>
      new Promise<void>((resolve) => {
        listener.close();
        const timer = setTimeout(() => {
          injector.destroy();
          server.forceShutdown();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          injector.destroy();
          resolve();
        });
      }),
  };
}
