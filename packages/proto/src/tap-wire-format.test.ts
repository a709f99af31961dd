// Pins the wire format of the tap API (tap.proto) with hand-assembled bytes, so a changed field number or
// type cannot slip by. Each expected string is derived by hand in the comment above it. ts-proto writes
// fields in declaration order; linkerd2-proxy (prost) writes them by field number: both are decoded here.
import { describe, expect, it } from 'vitest';
import { tap } from './index.js';
import { toTcpAddress } from './net-address.js';

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
const bytes = (h: string) => Buffer.from(h.replace(/ /g, ''), 'hex');

describe('tap wire format', () => {
  it('the service is io.linkerd.proxy.tap.Tap/Observe, server streaming', () => {
    expect(tap.TapService.observe.path).toBe('/io.linkerd.proxy.tap.Tap/Observe');
    expect(tap.TapService.observe.requestStream).toBe(false);
    expect(tap.TapService.observe.responseStream).toBe(true);
  });

  it('ObserveRequest{limit:100, match: all[destination ports 8080, http path prefix "/api"], extract headers}', () => {
    // limit (08) 100                                                           = 08 64
    // PortRange{min (08) 8080 = 90 3f, max (10) 8080}                          = 08 90 3f 10 90 3f (6)
    // Tcp{ports (1a) …} = 1a 06 … (8); Match{destination (2a) …}               = 2a 08 … (10)
    // StringMatch{prefix (12) "/api"} = 12 04 2f 61 70 69 (6); Http{path (22) …} = 22 06 … (8)
    // Match{http (32) …}                                                       = 32 08 … (10)
    // Seq{matches (0a) ×2} = 0a 0a … 0a 0a … (24); Match{all (0a) …} = 0a 18 … (26); match (12) = 12 1a …
    // Headers{} = (0); Extract.Http{headers (0a)} = 0a 00; Extract{http (0a)} = 0a 02 0a 00; extract (1a)
    const expected =
      '08 64 12 1a 0a 18 0a 0a 2a 08 1a 06 08 90 3f 10 90 3f 0a 0a 32 08 22 06 12 04 2f 61 70 69 1a 04 0a 02 0a 00';
    const req: tap.ObserveRequest = {
      limit: 100,
      match: {
        match: {
          $case: 'all',
          value: {
            matches: [
              {
                match: { $case: 'destination', value: { match: { $case: 'ports', value: { min: 8080, max: 8080 } } } },
              },
              {
                match: {
                  $case: 'http',
                  value: { match: { $case: 'path', value: { match: { $case: 'prefix', value: '/api' } } } },
                },
              },
            ],
          },
        },
      },
      extract: { extract: { $case: 'http', value: { extract: { $case: 'headers', value: {} } } } },
    };
    expect(hex(tap.ObserveRequest.encode(req).finish())).toBe(expected);
    expect(tap.ObserveRequest.decode(bytes(expected))).toEqual(req);
  });

  it('ObserveRequest{match: not{source netmask 10.0.0.0/8}} and a destination label', () => {
    // IPAddress{ipv4 (0d) 0x0a000000 LE} = 0d 00 00 00 0a (5); Netmask{ip (0a) …, mask (10) 8} = 0a 05 … 10 08 (9)
    // Tcp{netmask (0a) …} = 0a 09 … (11); Match{source (22) …} = 22 0b … (13); Match{not (1a) …} = 1a 0d … (15)
    const not = '1a 0d 22 0b 0a 09 0a 05 0d 00 00 00 0a 10 08';
    const m: tap.ObserveRequest_Match = {
      match: {
        $case: 'not',
        value: {
          match: {
            $case: 'source',
            value: {
              match: { $case: 'netmask', value: { ip: { ip: { $case: 'ipv4', value: 0x0a000000 } }, mask: 8 } },
            },
          },
        },
      },
    };
    expect(hex(tap.ObserveRequest_Match.encode(m).finish())).toBe(not);
    // Label{key (0a) "pod", value (12) "a"} = 0a 03 70 6f 64 12 01 61 (8); Match{destination_label (3a) …}
    const label: tap.ObserveRequest_Match = { match: { $case: 'destinationLabel', value: { key: 'pod', value: 'a' } } };
    expect(hex(tap.ObserveRequest_Match.encode(label).finish())).toBe('3a 08 0a 03 70 6f 64 12 01 61');
  });

  it('TapEvent with a request_init, in ts-proto order and in field-number order (prost)', () => {
    // source (0a) TcpAddress{ip (0a) {ipv4 (0d) 01 00 00 0a}, port (10) 8080 = 90 3f}     = 0a 0a 0a 05 0d 01 00 00 0a 10 90 3f
    // destination (12) TcpAddress{10.0.0.2, port 80 = 50}                                = 12 09 0a 05 0d 02 00 00 0a 10 50
    // destination_meta (22) EndpointMeta{labels (0a) entry{key (0a) "pod", value (12) "a"}} = 22 0a 0a 08 0a 03 70 6f 64 12 01 61
    // proxy_direction (30) OUTBOUND = 2                                                  = 30 02
    // RequestInit{id (0a) {base (08) 1, stream (10) 2} = 0a 04 08 01 10 02, method (12) {registered (08) POST=1}
    //   = 12 02 08 01, scheme (1a) {registered (08) HTTP=0, set in its oneof so written} = 1a 02 08 00,
    //   authority (22) "w" = 22 01 77, path (2a) "/" = 2a 01 2f} (20 = 0x14)
    // Http{request_init (0a) …} = 0a 14 … (22); TapEvent.http (1a) = 1a 16 …
    const source = '0a 0a 0a 05 0d 01 00 00 0a 10 90 3f';
    const destination = '12 09 0a 05 0d 02 00 00 0a 10 50';
    const meta = '22 0a 0a 08 0a 03 70 6f 64 12 01 61';
    const direction = '30 02';
    const http = '1a 16 0a 14 0a 04 08 01 10 02 12 02 08 01 1a 02 08 00 22 01 77 2a 01 2f';
    const event: tap.TapEvent = {
      source: toTcpAddress('10.0.0.1', 8080),
      destination: toTcpAddress('10.0.0.2', 80),
      destinationMeta: { labels: { pod: 'a' } },
      proxyDirection: tap.TapEvent_ProxyDirection.OUTBOUND,
      event: {
        $case: 'http',
        value: {
          event: {
            $case: 'requestInit',
            value: {
              id: { base: 1, stream: 2n },
              method: { type: { $case: 'registered', value: 1 } },
              scheme: { type: { $case: 'registered', value: 0 } },
              authority: 'w',
              path: '/',
            },
          },
        },
      },
    };
    expect(hex(tap.TapEvent.encode(event).finish())).toBe([source, destination, meta, direction, http].join(' '));
    const prost = tap.TapEvent.decode(bytes([source, destination, http, meta, direction].join(' ')));
    expect(prost).toEqual(event);
  });

  it('TapEvent with a response_end: durations, bytes and a gRPC status of 0', () => {
    // Duration{nanos (10) 1_500_000 = e0 c6 5b} (seconds 0 is not written)                = 10 e0 c6 5b (4)
    // ResponseEnd{id (0a) 0a 04 08 01 10 02, since_request_init (12) 12 04 …, response_bytes (20) 5 = 20 05,
    //   eos (2a) Eos{grpc_status_code (08) 0, set in its oneof} = 2a 02 08 00}               (18 = 0x12)
    // Http{response_end (1a) …} = 1a 12 … (20); TapEvent{proxy_direction (30) INBOUND, http (1a) 1a 14 …}
    const expected = '30 01 1a 14 1a 12 0a 04 08 01 10 02 12 04 10 e0 c6 5b 20 05 2a 02 08 00';
    const event: tap.TapEvent = {
      proxyDirection: tap.TapEvent_ProxyDirection.INBOUND,
      event: {
        $case: 'http',
        value: {
          event: {
            $case: 'responseEnd',
            value: {
              id: { base: 1, stream: 2n },
              sinceRequestInit: { seconds: 0n, nanos: 1_500_000 },
              responseBytes: 5n,
              eos: { end: { $case: 'grpcStatusCode', value: 0 } },
            },
          },
        },
      },
    };
    expect(hex(tap.TapEvent.encode(event).finish())).toBe(expected);
    // prost writes http (field 3) before proxy_direction (field 6).
    expect(
      tap.TapEvent.decode(bytes('1a 14 1a 12 0a 04 08 01 10 02 12 04 10 e0 c6 5b 20 05 2a 02 08 00 30 01')),
    ).toEqual(event);
  });
});
