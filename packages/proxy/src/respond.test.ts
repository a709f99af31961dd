import { describe, expect, it } from 'vitest';
import { ProxyError, toConnectError, type ProxyErrorCode } from './errors.js';
import { ERROR_HEADER, grpcStatusOfHttp, toGrpcErrorHeaders, toHttpErrorResponse } from './respond.js';

describe('error → wire response', () => {
  it.each<[ProxyErrorCode, number, number]>([
    ['MINIMESH_PROXY_NO_ENDPOINTS', 503, 14],
    ['MINIMESH_PROXY_CONNECT_REFUSED', 502, 14],
    ['MINIMESH_PROXY_CONNECT_TIMEOUT', 504, 4],
    ['MINIMESH_PROXY_PEER_IDENTITY_MISMATCH', 502, 16],
    ['MINIMESH_PROXY_TLS_FAILED', 502, 14],
    ['MINIMESH_PROXY_RESPONSE_TIMEOUT', 504, 4],
  ])('%s → HTTP %d, gRPC %d', (code, http, grpc) => {
    const err = new ProxyError(code, 'endpoint 10.0.0.1:80: something');
    const r = toHttpErrorResponse(err);
    expect(r.status).toBe(http);
    expect(r.headers[ERROR_HEADER]).toBe(`${code}: endpoint 10.0.0.1:80: something`);
    const g = toGrpcErrorHeaders(err);
    expect(g[':status']).toBe(200);
    expect(g['grpc-status']).toBe(grpc);
    expect(g['content-type']).toBe('application/grpc');
  });

  it('an unknown error is an upstream failure (502)', () => {
    expect(toHttpErrorResponse(new Error('boom')).status).toBe(502);
  });

  it('header values stay printable ASCII', () => {
    const r = toHttpErrorResponse(new ProxyError('MINIMESH_PROXY_TLS_FAILED', 'bad\nline → here'));
    expect(r.headers[ERROR_HEADER]).toMatch(/^[\x20-\x7e]+$/);
  });
});

describe('toConnectError', () => {
  const e = (code: string, message = code) => Object.assign(new Error(message), { code });
  it.each([
    [e('ECONNREFUSED'), 'MINIMESH_PROXY_CONNECT_REFUSED'],
    [e('MINIMESH_CONNECT_TIMEOUT'), 'MINIMESH_PROXY_CONNECT_TIMEOUT'],
    [e('MINIMESH_IDENTITY_MISMATCH'), 'MINIMESH_PROXY_PEER_IDENTITY_MISMATCH'],
    [e('ERR_SSL_WRONG_VERSION_NUMBER'), 'MINIMESH_PROXY_TLS_FAILED'],
    [e('SELF_SIGNED_CERT_IN_CHAIN'), 'MINIMESH_PROXY_TLS_FAILED'],
    [e('ECONNRESET', 'socket hang up'), 'MINIMESH_PROXY_UPSTREAM_FAILED'],
  ])('%s → %s', (err, code) => {
    const pe = toConnectError('10.0.0.1:80', err, 'web.default.serviceaccount.identity.minimesh.cluster.local');
    expect(pe.code).toBe(code);
    expect(pe.message).toMatch(/^endpoint 10\.0\.0\.1:80: /);
    expect(pe.cause).toBe(err);
  });
});

describe('grpcStatusOfHttp', () => {
  it("maps an HTTP status as gRPC's HTTP to gRPC status mapping does", () => {
    expect([400, 401, 403, 404, 429, 502, 503, 504, 500, 418].map(grpcStatusOfHttp)).toEqual([
      13, 16, 7, 12, 14, 14, 14, 14, 2, 2,
    ]);
  });
});
