// grpc.health.v1 over a real grpc-js server and the generated client: Check, List, Watch.
import { credentials, Server, ServerCredentials, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthCheckResponse_ServingStatus as S, HealthClient, type HealthCheckResponse } from './gen/health.js';
import { HealthImplementation } from './health-service.js';

const health = new HealthImplementation({ '': 'NOT_SERVING', 'x.Svc': 'NOT_SERVING' });
const server = new Server();
let client: HealthClient;

beforeAll(async () => {
  health.addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  client = new HealthClient(`127.0.0.1:${port}`, credentials.createInsecure());
});
afterAll(() => {
  client.close();
  server.forceShutdown();
});

const check = (service: string) =>
  new Promise<HealthCheckResponse>((resolve, reject) =>
    client.check({ service }, (e, r) => (e ? reject(e) : resolve(r))),
  );

describe('HealthImplementation', () => {
  it('answers Check per service, NOT_FOUND for an unknown one, and lists all', async () => {
    expect((await check('')).status).toBe(S.NOT_SERVING);
    health.setStatus('', 'SERVING');
    expect((await check('')).status).toBe(S.SERVING);
    const err = (await check('nope').catch((e: unknown) => e)) as ServiceError;
    expect(err.code).toBe(status.NOT_FOUND);
    const list = await new Promise<Record<string, HealthCheckResponse>>((resolve, reject) =>
      client.list({}, (e, r) => (e ? reject(e) : resolve(r.statuses))),
    );
    expect(list).toEqual({ '': { status: S.SERVING }, 'x.Svc': { status: S.NOT_SERVING } });
  });

  it('Watch sends the status now and each change; SERVICE_UNKNOWN for an unknown service', async () => {
    const seen: S[] = [];
    const call = client.watch({ service: 'x.Svc' });
    call.on('data', (r: HealthCheckResponse) => seen.push(r.status));
    call.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 100));
    health.setStatus('x.Svc', 'SERVING');
    health.setStatus('x.Svc', 'SERVING'); // unchanged: not sent again
    await new Promise((r) => setTimeout(r, 100));
    call.cancel();
    expect(seen).toEqual([S.NOT_SERVING, S.SERVING]);
    const unknown = client.watch({ service: 'nope' });
    const first = await new Promise<S>((resolve) =>
      unknown.once('data', (r: HealthCheckResponse) => resolve(r.status)),
    );
    unknown.on('error', () => undefined);
    unknown.cancel();
    expect(first).toBe(S.SERVICE_UNKNOWN);
  });
});
