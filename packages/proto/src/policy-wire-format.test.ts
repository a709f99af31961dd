// Pins the wire format of the policy API (inbound.proto, outbound.proto, http_route.proto,
// grpc_route.proto) with hand-assembled bytes, so a changed field number or type cannot slip by.
// Each expected string is derived by hand in the comment above it, not printed by the encoder.
import { describe, expect, it } from 'vitest';
import { inbound, outbound, httpRoute } from './index.js';
import { toTcpAddress, fromTcpAddress } from './net-address.js';

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
const bytes = (h: string) => Buffer.from(h.replace(/ /g, ''), 'hex');

describe('inbound policy wire format', () => {
  it('PortSpec{workload:"a", port:4143}', () => {
    // workload (0a) len 1 "a" | port (10) varint 4143 = af 20
    const b = inbound.PortSpec.encode({ workload: 'a', port: 4143 }).finish();
    expect(hex(b)).toBe('0a 01 61 10 af 20');
    expect(inbound.PortSpec.decode(bytes('0a0161 10af20'))).toEqual({ workload: 'a', port: 4143 });
  });

  it('Server{opaque, one unauthenticated authz on 0.0.0.0/0 named "x", labels{name:"x"}}', () => {
    // protocol (0a) ProxyProtocol{opaque (12) {}}                                  = 0a 02 12 00
    // Authz: networks (0a) Network{net (0a) IPNetwork{ip (0a) IPAddress{ipv4 (0d) 0}}}
    //          = 0a 09 0a 07 0a 05 0d 00 00 00 00                                   (11 bytes)
    //        authentication (12) Authn{unauthenticated (0a) {}}     = 12 02 0a 00   (4 bytes)
    //        metadata (22) Metadata{default (0a) "x"}               = 22 03 0a 01 78 (5 bytes)
    // authorizations (1a) len 20 = 0x14
    // labels (22) map entry {key (0a) "name", value (12) "x"}      = 22 09 0a 04 6e 61 6d 65 12 01 78
    const server: inbound.Server = {
      protocol: { kind: { $case: 'opaque', value: {} } },
      serverIps: [],
      authorizations: [
        {
          networks: [{ net: { ip: { ip: { $case: 'ipv4', value: 0 } }, prefixLen: 0 }, except: [] }],
          authentication: { permit: { $case: 'unauthenticated', value: {} } },
          labels: {},
          metadata: { kind: { $case: 'default', value: 'x' } },
        },
      ],
      labels: { name: 'x' },
    };
    const expected =
      '0a 02 12 00 1a 14 0a 09 0a 07 0a 05 0d 00 00 00 00 12 02 0a 00 22 03 0a 01 78 22 09 0a 04 6e 61 6d 65 12 01 78';
    expect(hex(inbound.Server.encode(server).finish())).toBe(expected);
    expect(inbound.Server.decode(bytes(expected))).toEqual(server);
  });

  it('Authn{meshTLS: identities ["a"], suffixes [[]]}', () => {
    // Identity{name "a"} = 0a 01 61; PermitClientIdentities{identities (0a) …, suffixes (12) {}}
    //   = 0a 03 0a 01 61 12 00 (7); PermitMeshTLS{identities (12) …} = 12 07 … (9); Authn{meshTLS (12) …}
    const authn: inbound.Authn = {
      permit: {
        $case: 'meshTLS',
        value: { clients: { $case: 'identities', value: { identities: [{ name: 'a' }], suffixes: [{ parts: [] }] } } },
      },
    };
    expect(hex(inbound.Authn.encode(authn).finish())).toBe('12 09 12 07 0a 03 0a 01 61 12 00');
  });

  it('ProxyProtocol{detect{timeout 10s, http_routes [default route, PathPrefix "/"]}}', () => {
    // Duration{seconds 10} = 08 0a → timeout (0a) = 0a 02 08 0a
    // PathMatch{prefix (12) "/"} = 12 01 2f; HttpRouteMatch{path (0a)} = 0a 03 …; Rule{matches (0a)} = 0a 05 …
    // HttpRoute{metadata (0a) Metadata{default "default"} = 0a 09 0a 07 "default", rules (22) 22 07 …} (20 bytes)
    // Detect{timeout, http_routes (1a) 1a 14 …} (26 bytes); ProxyProtocol{detect (0a) 0a 1a …}
    const p: inbound.ProxyProtocol = {
      kind: {
        $case: 'detect',
        value: {
          timeout: { seconds: 10n, nanos: 0 },
          httpRoutes: [
            {
              metadata: { kind: { $case: 'default', value: 'default' } },
              hosts: [],
              authorizations: [],
              rules: [
                {
                  matches: [{ path: { kind: { $case: 'prefix', value: '/' } }, headers: [], queryParams: [] }],
                  filters: [],
                },
              ],
            },
          ],
        },
      },
    };
    expect(hex(inbound.ProxyProtocol.encode(p).finish())).toBe(
      '0a 1a 0a 02 08 0a 1a 14 0a 09 0a 07 64 65 66 61 75 6c 74 22 07 0a 05 0a 03 12 01 2f',
    );
  });

  it('GetPort and WatchPort are io.linkerd.proxy.inbound.InboundServerPolicies methods', () => {
    expect(inbound.InboundServerPoliciesService.getPort.path).toBe(
      '/io.linkerd.proxy.inbound.InboundServerPolicies/GetPort',
    );
    expect(inbound.InboundServerPoliciesService.watchPort.path).toBe(
      '/io.linkerd.proxy.inbound.InboundServerPolicies/WatchPort',
    );
    expect(inbound.InboundServerPoliciesService.watchPort.responseStream).toBe(true);
  });
});

