import { describe, expect, it } from 'vitest';
import { tap, toTcpAddress } from '@minimesh/proto';
import { parseResource } from './resource.js';
import { formatTapLine, toTapRecord, type TapContext } from './tap-record.js';
import { TapFilterError, toObserveRequest } from './tap-request.js';
import { createTopAggregator, renderTop } from './top.js';

const SERVER_ID = 'server.demo.serviceaccount.identity.minimesh.cluster.local';
const CLIENT_ID = 'client.demo.serviceaccount.identity.minimesh.cluster.local';
const ctx: TapContext = {
  pod: 'demo/server-1',
  identity: SERVER_ID,
  labels: { namespace: 'demo', pod: 'server-1', deployment: 'server' },
  lookup: (ip) => (ip === '10.23.0.5' ? { namespace: 'demo', pod: 'client-1', deployment: 'client' } : undefined),
};
const inbound = (http: tap.TapEvent_Http['event']): tap.TapEvent => ({
  source: toTcpAddress('10.23.0.5', 40000),
  sourceMeta: { labels: { tls: 'true', client_id: CLIENT_ID } },
  destination: toTcpAddress('10.23.0.7', 8080),
  destinationMeta: { labels: {} },
  proxyDirection: tap.TapEvent_ProxyDirection.INBOUND,
  event: { $case: 'http', value: { event: http } },
});
const id = { base: 7, stream: 3n };
const dur = (msValue: number) => ({ seconds: BigInt(Math.floor(msValue / 1000)), nanos: (msValue % 1000) * 1e6 });

describe('tap records and lines', () => {
  it('an inbound request: identities of both ends, the client resolved to its pod', () => {
    const req = toTapRecord(
      inbound({
        $case: 'requestInit',
        value: { id, method: { type: { $case: 'registered', value: 0 } }, authority: 'server:8080', path: '/hello' },
      }),
      ctx,
    )!;
    expect(req).toMatchObject({
      id: '7:3',
      direction: 'inbound',
      tls: 'true',
      method: 'GET',
      path: '/hello',
      source: { ip: '10.23.0.5', identity: CLIENT_ID, labels: { pod: 'client-1', deployment: 'client' } },
      destination: { ip: '10.23.0.7', identity: SERVER_ID, labels: { deployment: 'server' } },
    });
    expect(formatTapLine(req)).toBe(
      `req id=7:3 proxy=in  src=10.23.0.5:40000 dst=10.23.0.7:8080 tls=true :method=GET :authority=server:8080 :path=/hello src_id=${CLIENT_ID} dst_id=${SERVER_ID}`,
    );
    expect(formatTapLine(req, { wide: true })).toMatch(
      /src_res=deploy\/client src_ns=demo dst_res=deploy\/server dst_ns=demo$/,
    );
    const rsp = toTapRecord(
      inbound({ $case: 'responseInit', value: { id, sinceRequestInit: dur(1.5), httpStatus: 200 } }),
      ctx,
    )!;
    expect(formatTapLine(rsp)).toBe(
      'rsp id=7:3 proxy=in  src=10.23.0.5:40000 dst=10.23.0.7:8080 tls=true :status=200 latency=1500µs',
    );
    const end = toTapRecord(
      inbound({
        $case: 'responseEnd',
        value: {
          id,
          sinceRequestInit: dur(12),
          sinceResponseInit: dur(0.25),
          responseBytes: 12n,
          eos: { end: { $case: 'grpcStatusCode', value: 0 } },
        },
      }),
      ctx,
    )!;
    expect(formatTapLine(end)).toBe(
      'end id=7:3 proxy=in  src=10.23.0.5:40000 dst=10.23.0.7:8080 tls=true grpc-status=OK duration=250µs response-length=12B',
    );
  });

  it('an outbound request: tls and server identity from the destination meta', () => {
    const ev: tap.TapEvent = {
      source: toTcpAddress('10.23.0.7', 50000),
      destination: toTcpAddress('10.23.0.9', 80),
      destinationMeta: {
        labels: { tls: 'true', server_id: 'x.y.serviceaccount.identity.minimesh.cluster.local', pod: 'db-0' },
      },
      proxyDirection: tap.TapEvent_ProxyDirection.OUTBOUND,
      event: { $case: 'http', value: { event: { $case: 'requestInit', value: { id, authority: 'db', path: '/' } } } },
    };
    const r = toTapRecord(ev, ctx)!;
    expect(r.source.identity).toBe(SERVER_ID);
    expect(r.destination.identity).toBe('x.y.serviceaccount.identity.minimesh.cluster.local');
    expect(formatTapLine(r)).toContain('proxy=out src=10.23.0.7:50000 dst=10.23.0.9:80 tls=true');
  });
});

