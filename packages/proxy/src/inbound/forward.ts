// Inbound forwarding to the app on 127.0.0.1:<original port>: a keep-alive HTTP/1 pool, an HTTP/2 session
// per port, and raw TCP.
import { Agent, type AgentOptions } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import { H2Pool } from '../http/h2-pool.js';
import { armConnectTimeout } from '../outbound/tls.js';

export const APP_HOST = '127.0.0.1';

export class AppForwarder {
  readonly agent = new Agent({
    keepAlive: true,
    maxSockets: Infinity,
    maxFreeSockets: 1024,
    scheduling: 'lifo',
    noDelay: true,
  } as AgentOptions);
  readonly h2 = new H2Pool();

  constructor(private readonly timeoutMs: number) {}

  session(port: number): ClientHttp2Session {
    return this.h2.get(`${APP_HOST}:${port}`, () => this.tcp(port));
  }

  tcp(port: number): Socket {
    const s = netConnect({ host: APP_HOST, port, noDelay: true });
    armConnectTimeout(s, this.timeoutMs, `${APP_HOST}:${port}`);
    return s;
  }

  close(): void {
    this.h2.close();
    this.agent.destroy();
  }
}
