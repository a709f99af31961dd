// gRPC server reflection (grpc.reflection.v1 and v1alpha), so grpcurl and friends can call identity,
// loaded on first use: @grpc/reflection builds its descriptors with proto-loader, which costs ~100 ms of
// CPU and several MB at start-up that a server nobody reflects on should not pay. The two services are
// registered at once with pass-through (Buffer) codecs; the first stream loads @grpc/reflection, lets it
// register itself on a stand-in server to learn its codecs and handlers, and from then on every stream
// is decoded, handled and encoded by them.
import { EventEmitter } from 'node:events';
import type { Server, ServerDuplexStream, ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';

const VERSIONS = ['v1', 'v1alpha'] as const;
const pathOf = (v: string): string => `/grpc.reflection.${v}.ServerReflection/ServerReflectionInfo`;
const raw = (b: Buffer): Buffer => b;

interface Loaded {
  /** By method path: the real codecs and handler. */
  byPath: Map<string, { def: ServiceDefinition[string]; handler: (stream: unknown) => void }>;
}

export interface ReflectionOptions {
  /** .proto files describing the served services, relative to includeDirs. */
  protoFiles: string[];
  includeDirs: string[];
  /** Service names to advertise. */
  services: string[];
}

async function load(opts: ReflectionOptions): Promise<Loaded> {
  // CommonJS modules: their exports are the default export both in Node and in a bundle's chunk.
  const cjs = <T>(m: T): T => ((m as { default?: T }).default ?? m) as T;
  const [{ ReflectionService }, protoLoader] = await Promise.all([
    import('@grpc/reflection').then(cjs),
    import('@grpc/proto-loader').then(cjs),
  ]);
  const pkg = protoLoader.loadSync(opts.protoFiles, { includeDirs: opts.includeDirs, keepCase: true });
  const byPath: Loaded['byPath'] = new Map();
  new ReflectionService(pkg, { services: opts.services }).addToServer({
    addService(def: ServiceDefinition, impl: UntypedServiceImplementation) {
      for (const [name, method] of Object.entries(def))
        byPath.set(method.path, { def: method, handler: impl[name] as (stream: unknown) => void });
    },
  });
  return { byPath };
}

export function addLazyReflection(server: Server, opts: ReflectionOptions): void {
  let loading: Promise<Loaded> | undefined;
  for (const version of VERSIONS) {
    const path = pathOf(version);
    const definition: ServiceDefinition = {
      ServerReflectionInfo: {
        path,
        requestStream: true,
        responseStream: true,
        requestSerialize: raw,
        requestDeserialize: raw,
        responseSerialize: raw,
        responseDeserialize: raw,
        originalName: 'serverReflectionInfo',
      },
    };
    server.addService(definition, {
      ServerReflectionInfo: (call: ServerDuplexStream<Buffer, Buffer>) => {
        // The real handler sees a stream of decoded messages and writes decoded responses.
        const stream = new EventEmitter() as EventEmitter & { write(m: unknown): boolean; end(): void };
        const pending: Buffer[] = [];
        let ended = false;
        let real: Loaded['byPath'] extends Map<string, infer V> ? V : never;
        call.on('data', (b: Buffer) => (real ? stream.emit('data', real.def.requestDeserialize(b)) : pending.push(b)));
        call.on('end', () => (real ? stream.emit('end') : (ended = true)));
        call.on('error', () => undefined);
        loading ??= load(opts);
        loading.then(
          (loaded) => {
            const found = loaded.byPath.get(path);
            if (!found) throw new Error(`@grpc/reflection registered no ${path}`);
            real = found;
            stream.write = (m) => call.write(found.def.responseSerialize(m) as Buffer);
            stream.end = () => call.end();
            found.handler(stream);
            for (const b of pending.splice(0)) stream.emit('data', found.def.requestDeserialize(b));
            if (ended) stream.emit('end');
          },
          (err: unknown) => call.destroy(err instanceof Error ? err : new Error(String(err))),
        );
      },
    });
  }
}
