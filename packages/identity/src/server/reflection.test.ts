// Server reflection is loaded on the first request, then answers as @grpc/reflection does, for v1 and
// v1alpha: the services, and the file descriptors grpcurl needs to call Certify.
import { createRequire } from 'node:module';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { health as healthProto, HealthImplementation, protoDir } from '@minimesh/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addLazyReflection } from './reflection.js';

type Response = {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  error_response?: { error_code: number };
};
type ReflectionClient = grpc.Client & { ServerReflectionInfo(): grpc.ClientDuplexStream<object, Response> };

const server = new grpc.Server();
let port = 0;

beforeAll(async () => {
  new HealthImplementation({ '': 'SERVING' }).addToServer(server);
  addLazyReflection(server, {
    protoFiles: ['identity.proto', 'health.proto'],
    includeDirs: [protoDir],
    services: ['io.linkerd.proxy.identity.Identity', 'grpc.health.v1.Health'],
  });
  port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
});
afterAll(() => server.forceShutdown());

function client(version: 'v1' | 'v1alpha'): ReflectionClient {
  const file = createRequire(import.meta.url).resolve(
    `@grpc/reflection/build/proto/grpc/reflection/${version}/reflection.proto`,
  );
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(file, { keepCase: true })) as unknown as {
    grpc: {
      reflection: Record<string, { ServerReflection: new (a: string, c: grpc.ChannelCredentials) => ReflectionClient }>;
    };
  };
  return new pkg.grpc.reflection[version]!.ServerReflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

/** Sends the requests on one stream, at once (before the lazy load finishes), and collects the answers. */
async function ask(version: 'v1' | 'v1alpha', requests: object[]): Promise<Response[]> {
  const c = client(version);
  const stream = c.ServerReflectionInfo();
  const out: Response[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on('data', (m: Response) => out.push(m));
    stream.on('end', () => resolve());
    stream.on('error', reject);
    for (const r of requests) stream.write(r);
    stream.end();
  });
  c.close();
  return out;
}

describe('addLazyReflection', () => {
  it.each(['v1alpha', 'v1'] as const)(
    '%s: lists the services and returns the descriptor of Certify',
    async (version) => {
      const [list, file, missing] = await ask(version, [
        { list_services: '*' },
        { file_containing_symbol: 'io.linkerd.proxy.identity.Identity' },
        { file_containing_symbol: 'no.such.Service' },
      ]);
      expect(list?.list_services_response?.service.map((s) => s.name).sort()).toEqual([
        'grpc.health.v1.Health',
        'io.linkerd.proxy.identity.Identity',
      ]);
      expect(Buffer.concat(file?.file_descriptor_response?.file_descriptor_proto ?? []).toString('latin1')).toContain(
        'Certify',
      );
      expect(missing?.error_response?.error_code).toBe(grpc.status.NOT_FOUND);
    },
  );

  it('leaves the other services alone', async () => {
    const h = new healthProto.HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const s = await new Promise<number>((resolve, reject) =>
      h.check({ service: '' }, (e, r) => (e ? reject(e) : resolve(r.status))),
    );
    h.close();
    expect(s).toBe(healthProto.HealthCheckResponse_ServingStatus.SERVING);
  });
});
