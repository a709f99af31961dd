// Table-driven tests of the index and the endpoint translator from real Kubernetes YAML fixtures.
// Each fixture (fixtures/*.yaml) is a scenario: objects applied first, a subscription, then steps that
// apply/delete/reset objects; after each step the listener must have seen exactly `expect`.
// Endpoints are written "ip:port", plus " id=<identity>" and " hint=h2|opaque" when set.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parsePortRanges } from '@minimesh/config';
import { fromTcpAddress } from '@minimesh/proto';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { keyOfObject, toExternalWorkloadRecord, toPodRecord, toServiceRecord, toSliceRecord } from '../k8s/records.js';
import { toAddUpdate, toRemoveUpdate, type TranslatorOptions } from '../server/endpoint-translator.js';
import { EndpointIndex, type ResourceKind, type ServiceTarget } from './endpoint-index.js';

const fixturesDir = fileURLToPath(new URL('./fixtures/', import.meta.url));

interface Step {
  name?: string;
  apply?: unknown[];
  delete?: Array<{ kind: string; namespace: string; name: string }>;
  reset?: { kind: string; objects: unknown[] };
  expect: Array<{ add?: string[]; remove?: string[]; noEndpoints?: boolean }>;
}

interface Scenario {
  name: string;
  target: ServiceTarget;
  objects: unknown[];
  initial: { add?: string[]; noEndpoints?: boolean };
  steps: Step[];
}

const OPTS: TranslatorOptions = {
  controllerNamespace: 'minimesh',
  identityTrustDomain: 'cluster.local',
  clusterDomain: 'cluster.local',
  defaultOpaquePorts: parsePortRanges('test', '3306,5432'),
  enableH2Upgrade: true,
};

const KINDS: Record<string, { kind: ResourceKind; transform: (o: unknown) => never }> = {
  Service: { kind: 'service', transform: toServiceRecord as never },
  EndpointSlice: { kind: 'endpointslice', transform: toSliceRecord as never },
  Pod: { kind: 'pod', transform: toPodRecord as never },
  ExternalWorkload: { kind: 'externalworkload', transform: toExternalWorkloadRecord as never },
};

function kindOf(o: unknown): { kind: ResourceKind; transform: (o: unknown) => never } {
  const k = KINDS[(o as { kind: string }).kind];
  if (!k) throw new Error(`fixture: unknown kind ${(o as { kind: string }).kind}`);
  return k;
}

/** Records what the listener saw, translated to the wire form and rendered compactly. */
function recorder(target: ServiceTarget) {
  const events: Array<{ add?: string[]; remove?: string[]; noEndpoints?: boolean }> = [];
  return {
    events,
    listener: {
      add(service: Parameters<typeof toAddUpdate>[0], endpoints: Parameters<typeof toAddUpdate>[1]) {
        const u = toAddUpdate(service, endpoints, target.port, OPTS).update;
        if (u?.$case !== 'add') throw new Error('expected add');
        expect(u.value.metricLabels).toEqual({ service: service.name, namespace: service.namespace });
        events.push({
          add: u.value.addrs
            .map((a) => {
              const tcp = fromTcpAddress(a.addr);
              expect(a.weight).toBe(10000);
              let s = `${tcp?.ip}:${tcp?.port}`;
              const id =
                a.tlsIdentity?.strategy?.$case === 'dnsLikeIdentity' ? a.tlsIdentity.strategy.value.name : undefined;
              if (id) {
                expect(a.tlsIdentity?.serverName?.name).toBe(id);
                s += ` id=${id}`;
              }
              if (a.protocolHint?.protocol) s += ` hint=${a.protocolHint.protocol.$case}`;
              return s;
            })
            .sort(),
        });
      },
      remove(addresses: Parameters<typeof toRemoveUpdate>[0]) {
        const u = toRemoveUpdate(addresses).update;
        if (u?.$case !== 'remove') throw new Error('expected remove');
        events.push({ remove: u.value.addrs.map((a) => `${fromTcpAddress(a)?.ip}:${fromTcpAddress(a)?.port}`).sort() });
      },
      noEndpoints(exists: boolean) {
        events.push({ noEndpoints: exists });
      },
    },
  };
}

const scenarios: Array<[string, Scenario]> = readdirSync(fixturesDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((f) => {
    const s = parse(readFileSync(fixturesDir + f, 'utf8')) as Scenario;
    return [s.name ?? f, s];
  });

describe('EndpointIndex scenarios (fixtures/*.yaml)', () => {
  it('has fixtures', () => expect(scenarios.length).toBeGreaterThanOrEqual(8));

  it.each(scenarios)('%s', (_name, s) => {
    const index = new EndpointIndex();
    for (const o of s.objects ?? []) index.apply(kindOf(o).kind, kindOf(o).transform(o));
    const rec = recorder(s.target);
    const unsubscribe = index.subscribe(s.target, rec.listener);
    expect(rec.events).toEqual([s.initial]);
    for (const [i, step] of (s.steps ?? []).entries()) {
      rec.events.length = 0;
      for (const o of step.apply ?? []) index.apply(kindOf(o).kind, kindOf(o).transform(o));
      for (const d of step.delete ?? []) index.delete(kindOf(d).kind, keyOfObject({ metadata: d }));
      if (step.reset)
        index.reset(
          kindOf({ kind: step.reset.kind }).kind,
          step.reset.objects.map((o) => kindOf(o).transform(o)),
        );
      expect(rec.events, `step ${i + 1}${step.name ? ` (${step.name})` : ''}`).toEqual(step.expect ?? []);
    }
    unsubscribe();
    expect(index.listenerCount()).toBe(0);
  });
});

describe('EndpointIndex fan-out', () => {
  it('a listener that throws does not keep the change from the others, and is reported', () => {
    const errors: unknown[] = [];
    const index = new EndpointIndex({ onListenerError: (e) => errors.push(e) });
    index.apply(
      'service',
      toServiceRecord({
        metadata: { name: 'web', namespace: 'shop' },
        spec: { ports: [{ port: 80, targetPort: 8080 }] },
      }),
    );
    const seen: string[] = [];
    const target = { namespace: 'shop', service: 'web', port: 80 };
    index.subscribe(target, {
      add: () => {
        throw new Error('boom');
      },
      remove: () => undefined,
      noEndpoints: () => undefined,
    });
    index.subscribe(target, {
      add: (_s, eps) => seen.push(...eps.map((e) => `${e.ip}:${e.port}`)),
      remove: () => undefined,
      noEndpoints: () => undefined,
    });
    index.apply(
      'endpointslice',
      toSliceRecord({
        metadata: { name: 'a', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
        ports: [{ name: '', port: 8080 }],
        endpoints: [{ addresses: ['10.0.0.1'] }],
      }),
    );
    expect(seen).toEqual(['10.0.0.1:8080']);
    expect(errors).toHaveLength(1);
  });
});
