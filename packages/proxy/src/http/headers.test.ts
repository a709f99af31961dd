import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import {
  h1ToH2Request,
  h2ToH1Request,
  h2ToH2Request,
  isMeshRequestHeader,
  ORIG_PROTO_HEADER,
  requestHead,
} from './headers.js';
import { hostDisagreement } from './handoff.js';

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

describe('headers only the mesh sets', () => {
  it.each([
    ['l5d-client-id', true],
    ['x-minimesh-proxy-error', true],
    ['x-minimesh-anything', true],
    ['l5d-dst-override', false],
    ['x-minimeshy', false],
    ['x-app', false],
  ])('%s → %s', (name, mesh) => expect(isMeshRequestHeader(name)).toBe(mesh));

  it('an Upgrade replayed to the app loses them, whatever their case, and gets the proven identity', () => {
    const req = {
      method: 'GET',
      url: '/ws',
      httpVersion: '1.1',
      rawHeaders: [
        'Host',
        'web',
        'L5D-Client-Id',
        'forged',
        'X-Minimesh-Proxy-Error',
        'forged',
        'Upgrade',
        'websocket',
      ],
    } as unknown as IncomingMessage;
    const head = requestHead(req, isMeshRequestHeader, {
      'l5d-client-id': 'a.b.serviceaccount.identity.m.c',
    }).toString();
    expect(head).toBe(
      'GET /ws HTTP/1.1\r\nHost: web\r\nUpgrade: websocket\r\nl5d-client-id: a.b.serviceaccount.identity.m.c\r\n\r\n',
    );
  });
});

describe('HTTP/2 host against :authority', () => {
  it.each([
    [{ ':authority': 'web:80' }, undefined],
    [{ ':authority': 'web:80', host: 'web:80' }, undefined],
    [{ ':authority': 'Web', host: 'web:80', ':scheme': 'http' }, undefined],
    [{ ':authority': 'web:443', host: 'WEB', ':scheme': 'https' }, undefined],
    [{ ':authority': 'web', host: 'admin' }, /host "admin" differs from :authority "web"/],
    [{ ':authority': 'web:8080', host: 'web' }, /differs/],
    [{ ':authority': 'web', host: 'web:443', ':scheme': 'http' }, /differs/],
  ])('%j', (headers, want) => {
    const r = hostDisagreement(headers);
    if (want === undefined) expect(r).toBeUndefined();
    else expect(r).toMatch(want);
  });
});
