// Outbound connections: per-endpoint pools. Meshed endpoints get ONE multiplexed HTTP/2 session over
// mTLS (HTTP/1 rides it with the orig-proto marker); unmeshed endpoints get an HTTP/1 keep-alive pool
// or a plaintext HTTP/2 session; TCP gets a fresh connection (mTLS when the endpoint is meshed).
import { Agent, type AgentOptions } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import type { ClientHttp2Session } from 'node:http2';
import type { TlsCredentials } from '../tls/credentials.js';
import { H2Pool } from '../http/h2-pool.js';
import { armConnectTimeout, connectMtls } from './tls.js';

export class OutboundConnector {
  readonly meshed = new H2Pool();
  readonly plainH2 = new H2Pool();
  readonly agent = new Agent({
    keepAlive: true,
    maxSockets: Infinity,
    maxFreeSockets: 1024,
    scheduling: 'lifo',
    noDelay: true,
  } as AgentOptions);

  constructor(
    private readonly creds: TlsCredentials,
    private readonly timeoutMs: number,
  ) {}

  /** The mTLS HTTP/2 session to a meshed endpoint. */
  meshedSession(ip: string, port: number, identity: string): ClientHttp2Session {
    return this.meshed.get(`${ip}:${port}#${identity}`, () =>
      connectMtls(this.creds, ip, port, identity, ['h2'], this.timeoutMs),
    );
  }

  plainSession(ip: string, port: number): ClientHttp2Session {
    return this.plainH2.get(`${ip}:${port}`, () => this.tcp(ip, port));
  }

  tcp(ip: string, port: number): Socket {
    const s = netConnect({ host: ip, port, noDelay: true });
    armConnectTimeout(s, this.timeoutMs, `${ip}:${port}`);
    return s;
  }

  /** A raw connection for TCP or an upgraded (WebSocket) exchange. */
  stream(ip: string, port: number, identity: string | undefined, alpn: string[]): Socket {
    return identity ? connectMtls(this.creds, ip, port, identity, alpn, this.timeoutMs) : this.tcp(ip, port);
  }

  close(): void {
    this.meshed.close();
    this.plainH2.close();
    this.agent.destroy();
  }
}
