// The gRPC services: io.linkerd.proxy.inbound.InboundServerPolicies (GetPort, WatchPort) and
// io.linkerd.proxy.outbound.OutboundPolicies (Get, Watch). The only module that knows gRPC status codes.
// Every message is a whole policy, so a stream that cannot keep up only ever needs the latest one:
// while the client applies back-pressure, newer policies replace the one waiting to be written.
import {
  status,
  type MethodDefinition,
  type sendUnaryData,
  type ServiceDefinition,
  type ServerUnaryCall,
  type ServerWritableStream,
  type StatusObject,
} from '@grpc/grpc-js';
import { fromTcpAddress, inbound, onStreamEnd, outbound } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { PolicyError } from '../errors.js';
import type { PolicyIndex, PolicyListener, Subscription } from '../index/policy-index.js';
import { inClusterNetworks } from '../index/egress.js';
import type { EgressAnswer, InboundServer, OutboundPolicy } from '../model.js';
import type { PolicyMetrics } from '../metrics.js';
import { toProtoServer } from './inbound-translator.js';
import { toFallbackPolicy, toProtoEgress, toProtoOutbound, toUndefinedPortPolicy } from './outbound-translator.js';
import { parseWorkloadRef } from './workload-ref.js';

export interface PolicyServerOptions {
  index: PolicyIndex;
  logger: Logger;
  metrics: PolicyMetrics;
  /** Let l5d-* request headers override route timeouts and retries (Linkerd's --allow-l5d-request-headers). */
  allowL5dRequestHeaders?: boolean;
}

/** Domain errors → gRPC status. */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  if (err instanceof PolicyError) {
    switch (err.code) {
      case 'MINIMESH_POLICY_INVALID_WORKLOAD':
      case 'MINIMESH_POLICY_INVALID_PORT':
      case 'MINIMESH_POLICY_INVALID_TARGET':
        return { code: status.INVALID_ARGUMENT, details: err.message };
      case 'MINIMESH_POLICY_NOT_FOUND':
        return { code: status.NOT_FOUND, details: err.message };
      case 'MINIMESH_POLICY_INVALID_RESOURCE':
      case 'MINIMESH_POLICY_LISTEN':
        return { code: status.UNAVAILABLE, details: err.message };
    }
  }
  return { code: status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new PolicyError('MINIMESH_POLICY_INVALID_PORT', `port ${port}: expected 1-65535`);
  return port;
}

function notFound(message: string): PolicyError {
  return new PolicyError('MINIMESH_POLICY_NOT_FOUND', message);
}

/**
 * A translation made once per answer: the index hands every listener of a watch (every client of a
 * Service, every stream of a port) the same answer object, so they share its message, and with
 * encodeOnce its bytes. The answers are never changed once made (a change is a new answer).
 */
function perAnswer<M extends object, P>(translate: (m: M) => P): (m: M) => P {
  const made = new WeakMap<M, P>();
  return (m) => {
    let p = made.get(m);
    if (p === undefined) made.set(m, (p = translate(m)));
    return p;
  };
}

/**
 * A service definition whose response messages are encoded once per message object: the same message
 * written to many streams (perAnswer) is one protobuf encoding. grpc-js copies the bytes into each
 * frame, so sharing them is safe.
 */
export function encodeOnce<D extends ServiceDefinition>(definition: D): D {
  const out: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition) as Array<[string, MethodDefinition<unknown, unknown>]>) {
    const encoded = new WeakMap<object, Buffer>();
    const encode = method.responseSerialize;
    out[name] = {
      ...method,
      responseSerialize: (value: unknown) => {
        if (typeof value !== 'object' || value === null) return encode(value);
        let bytes = encoded.get(value);
        if (bytes === undefined) encoded.set(value, (bytes = encode(value)));
        return bytes;
      },
    };
  }
  return out as D;
}

/** The services as policy.ts registers them. */
export const INBOUND_SERVICE = encodeOnce(inbound.InboundServerPoliciesService);
export const OUTBOUND_SERVICE = encodeOnce(outbound.OutboundPoliciesService);