describe('outbound policy wire format', () => {
  it('TrafficSpec{source_workload:"w", addr:10.0.0.1:80} and {authority:"a:80"}', () => {
    // source_workload (0a) "w" | addr (12) TcpAddress{ip (0a) {ipv4 (0d) LE 01 00 00 0a}, port (10) 80 = 50}
    const b = outbound.TrafficSpec.encode({
      sourceWorkload: 'w',
      target: { $case: 'addr', value: toTcpAddress('10.0.0.1', 80) },
    }).finish();
    expect(hex(b)).toBe('0a 01 77 12 09 0a 05 0d 01 00 00 0a 10 50');
    const back = outbound.TrafficSpec.decode(b);
    expect(back.target?.$case === 'addr' && fromTcpAddress(back.target.value)).toEqual({ ip: '10.0.0.1', port: 80 });
    // authority (1a) "a:80"
    expect(
      hex(outbound.TrafficSpec.encode({ sourceWorkload: '', target: { $case: 'authority', value: 'a:80' } }).finish()),
    ).toBe('1a 04 61 3a 38 30');
  });

  it('Backend{balancer{dst "s:80", peak_ewma{30ms, 10s}}, queue{100, 3s}}', () => {
    // DestinationGet{path (0a) "s:80"} = 0a 04 73 3a 38 30; EndpointDiscovery{dst (0a)} = 0a 06 …
    // PeakEwma{default_rtt (0a) Duration{nanos (10) 30000000 = 80 87 a7 0e}, decay (12) Duration{seconds 10}}
    //   = 0a 05 10 80 87 a7 0e 12 02 08 0a (11 bytes)
    // BalanceP2c{discovery (0a) 0a 08 …, peak_ewma (12) 12 0b …} (23 bytes = 0x17)
    // Backend{balancer (1a) 1a 17 …, queue (22) Queue{capacity (08) 100 = 64, failfast_timeout (12) {seconds 3}}}
    const backend: outbound.Backend = {
      kind: {
        $case: 'balancer',
        value: {
          discovery: { kind: { $case: 'dst', value: { path: 's:80' } } },
          load: {
            $case: 'peakEwma',
            value: { defaultRtt: { seconds: 0n, nanos: 30_000_000 }, decay: { seconds: 10n, nanos: 0 } },
          },
        },
      },
      queue: { capacity: 100, failfastTimeout: { seconds: 3n, nanos: 0 } },
    };
    const expected =
      '1a 17 0a 08 0a 06 0a 04 73 3a 38 30 12 0b 0a 05 10 80 87 a7 0e 12 02 08 0a 22 06 08 64 12 02 08 03';
    expect(hex(outbound.Backend.encode(backend).finish())).toBe(expected);
    expect(outbound.Backend.decode(bytes(expected))).toEqual(backend);
  });

  it('HttpRoute.Retry{max_retries 2, conditions [500-599]} and Rule timeouts/request_timeout as fields 5 and 4', () => {
    // StatusRange{start (08) 500 = f4 03, end (10) 599 = d7 04}; Conditions{status_ranges (0a) 0a 06 …}
    // Retry{max_retries (08) 2, conditions (1a) 1a 08 …}
    const retry: outbound.HttpRoute_Retry = {
      maxRetries: 2,
      maxRequestBytes: 0,
      conditions: { statusRanges: [{ start: 500, end: 599 }] },
    };
    expect(hex(outbound.HttpRoute_Retry.encode(retry).finish())).toBe('08 02 1a 08 0a 06 08 f4 03 10 d7 04');
    // Rule{requestTimeout (22) Duration{seconds 1}, timeouts (2a) Timeouts{request (12) Duration{seconds 1}}}
    const rule = outbound.HttpRoute_Rule.encode({
      matches: [],
      filters: [],
      requestTimeout: { seconds: 1n, nanos: 0 },
      timeouts: { request: { seconds: 1n, nanos: 0 } },
      allowL5dRequestHeaders: false,
    }).finish();
    expect(hex(rule)).toBe('22 02 08 01 2a 04 12 02 08 01');
  });

  it('GrpcRoute.Retry.Conditions carries each status as the field number of its code', () => {
    // deadine_exceeded = field 4 (20 01), unavailable = field 14 (70 01)
    const c = outbound.GrpcRoute_Retry_Conditions.encode({
      cancelled: false,
      deadineExceeded: true,
      resourceExhausted: false,
      internal: false,
      unavailable: true,
    }).finish();
    expect(hex(c)).toBe('20 01 70 01');
  });

  it('OutboundPolicy{metadata Resource{group core, kind Service, name s, namespace n, port 80}}', () => {
    // Resource{group (0a) "core", kind (12) "Service", name (1a) "s", namespace (22) "n", port (30) 80 = 50}
    //   = 0a 04 63 6f 72 65 12 07 53 65 72 76 69 63 65 1a 01 73 22 01 6e 30 50 (23 bytes)
    // Metadata{resource (12) 12 17 …} (25 bytes = 0x19); OutboundPolicy{metadata (12) 12 19 …}
    const b = outbound.OutboundPolicy.encode({
      metadata: {
        kind: {
          $case: 'resource',
          value: { group: 'core', kind: 'Service', name: 's', namespace: 'n', section: '', port: 80 },
        },
      },
    }).finish();
    expect(hex(b)).toBe('12 19 12 17 0a 04 63 6f 72 65 12 07 53 65 72 76 69 63 65 1a 01 73 22 01 6e 30 50');
  });

  it("minimesh's extension filters sit at field numbers 100 and 101, clear of linkerd2-proxy-api's", () => {
    // HttpRoute.Filter{url_rewrite (100, LEN): tag 100<<3|2 = 802 = varint a2 06 | UrlRewrite{host (0a) "a"}}
    expect(
      hex(outbound.HttpRoute_Filter.encode({ kind: { $case: 'urlRewrite', value: { host: 'a' } } }).finish()),
    ).toBe('a2 06 03 0a 01 61');
    // HttpRoute.Filter{request_mirror (101): tag 810 = aa 06 | RequestMirror{ratio (12) Ratio{1 (08 01), 4 (10 04)}}}
    const mirror = outbound.HttpRoute_Filter.encode({
      kind: { $case: 'requestMirror', value: { ratio: { numerator: 1, denominator: 4 } } },
    }).finish();
    expect(hex(mirror)).toBe('aa 06 06 12 04 08 01 10 04');
    // GrpcRoute.Filter{response_header_modifier (100): a2 06 | empty}
    const grpc = outbound.GrpcRoute_Filter.encode({
      kind: { $case: 'responseHeaderModifier', value: { remove: [] } },
    }).finish();
    expect(hex(grpc)).toBe('a2 06 00');
  });

  it('Get and Watch are io.linkerd.proxy.outbound.OutboundPolicies methods', () => {
    expect(outbound.OutboundPoliciesService.get.path).toBe('/io.linkerd.proxy.outbound.OutboundPolicies/Get');
    expect(outbound.OutboundPoliciesService.watch.path).toBe('/io.linkerd.proxy.outbound.OutboundPolicies/Watch');
  });
});

describe('http_route wire format', () => {
  it('HeaderMatch{name "x", exact bytes "y"} and HostMatch suffix', () => {
    // name (0a) "x" | exact (12) "y"
    expect(
      hex(httpRoute.HeaderMatch.encode({ name: 'x', value: { $case: 'exact', value: Buffer.from('y') } }).finish()),
    ).toBe('0a 01 78 12 01 79');
    // HostMatch{suffix (12) Suffix{reverse_labels (0a) "com", (0a) "ex"}}
    expect(
      hex(httpRoute.HostMatch.encode({ match: { $case: 'suffix', value: { reverseLabels: ['com', 'ex'] } } }).finish()),
    ).toBe('12 09 0a 03 63 6f 6d 0a 02 65 78');
  });

  it('Timeouts{response 1s, request 2s, idle 3s} are fields 1, 2 and 3', () => {
    const t = httpRoute.Timeouts.encode({
      response: { seconds: 1n, nanos: 0 },
      request: { seconds: 2n, nanos: 0 },
      idle: { seconds: 3n, nanos: 0 },
    }).finish();
    expect(hex(t)).toBe('0a 02 08 01 12 02 08 02 1a 02 08 03');
  });
});
