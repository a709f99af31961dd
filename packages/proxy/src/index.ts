// @minimesh/proxy: the sidecar's building blocks (the program is dist/main.js, `minimesh-proxy`).
export { parseProxyConfig, EXTRA_ENV, type ProxyConfig, type ControlAddr } from './config/proxy.js';
export { startProxy, type RunningProxy } from './proxy.js';
export { ProxyError, type ProxyErrorCode } from './errors.js';
export { ERROR_HEADER, toHttpErrorResponse, toGrpcErrorHeaders } from './respond.js';
export { detectProtocol, type Protocol } from './detect/detect.js';
export { parseClientHello, type ClientHelloResult } from './tls/client-hello.js';
export { PeakEwma, pickP2c, DEFAULT_PEAK_EWMA } from './balance/p2c-peak-ewma.js';
export { DestinationResolver, type Endpoint } from './destination/resolver.js';
export { ProxyMetrics } from './metrics/metrics.js';
export { refreshDelay } from './identity/schedule.js';
export { ORIG_PROTO_HEADER, CLIENT_ID_HEADER } from './http/headers.js';
export { getOriginalDst, type OriginalDst } from './native/index.js';
