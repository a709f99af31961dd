// The flags of a program that elects a leader with a Lease (destination's EndpointSlice writer, the
// policy controller's route-status writer), with client-go's defaults, and their one check.
import type { FlagSpecs } from '@minimesh/runtime';
import { KubeConfigError } from './errors.js';

/** Flag specs to spread into a program's own: --lease-name and the three timings. */
export function leaseFlags(defaultName: string) {
  return {
    'lease-name': {
      type: 'string',
      default: defaultName,
      description: 'coordination.k8s.io Lease for leader election (in the controller namespace)',
    },
    'lease-duration': {
      type: 'string',
      default: '30s',
      description: 'how long a leader keeps the lease without renewing it',
    },
    'lease-renew-deadline': {
      type: 'string',
      default: '10s',
      description: 'how long the leader keeps trying to renew before stepping down',
    },
    'lease-retry-period': {
      type: 'string',
      default: '2s',
      description: 'how often candidates try and the leader renews',
    },
  } as const satisfies FlagSpecs;
}

export interface LeaseFlagValues {
  'lease-name': string;
  'lease-duration': string;
  'lease-renew-deadline': string;
  'lease-retry-period': string;
}

export interface LeaseTimings {
  name: string;
  durationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * Reads the flags with the program's duration parser (which names the flag when a value is not a
 * duration) and checks duration > renew deadline > retry period > 0 (KubeConfigError, exit 2).
 */
export function parseLeaseFlags(
  f: LeaseFlagValues,
  parseDuration: (flag: string, value: string) => number,
): LeaseTimings {
  const t = {
    name: f['lease-name'],
    durationMs: parseDuration('--lease-duration', f['lease-duration']),
    renewDeadlineMs: parseDuration('--lease-renew-deadline', f['lease-renew-deadline']),
    retryPeriodMs: parseDuration('--lease-retry-period', f['lease-retry-period']),
  };
  if (!(t.durationMs > t.renewDeadlineMs && t.renewDeadlineMs > t.retryPeriodMs && t.retryPeriodMs > 0))
    throw new KubeConfigError(
      `--lease-duration: ${JSON.stringify(`${f['lease-duration']}/${f['lease-renew-deadline']}/${f['lease-retry-period']}`)} is not valid: expected lease duration > renew deadline > retry period > 0`,
    );
  if (!t.name) throw new KubeConfigError('--lease-name: "" is not valid: expected a Lease name');
  return t;
}
