import { describe, expect, it } from 'vitest';
import { h1ToH2Request, h2ToH1Request, h2ToH2Request, ORIG_PROTO_HEADER } from './headers.js';

describe('header conversions', () => {
  it('HTTP/1 → HTTP/2 between proxies keeps Host beside :authority (Linkerd inbound does not rebuild it)', () => {
    const out = h1ToH2Request(
      'GET',
      '/x',
      { host: 'web.default.svc.cluster.local', connection: 'keep-alive, x-hop', 'x-hop': '1', accept: '*/*' },
      'web.default.svc.cluster.local',
      { [ORIG_PROTO_HEADER]: 'HTTP/1.1' },
    );
    expect(out).toEqual({
      host: 'web.default.svc.cluster.local',
      accept: '*/*',
      ':method': 'GET',
      ':path': '/x',
      ':authority': 'web.default.svc.cluster.local',
      ':scheme': 'http',
      [ORIG_PROTO_HEADER]: 'HTTP/1.1',
    });
  });

  it('HTTP/2 → HTTP/1 restores Host from :authority and drops the marker', () => {
    const out = h2ToH1Request({
      ':method': 'GET',
      ':path': '/x',
      ':authority': 'web:80',
      host: 'stale',
      [ORIG_PROTO_HEADER]: 'HTTP/1.1',
      te: 'trailers',
      'x-a': 'b',
    });
    expect(out).toEqual({ host: 'web:80', 'x-a': 'b' });
  });

  it('HTTP/2 → HTTP/2 keeps pseudo-headers and te: trailers (gRPC), drops hop-by-hop', () => {
    const out = h2ToH2Request({
      ':method': 'POST',
      ':path': '/a.B/C',
      ':authority': 'grpc:81',
      ':scheme': 'http',
      te: 'trailers',
      'keep-alive': '5',
      'content-type': 'application/grpc',
    });
    expect(out).toEqual({
      te: 'trailers',
      'content-type': 'application/grpc',
      ':method': 'POST',
      ':path': '/a.B/C',
      ':authority': 'grpc:81',
      ':scheme': 'http',
    });
  });
});