describe('top', () => {
  it('groups by route with count, best, worst, last and success rate', () => {
    const top = createTopAggregator();
    const one = (stream: bigint, path: string, status: number, latency: number) => {
      const i = { base: 1, stream };
      top.add(
        toTapRecord(
          inbound({
            $case: 'requestInit',
            value: { id: i, method: { type: { $case: 'registered', value: 0 } }, authority: 'a', path },
          }),
          ctx,
        )!,
      );
      top.add(
        toTapRecord(
          inbound({ $case: 'responseInit', value: { id: i, sinceRequestInit: dur(latency), httpStatus: status } }),
          ctx,
        )!,
      );
      top.add(
        toTapRecord(
          inbound({ $case: 'responseEnd', value: { id: i, sinceRequestInit: dur(latency), responseBytes: 1n } }),
          ctx,
        )!,
      );
    };
    one(1n, '/a', 200, 2);
    one(2n, '/a', 503, 20);
    one(3n, '/a', 200, 1);
    one(4n, '/b', 200, 5);
    const rows = top.rows();
    expect(rows[0]).toMatchObject({
      source: 'client-1',
      destination: 'server-1',
      path: '/a',
      count: 3,
      successes: 2,
      bestMs: 1,
      worstMs: 20,
      lastMs: 1,
    });
    expect(renderTop(rows).split('\n')).toEqual([
      'SOURCE     DESTINATION   METHOD   PATH   COUNT     BEST    WORST     LAST   SUCCESS_RATE',
      'client-1   server-1      GET      /a         3   1000µs     20ms   1000µs         66.67%',
      'client-1   server-1      GET      /b         1   5000µs   5000µs   5000µs        100.00%',
      '',
    ]);
  });
});

describe('toObserveRequest', () => {
  it('no filter: everything, up to the limit', () => {
    expect(toObserveRequest({ limit: 100 })).toEqual({ limit: 100 });
  });
  it('--to deploy/server --method GET --path /api --authority web', () => {
    const req = toObserveRequest({
      limit: 10,
      to: { ...parseResource('deploy/server'), namespace: 'demo' },
      method: 'get',
      path: '/api',
      authority: 'web',
      headers: true,
    });
    expect(req.match).toEqual({
      match: {
        $case: 'all',
        value: {
          matches: [
            { match: { $case: 'destinationLabel', value: { key: 'namespace', value: 'demo' } } },
            { match: { $case: 'destinationLabel', value: { key: 'deployment', value: 'server' } } },
            {
              match: {
                $case: 'http',
                value: { match: { $case: 'method', value: { type: { $case: 'registered', value: 0 } } } },
              },
            },
            {
              match: {
                $case: 'http',
                value: { match: { $case: 'path', value: { match: { $case: 'prefix', value: '/api' } } } },
              },
            },
            {
              match: {
                $case: 'http',
                value: { match: { $case: 'authority', value: { match: { $case: 'exact', value: 'web' } } } },
              },
            },
          ],
        },
      },
    });
    expect(req.extract?.extract?.$case).toBe('http');
    // It encodes: the proxy gets exactly this.
    expect(tap.ObserveRequest.decode(tap.ObserveRequest.encode(req).finish())).toEqual(req);
  });
  it.each([
    [{ limit: 0 }, 'limit 0 is not valid'],
    [{ limit: 1, path: 'api' }, 'path "api" is not valid'],
    [{ limit: 1, method: 'GET /' }, 'method "GET /" is not valid'],
  ])('refuses %j', (f, msg) => {
    expect(() => toObserveRequest(f)).toThrow(TapFilterError);
    expect(() => toObserveRequest(f)).toThrow(msg);
  });
});
