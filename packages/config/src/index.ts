// @minimesh/config: the typed mesh configuration and the parsers behind it.
export { ConfigError, type ConfigErrorCode } from './errors.js';
export {
  parsePort,
  parsePortRanges,
  foldRanges,
  formatPortRanges,
  portInRanges,
  parseCidr,
  parseCidrList,
  parseDuration,
  parseBoolean,
  parseLogLevel,
  parseLogFormat,
  type PortRange,
  type Cidr,
  type LogLevel,
  type LogFormat,
} from './parse.js';
export { meshConfigSchema, parseMeshConfig, defaultMeshConfig, type MeshConfig } from './mesh-config.js';
export { DEFAULT_INBOUND_POLICIES, type DefaultInboundPolicy } from './inbound-policies.js';
export {
  parseIp,
  formatIp,
  unmapIpv4,
  ipNetwork,
  toIpNetwork,
  ipNetworkContains,
  cidrNetwork,
  cidrContains,
  toNetworkCidr,
  formatCidr,
  addressKey,
  type IpValue,
  type IpFamily,
  type IpNetwork,
} from './net.js';
export { MINIMESH_VERSION } from './version.js';
export { toIdentityName, fromIdentityName, type IdentityParts } from './identity-name.js';
export { ANNOTATIONS, LABELS, CONTAINER_NAMES, DEFAULT_PORTS, PROXY_ENV } from './names.js';
