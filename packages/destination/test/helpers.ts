// Helpers for destination's integration tests: a Get/GetProfile stream reader, waiting, RBAC.
import { credentials, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { destination, fromTcpAddress } from '@minimesh/proto';
import { KubeApiError, type KubeClient } from '@minimesh/local-cluster';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(50);
  }
}

/** Reads a server stream into a queue; next() waits for the next message, end() for the status. */
export class StreamReader<T> {
  private readonly queue: T[] = [];
  private waiters: Array<() => void> = [];
  error: ServiceError | undefined;
  ended = false;

  constructor(readonly call: ClientReadableStream<T>) {
    call.on('data', (m: T) => {
      this.queue.push(m);
      this.wake();
    });
    call.on('error', (e: ServiceError) => {
      this.error = e;
      this.wake();
    });
    call.on('end', () => {
      this.ended = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  async next(timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.error) throw this.error;
      if (this.ended) throw new Error('stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.queue.shift() as T;
  }

  /** Messages already received and not yet read. */
  pending(): number {
    return this.queue.length;
  }

  async status(timeoutMs = 15_000): Promise<ServiceError> {
    await until(
      'stream status',
      () => this.error ?? (this.ended ? ({ code: 0 } as ServiceError) : undefined),
      timeoutMs,
    );
    return this.error ?? ({ code: 0 } as ServiceError);
  }

  cancel(): void {
    this.call.cancel();
  }
}

export function dstClient(port: number): destination.DestinationClient {
  return new destination.DestinationClient(`127.0.0.1:${port}`, credentials.createInsecure());
}

/** "add 10.0.0.1:8080 id=... hint=h2", "remove 10.0.0.1:8080", "none exists=false" */
export function describeUpdate(u: destination.Update): string[] {
  const x = u.update;
  if (!x) return ['empty'];
  if (x.$case === 'noEndpoints') return [`none exists=${x.value.exists}`];
  if (x.$case === 'remove')
    return x.value.addrs.map((a) => `remove ${fromTcpAddress(a)?.ip}:${fromTcpAddress(a)?.port}`).sort();
  return x.value.addrs
    .map((a) => {
      const t = fromTcpAddress(a.addr);
      let s = `add ${t?.ip}:${t?.port}`;
      if (a.tlsIdentity?.strategy?.$case === 'dnsLikeIdentity') s += ` id=${a.tlsIdentity.strategy.value.name}`;
      if (a.protocolHint?.protocol) s += ` hint=${a.protocolHint.protocol.$case}`;
      return s;
    })
    .sort();
}

export async function createOrIgnore(admin: KubeClient, path: string, body: unknown): Promise<void> {
  try {
    await admin.request('POST', path, body);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
}

export async function deleteIgnoringMissing(admin: KubeClient, path: string): Promise<void> {
  try {
    await admin.request('DELETE', path);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
  }
}

/** Least privilege for destination: what the chart's ClusterRole and Role must grant. */
export function destinationRbac(name: string, cpNamespace: string, serviceAccount: string) {
  const subject = [{ kind: 'ServiceAccount', name: serviceAccount, namespace: cpNamespace }];
  return {
    clusterRole: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: [''], resources: ['services', 'pods'], verbs: ['get', 'list', 'watch'] },
        {
          apiGroups: ['discovery.k8s.io'],
          resources: ['endpointslices'],
          verbs: ['get', 'list', 'watch', 'create', 'update'],
        },
        { apiGroups: ['workload.minimesh.io'], resources: ['externalworkloads'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    clusterRoleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: subject,
    },
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: cpNamespace },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: cpNamespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: subject,
    },
  };
}
