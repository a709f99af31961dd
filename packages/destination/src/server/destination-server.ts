// The gRPC Destination service: Get and GetProfile handlers. The only module that knows gRPC status codes.
import { status, type ServerWritableStream, type StatusObject } from '@grpc/grpc-js';
import { destination, onStreamEnd } from '@minimesh/proto';
import type { Logger } from '@minimesh/runtime';
import { DestinationError, shorten } from '../errors.js';
import type { EndpointIndex, EndpointListener } from '../index/endpoint-index.js';
import type { DestinationMetrics } from '../metrics.js';
import { parseAuthority, parseContextToken, parseServiceAuthority } from './authority.js';
import { toAddUpdate, toNoEndpointsUpdate, toRemoveUpdate, type TranslatorOptions } from './endpoint-translator.js';
import { toProfile } from './profile-translator.js';
import { UpdateQueue } from './update-queue.js';

export interface DestinationServerOptions {
  index: EndpointIndex;
  translator: TranslatorOptions;
  streamQueueCapacity: number;
  /**
   * Open Get plus GetProfile streams one client may hold (default 1000); more are refused with
   * RESOURCE_EXHAUSTED. A client is its peer IP, or, when the peer is loopback (the destination pod's
   * own inbound proxy), the l5d-client-id that proxy set.
   */
  maxStreamsPerClient?: number;
  logger: Logger;
  metrics: DestinationMetrics;
}

/**
 * The Destination service definition, with serializers that pass pre-encoded messages through: one
 * endpoint change is translated and encoded once, then written as the same bytes to every stream
 * subscribed to that target.
 */
export const destinationServiceDefinition = {
  get: {
    ...destination.DestinationService.get,
    responseSerialize: (v: destination.Update | Buffer): Buffer =>
      Buffer.isBuffer(v) ? v : destination.DestinationService.get.responseSerialize(v),
  },
  getProfile: {
    ...destination.DestinationService.getProfile,
    responseSerialize: (v: destination.DestinationProfile | Buffer): Buffer =>
      Buffer.isBuffer(v) ? v : destination.DestinationService.getProfile.responseSerialize(v),
  },
} as const;

const encodeUpdate = (u: destination.Update): Buffer => Buffer.from(destination.Update.encode(u).finish());

/** Domain errors → gRPC status. */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  if (err instanceof DestinationError) {
    switch (err.code) {
      case 'MINIMESH_DESTINATION_INVALID_AUTHORITY':
      case 'MINIMESH_DESTINATION_IP_QUERY':
      case 'MINIMESH_DESTINATION_EXTERNAL_NAME':
        return { code: status.INVALID_ARGUMENT, details: err.message };
      case 'MINIMESH_DESTINATION_QUEUE_OVERFLOW':
      case 'MINIMESH_DESTINATION_TOO_MANY_STREAMS':
        return { code: status.RESOURCE_EXHAUSTED, details: err.message };
      case 'MINIMESH_DESTINATION_LISTEN':
        return { code: status.UNAVAILABLE, details: err.message };
    }
  }
  return { code: status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
}

function fail(call: ServerWritableStream<unknown, unknown>, err: unknown): void {
  call.emit('error', toGrpcStatus(err));
}

export const DEFAULT_MAX_STREAMS_PER_CLIENT = 1000;

/** The peer's host from grpc-js getPeer() ("127.0.0.1:5000", "[::1]:5000", "ipv4:10.0.0.1:5000"). */
export function peerHost(peer: string): string {
  const p = peer.replace(/^ipv[46]:/, '');
  const bracket = /^\[([^\]]*)\]/.exec(p);
  if (bracket) return bracket[1] as string;
  const i = p.lastIndexOf(':');
  return i > 0 && p.indexOf(':') === i ? p.slice(0, i) : p;
}

const isLoopback = (host: string): boolean => host.startsWith('127.') || host === '::1' || host === 'localhost';

/** Counts open streams per client; admit() returns the release function, or undefined past the limit. */
function streamLimiter(max: number) {
  const open = new Map<string, number>();
  return {
    admit(key: string): (() => void) | undefined {
      const n = open.get(key) ?? 0;
      if (n >= max) return undefined;
      open.set(key, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const m = (open.get(key) ?? 1) - 1;
        if (m <= 0) open.delete(key);
        else open.set(key, m);
      };
    },
  };
}

function clientKey(call: ServerWritableStream<unknown, unknown>): string {
  const host = peerHost(call.getPeer());
  if (isLoopback(host)) {
    const id = call.metadata.get('l5d-client-id')[0];
    if (typeof id === 'string' && id !== '') return `id:${id}`;
  }
  return `ip:${host}`;
}

