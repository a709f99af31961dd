// One answer, many streams: every stream of a watch (the clients of a Service, the streams of a port)
// gets the same message object, translated once and encoded once; an unchanged answer is not sent again.
import { EventEmitter } from 'node:events';
import { inbound, outbound, toTcpAddress } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PolicyIndex } from '../index/policy-index.js';
import { createPolicyMetrics } from '../metrics.js';
import { TEST_CLUSTER } from '../testing.js';
import { createInboundHandlers, createOutboundHandlers, encodeOnce } from './policy-server.js';

const logger = createLogger({ name: 'test', level: 'silent', format: 'json' });

/** A server stream as the handlers use it, encoding each write with the given definition as grpc-js does. */
class Call extends EventEmitter {
  cancelled = false;
  written: unknown[] = [];
  constructor(
    readonly request: unknown,
    private readonly encode: (m: unknown) => Buffer,
  ) {
    super();
  }
  write(m: unknown): boolean {
    this.encode(m);
    this.written.push(m);
    return true;
  }
  end(): void {
    this.emit('finish');
  }
}

/** encodeOnce over a definition whose encoder counts its calls. */
function counting<D extends Record<string, { responseSerialize: (v: never) => Buffer }>>(definition: D) {
  const counts = { encoded: 0 };
  const wrapped = Object.fromEntries(
    Object.entries(definition).map(([name, m]) => [
      name,
      {
        ...m,
        responseSerialize: (v: never) => {
          counts.encoded++;
          return m.responseSerialize(v);
        },
      },
    ]),
  ) as unknown as D;
  return { counts, definition: encodeOnce(wrapped as never) as D };
}

function setup() {
  const index = new PolicyIndex(TEST_CLUSTER);
  index.apply('Service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
  });
  const metrics = createPolicyMetrics(new Registry());
  return { index, metrics };
}

const route = (prefix: string) => ({
  apiVersion: 'policy.minimesh.io/v1beta3',
  kind: 'HTTPRoute',
  metadata: { name: 'r', namespace: 'shop' },
  spec: {
    parentRefs: [{ group: 'core', kind: 'Service', name: 'web', port: 80 }],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: prefix } }] }],
  },
});

describe('shared answers', () => {
  it('ten clients of a Service: one message, encoded once, per answer; nothing for an unchanged one', () => {
    const { index, metrics } = setup();
    const { counts, definition } = counting(outbound.OutboundPoliciesService);
    const handlers = createOutboundHandlers({ index, metrics, logger });
    const encode = definition.watch.responseSerialize as (m: unknown) => Buffer;
    const calls = Array.from(
      { length: 10 },
      (_, i) =>
        new Call(
          {
            sourceWorkload: JSON.stringify({ ns: 'clients', pod: `client-${i}` }),
            target: { $case: 'addr', value: toTcpAddress('10.96.0.10', 80) },
          },
          encode,
        ),
    );
    for (const c of calls) handlers.watch(c as never);
    expect(calls.map((c) => c.written.length)).toEqual(Array(10).fill(1));
    expect(new Set(calls.map((c) => c.written[0])).size).toBe(1);
    expect(counts.encoded).toBe(1);

    index.apply('HTTPRoute', route('/a'));
    expect(calls.map((c) => c.written.length)).toEqual(Array(10).fill(2));
    expect(new Set(calls.map((c) => c.written[1])).size).toBe(1);
    expect(counts.encoded).toBe(2);
    // the same route again, and a pod: the answer is unchanged, nothing is sent or encoded
    index.apply('HTTPRoute', route('/a'));
    index.apply('Pod', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-1', namespace: 'shop', labels: { app: 'web' } },
      spec: { containers: [] },
    });
    expect(calls.map((c) => c.written.length)).toEqual(Array(10).fill(2));
    expect(counts.encoded).toBe(2);
    // the bytes are those of the generated encoder
    expect(outbound.OutboundPolicy.decode(encode(calls[0]!.written[1])).protocol?.kind?.$case ?? 'none').not.toBe(
      'none',
    );
  });

  it('pods with one answer share its message until one of them changes', () => {
    const { index, metrics } = setup();
    const { counts, definition } = counting(inbound.InboundServerPoliciesService);
    const encode = definition.watchPort.responseSerialize as (m: unknown) => Buffer;
    const pod = (name: string, annotations: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'shop', labels: { app: 'web' }, annotations },
      spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
    });
    index.apply('Pod', pod('web-1'));
    index.apply('Pod', pod('web-2'));
    index.apply('Pod', pod('db-1', { 'config.minimesh.io/default-inbound-policy': 'deny' }));
    const handlers = createInboundHandlers({ index, metrics, logger });
    const watch = (name: string) => {
      const c = new Call({ workload: JSON.stringify({ ns: 'shop', pod: name }), port: 8080 }, encode);
      handlers.watchPort(c as never);
      return c;
    };
    const [a, b, c, d] = [watch('web-1'), watch('web-1'), watch('web-2'), watch('db-1')];
    expect(b.written[0]).toBe(a.written[0]);
    expect(c.written[0]).toBe(a.written[0]);
    expect(d.written[0]).not.toBe(a.written[0]);
    expect(counts.encoded).toBe(2);
    const label = (m: unknown) => inbound.Server.decode(encode(m)).labels.name;
    expect([a, d].map((x) => label(x.written[0]))).toEqual(['all-unauthenticated', 'deny']);
    // web-2 becomes like db-1: it gets db-1's message; web-1 keeps its own
    index.apply('Pod', pod('web-2', { 'config.minimesh.io/default-inbound-policy': 'deny' }));
    expect(c.written.at(-1)).toBe(d.written[0]);
    expect(a.written).toHaveLength(1);
    expect(label(a.written[0])).toBe('all-unauthenticated');
    expect(counts.encoded).toBe(2);
    // and back: web-1's answer object again
    index.apply('Pod', pod('web-2'));
    expect(c.written.at(-1)).toBe(a.written[0]);
    expect(counts.encoded).toBe(2);
  });
});