/** Writes whole snapshots; under back-pressure only the newest waiting one is kept. */
class LatestWriter<T> {
  private waiting: T | undefined;
  private blocked = false;
  private closed = false;

  constructor(
    private readonly call: ServerWritableStream<unknown, T>,
    private readonly onSent: () => void,
  ) {
    call.on('drain', () => {
      this.blocked = false;
      const next = this.waiting;
      this.waiting = undefined;
      if (next !== undefined) this.write(next);
    });
  }

  write(value: T): void {
    if (this.closed) return;
    if (this.blocked) {
      this.waiting = value;
      return;
    }
    this.onSent();
    if (!this.call.write(value)) this.blocked = true;
  }

  close(): void {
    this.closed = true;
    this.waiting = undefined;
  }
}

interface Streams {
  /** Ends every open stream (shutdown): proxies reconnect to another replica. */
  endAll(): void;
}

/** Starts a watch stream over a subscription; `translate` turns each model value into a message. */
function serveWatch<M, P>(opts: {
  call: ServerWritableStream<unknown, P>;
  method: string;
  log: Logger;
  /** The stream's fields for its debug lines, made only when debug is on (a child logger per stream cost a tenth of opening it). */
  context: () => Record<string, unknown>;
  metrics: PolicyMetrics;
  open: Set<() => void>;
  subscribe: (l: PolicyListener<M>) => Subscription<M> | undefined;
  translate: (m: M) => P;
  notFound: () => PolicyError;
}): void {
  const { call, method, metrics } = opts;
  const debug = (msg: string, fields: Record<string, unknown> = {}) => {
    if (opts.log.isLevelEnabled('debug')) opts.log.debug({ ...opts.context(), ...fields }, msg);
  };
  const writer = new LatestWriter<P>(call, () => metrics.updatesSent.inc({ method }));
  metrics.openStreams.inc({ method });
  // The index calls back only on later changes, after everything below is set up.
  const sub = opts.subscribe({
    update: (m) => writer.write(opts.translate(m)),
    end: (reason) => {
      debug('target gone: ending the stream', { reason });
      endStream();
    },
  });
  const endStream = () => {
    release();
    call.end();
  };
  const release = onStreamEnd(call, () => {
    sub?.close();
    writer.close();
    opts.open.delete(endStream);
    metrics.openStreams.dec({ method });
    debug('stream closed');
  });
  if (!sub) {
    release();
    metrics.requests.inc({ method, code: 'NotFound' });
    call.emit('error', toGrpcStatus(opts.notFound()));
    return;
  }
  metrics.requests.inc({ method, code: 'OK' });
  opts.open.add(endStream);
  debug('stream opened');
  writer.write(opts.translate(sub.current));
}

export function createInboundHandlers(opts: PolicyServerOptions): inbound.InboundServerPoliciesServer & Streams {
  const { index, metrics } = opts;
  const log = opts.logger;
  const networks = index.cluster.networks;
  const open = new Set<() => void>();
  const translate = perAnswer((s: InboundServer) => toProtoServer(s, networks));

  return {
    getPort(call: ServerUnaryCall<inbound.PortSpec, inbound.Server>, callback: sendUnaryData<inbound.Server>): void {
      try {
        const w = parseWorkloadRef(call.request.workload);
        const port = checkPort(call.request.port);
        const result = index.inbound(w.kind, w.namespace, w.name, port);
        if (!result) throw notFound(`${w.kind} ${w.namespace}/${w.name} not found`);
        metrics.requests.inc({ method: 'GetPort', code: 'OK' });
        callback(null, translate(result.server));
      } catch (err) {
        const s = toGrpcStatus(err);
        metrics.requests.inc({ method: 'GetPort', code: codeName(s.code) });
        log.debug(
          { workload: call.request.workload, port: call.request.port, err: (err as Error).message },
          'GetPort failed',
        );
        callback(s as StatusObject);
      }
    },

    watchPort(call: ServerWritableStream<inbound.PortSpec, inbound.Server>): void {
      let w;
      let port: number;
      try {
        w = parseWorkloadRef(call.request.workload);
        port = checkPort(call.request.port);
      } catch (err) {
        metrics.requests.inc({ method: 'WatchPort', code: 'InvalidArgument' });
        call.emit('error', toGrpcStatus(err));
        return;
      }
      const ref = w;
      serveWatch<InboundServer, inbound.Server>({
        call,
        method: 'WatchPort',
        log,
        context: () => ({ method: 'WatchPort', workload: `${ref.namespace}/${ref.name}`, port }),
        metrics,
        open,
        subscribe: (l) => index.watchInbound(ref.kind, ref.namespace, ref.name, port, l),
        translate,
        notFound: () => notFound(`${ref.kind} ${ref.namespace}/${ref.name} not found`),
      });
    },

    endAll(): void {
      for (const end of [...open]) end();
    },
  };
}

