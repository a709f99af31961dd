// A cluster description for tests (here and in packages that build on the index).
import { parsePortRanges } from '@minimesh/config';
import type { ClusterInfo } from './cluster-info.js';

export const TEST_CLUSTER: ClusterInfo = {
  networks: ['10.0.0.0/8', 'fd00::/8'],
  controlPlaneNamespace: 'minimesh',
  clusterDomain: 'cluster.local',
  identityDomain: 'cluster.local',
  defaultPolicy: 'all-unauthenticated',
  defaultDetectTimeoutMs: 10_000,
  defaultOpaquePorts: parsePortRanges('test', '3306,5432'),
  probeNetworks: ['0.0.0.0/0'],
};
