// grpc.health.v1 for destination and identity, on the generated messages: no .proto parsing at start-up
// (grpc-health-check loads its .proto with proto-loader when imported, ~100 ms of CPU and ~5 MB).
import { status as grpcStatus, type Server, type ServerWritableStream } from '@grpc/grpc-js';
import {
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthService,
  type HealthCheckRequest,
  type HealthCheckResponse,
  type HealthServer,
} from './gen/health.js';

export type HealthStatus = 'SERVING' | 'NOT_SERVING' | 'UNKNOWN';

const CODE: Record<HealthStatus, ServingStatus> = {
  SERVING: ServingStatus.SERVING,
  NOT_SERVING: ServingStatus.NOT_SERVING,
  UNKNOWN: ServingStatus.UNKNOWN,
};

/** Statuses by service name ("" is the server as a whole), served over Check, List and Watch. */
export class HealthImplementation {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<ServerWritableStream<HealthCheckRequest, HealthCheckResponse>>>();

  constructor(initial: Record<string, HealthStatus> = {}) {
    for (const [service, s] of Object.entries(initial)) this.statuses.set(service, CODE[s]);
  }

  setStatus(service: string, s: HealthStatus): void {
    const code = CODE[s];
    if (this.statuses.get(service) === code) return;
    this.statuses.set(service, code);
    for (const call of this.watchers.get(service) ?? []) call.write({ status: code });
  }

  addToServer(server: Server): void {
    const impl: HealthServer = {
      check: (call, callback) => {
        const s = this.statuses.get(call.request.service);
        if (s === undefined)
          callback({
            code: grpcStatus.NOT_FOUND,
            details: `Health status unknown for service ${call.request.service}`,
          });
        else callback(null, { status: s });
      },
      list: (_call, callback) => {
        const statuses: Record<string, HealthCheckResponse> = {};
        for (const [name, s] of this.statuses) statuses[name] = { status: s };
        callback(null, { statuses });
      },
      watch: (call) => {
        const service = call.request.service;
        let set = this.watchers.get(service);
        if (!set) this.watchers.set(service, (set = new Set()));
        set.add(call);
        call.on('cancelled', () => set.delete(call));
        call.write({ status: this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN });
      },
    };
    server.addService(HealthService, impl);
  }
}
