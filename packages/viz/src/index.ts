// @minimesh/viz: what `minimesh viz` and the dashboard compute. Pure query builders, joins and
// renderers; the I/O (Prometheus, the API server, the tap service) is passed in.
export {
  parseResource,
  formatResource,
  inboundLabel,
  outboundLabel,
  ResourceError,
  RESOURCE_KINDS,
  type Resource,
  type ResourceKind,
} from './resource.js';
export {
  parseWindow,
  quote,
  selector,
  planStat,
  statQueries,
  edgeQueries,
  historyQueries,
  QueryError,
  type StatQuery,
  type StatPlan,
  type StatQueries,
  type EdgeQuery,
} from './promql.js';
export {
  createPrometheusClient,
  parseApiResponse,
  PrometheusError,
  type PrometheusClient,
  type PrometheusTransport,
  type Sample,
  type Series,
} from './prometheus.js';
export {
  toPodInfo,
  groupWorkloads,
  workloadName,
  isCounted,
  type PodLike,
  type PodInfo,
  type Workload,
} from './workloads.js';
export { toStatRows, renderStat, toStatJson, type StatRow, type StatResults, type StatInput } from './stat.js';
export { toEdgeRows, renderEdges, toEdgesJson, type EdgeRow, type EdgeInput } from './edges.js';
export {
  toTapRecord,
  formatTapLine,
  formatLatency,
  methodName,
  toHttpMethod,
  peerResource,
  type TapRecord,
  type TapPeer,
  type TapContext,
  type TapRecordType,
} from './tap-record.js';
export { toObserveRequest, TapFilterError, type TapFilter } from './tap-request.js';
export { createTopAggregator, renderTop, peerName, type TopRow, type TopAggregator } from './top.js';
export {
  renderTable,
  formatPercent,
  formatRps,
  formatMs,
  formatBytesPerSecond,
  formatCount,
  type Column,
} from './table.js';
export { VizError, type VizErrorCode } from './errors.js';
export {
  getStat,
  getEdges,
  getHistory,
  getNamespaces,
  getProxyMetrics,
  streamTap,
  toTapQuery,
  type VizDeps,
  type StatRequest,
  type TapRequest,
  type HistoryPoint,
} from './api.js';
export {
  readVizConfig,
  prometheusAt,
  parseServiceUrl,
  podProxyPath,
  serviceProxyPath,
  type VizKube,
  type VizConfig,
} from './kube-io.js';
export {
  vizCommand,
  diagnosticsCommand,
  type Connection,
  type VizEnv,
  type CommandIO,
} from './commands/viz-command.js';
export { createTapService, type TapDialer, type TapCall, type TapServiceOptions } from './tap-service/tap-service.js';
export { createGrpcDialer } from './tap-service/dial.js';
