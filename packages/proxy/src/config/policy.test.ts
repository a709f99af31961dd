// The proxy's policy settings from its environment: defaults, the workload from the destination context,
// and one-line errors for what cannot be used.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@minimesh/config';
import { parseProxyConfig } from './proxy.js';

const base = {
  MINIMESH_PROXY_IDENTITY_LOCAL_NAME: 'web.shop.serviceaccount.identity.minimesh.cluster.local',
  MINIMESH_PROXY_IDENTITY_TRUST_ANCHORS: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  MINIMESH_PROXY_IDENTITY_TOKEN_FILE: '/var/run/secrets/tokens/minimesh-identity-token',
  MINIMESH_PROXY_IDENTITY_SVC_ADDR: '127.0.0.1:8080',
  MINIMESH_PROXY_DESTINATION_SVC_ADDR: '127.0.0.1:8086',
};
const POLICY_NAME = 'minimesh-destination.minimesh.serviceaccount.identity.minimesh.cluster.local';

describe('policy settings', () => {
  it('without a policy controller: no client, all-unauthenticated, the private networks', () => {
    const p = parseProxyConfig(base).policy;
    expect(p.controller).toBeUndefined();
    expect(p.defaultPolicy).toBe('all-unauthenticated');
    expect(p.clusterNetworks).toEqual(['10.0.0.0/8', '100.64.0.0/10', '172.16.0.0/12', '192.168.0.0/16', 'fd00::/8']);
  });

  it('reads the controller (mTLS to its identity), the workload and the default policy', () => {
    const p = parseProxyConfig({
      ...base,
      MINIMESH_PROXY_POLICY_SVC_ADDR: 'minimesh-policy.minimesh.svc.cluster.local.:8090',
      MINIMESH_PROXY_POLICY_SVC_NAME: POLICY_NAME,
      MINIMESH_PROXY_POLICY_WORKLOAD: '{"ns":"shop","pod":"web-1"}',
      MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: 'deny',
      MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS: '10.42.0.0/16,10.43.0.0/16',
    }).policy;
    expect(p.controller).toEqual({
      addr: 'minimesh-policy.minimesh.svc.cluster.local:8090',
      name: POLICY_NAME,
      plaintext: false,
    });
    expect(p.workload).toBe('{"ns":"shop","pod":"web-1"}');
    expect(p.defaultPolicy).toBe('deny');
    expect(p.clusterNetworks).toEqual(['10.42.0.0/16', '10.43.0.0/16']);
  });

  it('takes the workload from the destination context when not given', () => {
    const p = parseProxyConfig({
      ...base,
      MINIMESH_PROXY_POLICY_SVC_ADDR: '127.0.0.1:8090',
      MINIMESH_PROXY_DESTINATION_CONTEXT: '{"ns":"shop","nodeName":"mm-node","pod":"web-1"}',
    }).policy;
    expect(JSON.parse(p.workload)).toEqual({ ns: 'shop', pod: 'web-1' });
  });

  it.each([
    [
      { MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: 'allow' },
      /MINIMESH_PROXY_INBOUND_DEFAULT_POLICY: "allow" is not valid: expected one of all-unauthenticated/,
    ],
    [
      { MINIMESH_PROXY_POLICY_SVC_ADDR: '127.0.0.1:8090', MINIMESH_PROXY_POLICY_WORKLOAD: '' },
      /MINIMESH_PROXY_POLICY_WORKLOAD: "" is not valid/,
    ],
    [
      { MINIMESH_PROXY_POLICY_SVC_ADDR: '127.0.0.1:8090', MINIMESH_PROXY_POLICY_WORKLOAD: '{"pod":"x"}' },
      /MINIMESH_PROXY_POLICY_WORKLOAD: "\{\\"pod\\":\\"x\\"\}" is not valid/,
    ],
    [{ MINIMESH_PROXY_POLICY_SVC_ADDR: 'policy.minimesh.svc:8090' }, /MINIMESH_PROXY_POLICY_SVC_NAME/],
    [{ MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS: '10.0.0.0/33' }, /MINIMESH_PROXY_POLICY_CLUSTER_NETWORKS/],
  ])('rejects %j', (env, message) => {
    let caught: unknown;
    try {
      parseProxyConfig({ ...base, MINIMESH_PROXY_POLICY_WORKLOAD: '{"ns":"shop","pod":"web-1"}', ...env });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toMatch(message);
  });
});