export function createDestinationHandlers(opts: DestinationServerOptions): destination.DestinationServer {
  const { index, translator, metrics } = opts;
  const log = opts.logger;
  const domain = translator.clusterDomain;
  const maxStreams = opts.maxStreamsPerClient ?? DEFAULT_MAX_STREAMS_PER_CLIENT;
  const limiter = streamLimiter(maxStreams);
  const warned = new Set<string>();
  /** Admits one more stream of this call's client, or fails the call and returns undefined. */
  const admit = (call: ServerWritableStream<unknown, unknown>, method: string, path: string) => {
    const key = clientKey(call);
    const release = limiter.admit(key);
    if (release) {
      warned.delete(key);
      return release;
    }
    if (!warned.has(key)) {
      warned.add(key);
      log.warn({ client: key, limit: maxStreams }, 'client reached its stream limit: refusing new streams');
    }
    fail(
      call,
      new DestinationError(
        'MINIMESH_DESTINATION_TOO_MANY_STREAMS',
        `${method} "${shorten(path)}": this client already has ${maxStreams} open streams (--max-streams-per-client); close some first`,
      ),
    );
    return undefined;
  };
  // The index hands the same arrays to every listener of a target: encode each once.
  const encoded = new WeakMap<object, Buffer>();
  const once = (key: object, make: () => destination.Update): Buffer => {
    let bytes = encoded.get(key);
    if (!bytes) encoded.set(key, (bytes = encodeUpdate(make())));
    return bytes;
  };

  return {
    get(call: ServerWritableStream<destination.GetDestination, destination.Update>): void {
      const { path, contextToken } = call.request;
      const context = parseContextToken(contextToken);
      let target;
      try {
        target = parseServiceAuthority(path, domain);
        const service = index.getService(target.namespace, target.service);
        if (service?.type === 'ExternalName') {
          throw new DestinationError(
            'MINIMESH_DESTINATION_EXTERNAL_NAME',
            `authority "${path}": service ${target.namespace}/${target.service} is of type ExternalName (${service.externalName ?? ''}); resolve it with DNS`,
          );
        }
      } catch (err) {
        log.debug({ path: shorten(path), context, err: (err as Error).message }, 'Get rejected');
        fail(call, err);
        return;
      }
      const leave = admit(call as unknown as ServerWritableStream<unknown, unknown>, 'Get', path);
      if (!leave) return;
      const serviceLabel = `${target.namespace}/${target.service}`;
      const streamLog = log.child({ method: 'Get', path, context });
      streamLog.debug('Get stream opened');
      metrics.openStreams.inc({ method: 'Get' });
      let unsubscribe = (): void => {};
      const queue = new UpdateQueue<Buffer>(
        call as unknown as ServerWritableStream<unknown, Buffer>,
        opts.streamQueueCapacity,
        {
          onSent: () => metrics.updatesSent.inc({ method: 'Get' }),
          onOverflow: () => {
            metrics.queueOverflows.inc({ service: serviceLabel });
            streamLog.warn({ capacity: opts.streamQueueCapacity }, 'client fell behind: closing the stream');
            release();
            fail(
              call,
              new DestinationError(
                'MINIMESH_DESTINATION_QUEUE_OVERFLOW',
                `authority "${path}": more than ${opts.streamQueueCapacity} updates queued for this stream; it was closed, subscribe again`,
              ),
            );
          },
        },
      );
      const release = onStreamEnd(call, () => {
        unsubscribe();
        queue.close();
        leave();
        metrics.openStreams.dec({ method: 'Get' });
        streamLog.debug('Get stream closed');
      });
      const listener: EndpointListener = {
        add: (service, endpoints) =>
          queue.push(once(endpoints, () => toAddUpdate(service, endpoints, target.port, translator))),
        remove: (addresses) => queue.push(once(addresses, () => toRemoveUpdate(addresses))),
        noEndpoints: (exists) => queue.push(encodeUpdate(toNoEndpointsUpdate(exists))),
      };
      unsubscribe = index.subscribe(target, listener);
      if (queue.isClosed) unsubscribe();
      if (call.cancelled) release();
    },

    getProfile(call: ServerWritableStream<destination.GetDestination, destination.DestinationProfile>): void {
      const { path, contextToken } = call.request;
      const context = parseContextToken(contextToken);
      let target;
      try {
        target = parseAuthority(path, domain);
      } catch (err) {
        log.debug({ path: shorten(path), context, err: (err as Error).message }, 'GetProfile rejected');
        fail(call, err);
        return;
      }
      const leave = admit(call as unknown as ServerWritableStream<unknown, unknown>, 'GetProfile', path);
      if (!leave) return;
      const streamLog = log.child({ method: 'GetProfile', path, context });
      streamLog.debug('GetProfile stream opened');
      metrics.openStreams.inc({ method: 'GetProfile' });
      let last: Buffer | undefined;
      let stopWatching = (): void => {};
      const queue = new UpdateQueue<destination.DestinationProfile>(call, opts.streamQueueCapacity, {
        onSent: () => metrics.updatesSent.inc({ method: 'GetProfile' }),
        onOverflow: () => {
          metrics.queueOverflows.inc({ service: path });
          streamLog.warn({ capacity: opts.streamQueueCapacity }, 'client fell behind: closing the stream');
          release();
          fail(
            call,
            new DestinationError(
              'MINIMESH_DESTINATION_QUEUE_OVERFLOW',
              `authority "${path}": more than ${opts.streamQueueCapacity} profiles queued; subscribe again`,
            ),
          );
        },
      });
      const release = onStreamEnd(call, () => {
        stopWatching();
        queue.close();
        leave();
        metrics.openStreams.dec({ method: 'GetProfile' });
        streamLog.debug('GetProfile stream closed');
      });
      const send = (): void => {
        const profile = toProfile(index, target, translator);
        const bytes = Buffer.from(destination.DestinationProfile.encode(profile).finish());
        if (last && last.equals(bytes)) return; // duplicates are suppressed
        last = bytes;
        queue.push(profile);
      };
      send();
      // Recompute only on the kinds this answer depends on.
      const relevant: ReadonlySet<string> =
        target.kind === 'ip'
          ? new Set(['service', 'pod', 'externalworkload'])
          : target.hostname !== undefined
            ? new Set(['service', 'endpointslice', 'pod', 'externalworkload'])
            : new Set(['service']);
      if (!queue.isClosed) stopWatching = index.onChange((kind) => relevant.has(kind) && send());
      if (call.cancelled) release();
    },
  };
}