/**
 * What a TrafficSpec names: a Service port, an address outside the cluster networks (an EgressNetwork
 * may classify it), or an undefined Service port.
 */
type OutboundTarget =
  | { kind: 'service'; namespace: string; name: string; port: number }
  | { kind: 'egress'; ip: string; port: number }
  | { kind: 'undefined-port'; namespace: string; name: string; port: number };

export function createOutboundHandlers(opts: PolicyServerOptions): outbound.OutboundPoliciesServer & Streams {
  const { index, metrics } = opts;
  const log = opts.logger;
  const domain = index.cluster.clusterDomain;
  const open = new Set<() => void>();
  const allowL5dRequestHeaders = opts.allowL5dRequestHeaders ?? false;
  const translate = perAnswer((p: OutboundPolicy) => toProtoOutbound(p, { allowL5dRequestHeaders }));
  const translateEgress = (a: EgressAnswer, dst: { ip: string; port: number }) =>
    a.kind === 'egress' ? toProtoEgress(a.policy, dst, { allowL5dRequestHeaders }) : toFallbackPolicy(dst);

  function resolve(spec: outbound.TrafficSpec): { target: OutboundTarget; sourceNamespace: string } {
    const sourceNamespace = parseWorkloadRef(spec.sourceWorkload).namespace;
    const t = spec.target;
    if (!t) throw new PolicyError('MINIMESH_POLICY_INVALID_TARGET', 'target is required: an addr or an authority');
    if (t.$case === 'authority') {
      const { namespace, name, port } = parseServiceAuthority(t.value, domain);
      return { target: { kind: 'service', namespace, name, port }, sourceNamespace };
    }
    const addr = fromTcpAddress(t.value);
    if (!addr) throw new PolicyError('MINIMESH_POLICY_INVALID_TARGET', 'addr: expected an IP address and a port');
    const port = checkPort(addr.port);
    const hit = index.lookupIp(addr.ip, port);
    if (hit)
      return {
        target: {
          kind: hit.portDefined ? 'service' : 'undefined-port',
          namespace: hit.namespace,
          name: hit.name,
          port,
        },
        sourceNamespace,
      };
    if (!inClusterNetworks(index.cluster.networks, addr.ip))
      return { target: { kind: 'egress', ip: addr.ip, port }, sourceNamespace };
    throw notFound(`${addr.ip}:${port} is not a Service address`);
  }

  return {
    get(
      call: ServerUnaryCall<outbound.TrafficSpec, outbound.OutboundPolicy>,
      callback: sendUnaryData<outbound.OutboundPolicy>,
    ) {
      try {
        const { target, sourceNamespace } = resolve(call.request);
        let answer: outbound.OutboundPolicy;
        if (target.kind === 'egress')
          answer = translateEgress(index.egress(target.ip, target.port, sourceNamespace), target);
        else if (target.kind === 'undefined-port') answer = toUndefinedPortPolicy(target);
        else {
          const p = index.outbound(target.namespace, target.name, target.port, sourceNamespace);
          if (!p) throw notFound(`Service ${target.namespace}/${target.name} not found`);
          answer = translate(p);
        }
        metrics.requests.inc({ method: 'Get', code: 'OK' });
        callback(null, answer);
      } catch (err) {
        const s = toGrpcStatus(err);
        metrics.requests.inc({ method: 'Get', code: codeName(s.code) });
        callback(s as StatusObject);
      }
    },

    watch(call: ServerWritableStream<outbound.TrafficSpec, outbound.OutboundPolicy>): void {
      let resolved: ReturnType<typeof resolve>;
      try {
        resolved = resolve(call.request);
      } catch (err) {
        const s = toGrpcStatus(err);
        metrics.requests.inc({ method: 'Watch', code: codeName(s.code) });
        log.debug({ err: (err as Error).message }, 'Watch rejected');
        call.emit('error', s);
        return;
      }
      const { target, sourceNamespace } = resolved;
      if (target.kind === 'egress') {
        // Followed: an EgressNetwork created, changed or deleted changes the answer on the open stream.
        serveWatch<EgressAnswer, outbound.OutboundPolicy>({
          call,
          method: 'Watch',
          log,
          context: () => ({ method: 'Watch', addr: `${target.ip}:${target.port}`, from: sourceNamespace }),
          metrics,
          open,
          subscribe: (l) => index.watchEgress(target.ip, target.port, sourceNamespace, l),
          translate: (a) => translateEgress(a, target),
          notFound: () => notFound(`${target.ip}:${target.port}`),
        });
        return;
      }
      if (target.kind !== 'service') {
        // A fixed answer: sent once, the stream stays open until the client goes.
        metrics.requests.inc({ method: 'Watch', code: 'OK' });
        metrics.openStreams.inc({ method: 'Watch' });
        const end = () => call.end();
        open.add(end);
        onStreamEnd(call, () => {
          open.delete(end);
          metrics.openStreams.dec({ method: 'Watch' });
        });
        metrics.updatesSent.inc({ method: 'Watch' });
        call.write(toUndefinedPortPolicy(target));
        return;
      }
      serveWatch<OutboundPolicy, outbound.OutboundPolicy>({
        call,
        method: 'Watch',
        log,
        context: () => ({
          method: 'Watch',
          service: `${target.namespace}/${target.name}:${target.port}`,
          from: sourceNamespace,
        }),
        metrics,
        open,
        subscribe: (l) => index.watchOutbound(target.namespace, target.name, target.port, sourceNamespace, l),
        translate,
        notFound: () => notFound(`Service ${target.namespace}/${target.name} not found`),
      });
    },

    endAll(): void {
      for (const end of [...open]) end();
    },
  };
}

/** "<name>.<ns>.svc.<domain>[:port]" (a trailing dot allowed); anything else is NOT_FOUND, as Linkerd answers. */
export function parseServiceAuthority(
  authority: string,
  clusterDomain: string,
): { namespace: string; name: string; port: number } {
  const m = /^([^:]+?)\.?(?::(\d+))?$/.exec(authority.trim());
  const host = m?.[1] ?? '';
  const suffix = `.svc.${clusterDomain}`;
  const parts = host.endsWith(suffix) ? host.slice(0, -suffix.length).split('.') : [];
  if (parts.length !== 2 || !parts[0] || !parts[1])
    throw notFound(`authority "${authority}": expected <name>.<namespace>.svc.${clusterDomain}[:<port>]`);
  const port = m?.[2] !== undefined ? Number(m[2]) : 80;
  if (port < 1 || port > 65535)
    throw new PolicyError('MINIMESH_POLICY_INVALID_PORT', `authority "${authority}": port out of range`);
  return { name: parts[0], namespace: parts[1], port };
}

function codeName(code: number | undefined): string {
  const name = Object.entries(status).find(([, v]) => v === code)?.[0] ?? 'UNKNOWN';
  return name
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}
