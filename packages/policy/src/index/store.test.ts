// The store's ClusterIP index (what a Watch by address looks its Service up in): it follows
// Services as they are applied, changed, deleted, made invalid and re-listed.
import { describe, expect, it } from 'vitest';
import { TEST_CLUSTER } from '../testing.js';
import { ResourceStore } from './store.js';

const service = (namespace: string, name: string, ips: string[]) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { clusterIP: ips[0] ?? 'None', clusterIPs: ips, ports: [{ port: 80 }] },
});
const names = (store: ResourceStore, ip: string) => store.servicesWithIp(ip).map((s) => `${s.namespace}/${s.name}`);

describe('ResourceStore.servicesWithIp', () => {
  it('follows Services applied, changed, deleted, invalid and re-listed', () => {
    const store = new ResourceStore(TEST_CLUSTER);
    store.apply('Service', service('shop', 'web', ['10.96.0.10', 'fd00::10']));
    store.apply('Service', service('shop', 'db', ['10.96.0.11']));
    expect(names(store, '10.96.0.10')).toEqual(['shop/web']);
    expect(names(store, 'fd00::10')).toEqual(['shop/web']);
    expect(names(store, '10.96.0.12')).toEqual([]);
    // a new address: the old one is free
    store.apply('Service', service('shop', 'web', ['10.96.0.12']));
    expect(names(store, '10.96.0.10')).toEqual([]);
    expect(names(store, 'fd00::10')).toEqual([]);
    expect(names(store, '10.96.0.12')).toEqual(['shop/web']);
    // two holders (the API reassigning an address): in the order of all('Service'), as before
    store.apply('Service', service('other', 'api', ['10.96.0.11']));
    expect(names(store, '10.96.0.11')).toEqual(['shop/db', 'other/api']);
    store.delete('Service', 'shop', 'db');
    expect(names(store, '10.96.0.11')).toEqual(['other/api']);
    // made invalid: out of the index with its old version
    store.apply('Service', {
      ...service('other', 'api', ['10.96.0.11']),
      spec: { clusterIP: '10.96.0.11', ports: 'eighty' },
    });
    expect(store.invalid().map((p) => p.name)).toEqual(['api']);
    expect(names(store, '10.96.0.11')).toEqual([]);
    // headless: no address
    store.apply('Service', service('shop', 'headless', []));
    expect(names(store, 'None')).toEqual([]);
    // a re-list keeps only what it lists
    store.reset('Service', [service('shop', 'db', ['10.96.0.11'])]);
    expect(names(store, '10.96.0.12')).toEqual([]);
    expect(names(store, '10.96.0.11')).toEqual(['shop/db']);
  });
});
