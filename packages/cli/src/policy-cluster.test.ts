import { describe, expect, it } from 'vitest';
import { clusterInfoFromArgs } from './policy-cluster.js';

describe('clusterInfoFromArgs (the policy controller settings from its container args)', () => {
  it('reads --flag=value and --flag value, with defaults for the rest', () => {
    const c = clusterInfoFromArgs(
      [
        '--default-policy=deny',
        '--cluster-networks',
        '10.0.0.0/8,fd00::/8',
        '--probe-networks=',
        '--controller-namespace=cp',
      ],
      'minimesh',
    );
    expect(c.defaultPolicy).toBe('deny');
    expect(c.networks).toEqual(['10.0.0.0/8', 'fd00::/8']);
    expect(c.probeNetworks).toEqual([]);
    expect(c.controlPlaneNamespace).toBe('cp');
    expect(c.clusterDomain).toBe('cluster.local');
    expect(c.defaultDetectTimeoutMs).toBe(10_000);
  });

  it('without args: the controller defaults (all-unauthenticated, probes from anywhere)', () => {
    const c = clusterInfoFromArgs([], 'minimesh');
    expect(c.defaultPolicy).toBe('all-unauthenticated');
    expect(c.probeNetworks).toEqual(['0.0.0.0/0', '::/0']);
    expect(c.controlPlaneNamespace).toBe('minimesh');
  });

  it('an unknown default policy falls back to the default, a malformed network throws', () => {
    expect(clusterInfoFromArgs(['--default-policy=open'], 'm').defaultPolicy).toBe('all-unauthenticated');
    expect(() => clusterInfoFromArgs(['--cluster-networks=10.0.0.0/33'], 'm')).toThrow(/--cluster-networks/);
  });
});
