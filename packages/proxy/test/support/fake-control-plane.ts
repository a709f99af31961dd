// In-process fakes of identity and destination speaking the real proto (@minimesh/proto), for unit and
// loopback tests and the benchmark. The netns integration test uses the real programs instead.
import {
  Server,
  ServerCredentials,
  status,
  type ServerWritableStream,
  type sendUnaryData,
  type ServerUnaryCall,
} from '@grpc/grpc-js';
import { destination, identity, toTcpAddress } from '@minimesh/proto';
import type { TestPki } from './pki.js';

export interface FakeEndpoint {
  ip: string;
  port: number;
  identity?: string;
  labels?: Record<string, string>;
}

export class FakeDestination {
  readonly services = new Map<string, FakeEndpoint[]>();
  /** ip:port → profile */
  readonly profiles = new Map<
    string,
    { fullyQualifiedName?: string; endpoint?: FakeEndpoint; opaqueProtocol?: boolean }
  >();
  readonly getCalls: string[] = [];
  readonly profileCalls: string[] = [];
  private readonly streams = new Map<
    string,
    Set<ServerWritableStream<destination.GetDestination, destination.Update>>
  >();
  activeStreams = 0;

  static toWeighted(e: FakeEndpoint): destination.WeightedAddr {
    return {
      addr: toTcpAddress(e.ip, e.port),
      weight: 10000,
      metricLabels: e.labels ?? {},
      tlsIdentity: e.identity
        ? { strategy: { $case: 'dnsLikeIdentity', value: { name: e.identity } }, serverName: { name: e.identity } }
        : undefined,
      protocolHint: e.identity ? { protocol: { $case: 'h2', value: {} } } : undefined,
    };
  }

  /** Replaces a service's endpoints and streams the difference to watchers. */
  set(authority: string, eps: FakeEndpoint[]): void {
    const old = this.services.get(authority) ?? [];
    this.services.set(authority, eps);
    const key = (e: FakeEndpoint) => `${e.ip}:${e.port}`;
    const removed = old.filter((o) => !eps.some((e) => key(e) === key(o)));
    for (const s of this.streams.get(authority) ?? []) {
      if (removed.length > 0)
        s.write({ update: { $case: 'remove', value: { addrs: removed.map((e) => toTcpAddress(e.ip, e.port)) } } });
      if (eps.length > 0)
        s.write({
          update: {
            $case: 'add',
            value: { addrs: eps.map(FakeDestination.toWeighted), metricLabels: { namespace: 'default' } },
          },
        });
    }
  }

  implementation(): destination.DestinationServer {
    return {
      get: (call: ServerWritableStream<destination.GetDestination, destination.Update>) => {
        const path = call.request.path;
        this.getCalls.push(path);
        const eps = this.services.get(path);
        if (!eps) {
          call.emit('error', { code: status.NOT_FOUND, details: `no service ${path}` });
          return;
        }
        this.activeStreams++;
        let set = this.streams.get(path);
        if (!set) this.streams.set(path, (set = new Set()));
        set.add(call);
        call.on('cancelled', () => {
          this.activeStreams--;
          set?.delete(call);
        });
        if (eps.length > 0)
          call.write({
            update: {
              $case: 'add',
              value: { addrs: eps.map(FakeDestination.toWeighted), metricLabels: { namespace: 'default' } },
            },
          });
        else call.write({ update: { $case: 'noEndpoints', value: { exists: true } } });
      },
      getProfile: (call: ServerWritableStream<destination.GetDestination, destination.DestinationProfile>) => {
        const path = call.request.path;
        this.profileCalls.push(path);
        const p = this.profiles.get(path);
        call.write({
          routes: [],
          dstOverrides: [],
          opaqueProtocol: p?.opaqueProtocol ?? false,
          fullyQualifiedName: p?.fullyQualifiedName ?? '',
          endpoint: p?.endpoint ? FakeDestination.toWeighted(p.endpoint) : undefined,
        });
      },
    };
  }
}

export class FakeIdentity {
  calls = 0;
  failNext = 0;
  tokens: string[] = [];
  constructor(
    private readonly pki: TestPki,
    public lifetimeMs = 86400_000,
  ) {}

  implementation(): identity.IdentityServer {
    return {
      certify: (
        call: ServerUnaryCall<identity.CertifyRequest, identity.CertifyResponse>,
        cb: sendUnaryData<identity.CertifyResponse>,
      ) => {
        this.calls++;
        this.tokens.push(call.request.token.toString());
        if (this.failNext > 0) {
          this.failNext--;
          cb({ code: status.UNAVAILABLE, details: 'injected failure' });
          return;
        }
        this.pki.sign(call.request.certificateSigningRequest, call.request.identity, this.lifetimeMs).then(
          (r) => cb(null, { leafCertificate: r.leaf, intermediateCertificates: r.chain, validUntil: r.notAfter }),
          (err: Error) => cb({ code: status.INVALID_ARGUMENT, details: err.message }),
        );
      },
    };
  }
}

export interface FakeControlPlane {
  destination: FakeDestination;
  identity: FakeIdentity;
  /** "127.0.0.1:port" */
  addr: string;
  server: Server;
  close(): Promise<void>;
}

export async function startFakeControlPlane(pki: TestPki, opts: { bind?: string } = {}): Promise<FakeControlPlane> {
  const dst = new FakeDestination();
  const id = new FakeIdentity(pki);
  const server = new Server();
  server.addService(destination.DestinationService, dst.implementation());
  server.addService(identity.IdentityService, id.implementation());
  const bind = opts.bind ?? '127.0.0.1:0';
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(bind, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    destination: dst,
    identity: id,
    addr: bind.startsWith('unix:') ? bind : `127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      }),
  };
}
