// The network validator's check: does a connection from this process to an address outside the pod
// end up at the proxy's outbound port? The validator runs before the proxy (an init container), so
// it listens on that port itself, connects to a reserved address, and expects to accept its own
// connection, carrying a random token, on loopback. Traffic that is not redirected goes to the
// reserved address, where nothing answers: refused, unreachable or timed out.
// (Linkerd's linkerd-network-validator does the same with 1.1.1.1:20001; REFERENCE: Linkerd edge docs.)
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, isIP, isIPv6, type Server, type Socket } from 'node:net';
import { ConfigError } from '@minimesh/config';

export interface HostPort {
  host: string;
  port: number;
}

export interface ValidateOptions {
  /** Where to connect: an address outside the pod that nothing answers on. */
  connectAddr: HostPort;
  /** The proxy's outbound port, which the redirect must lead to. */
  listenPort: number;
  timeoutMs: number;
}

export type ValidateResult =
  | { ok: true; ms: number; listen: string }
  | {
      ok: false;
      /** listen: the port could not be bound; not-redirected: the connection went elsewhere. */
      reason: 'listen' | 'not-redirected';
      listen: string;
      detail: string;
    };

const fmt = (hp: HostPort) => (isIPv6(hp.host) ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`);

/** Runs the check once. Never throws: the result says what happened. */
export async function validateRedirect(opts: ValidateOptions): Promise<ValidateResult> {
  // iptables REDIRECT of a locally made connection sends it to the loopback address of its family.
  const loopback = isIPv6(opts.connectAddr.host) ? '::1' : '127.0.0.1';
  const listen = fmt({ host: loopback, port: opts.listenPort });
  const token = randomBytes(16).toString('hex');
  const started = Date.now();
  const accepted: { remotePort: number | undefined }[] = [];
  const server: Server = createServer((sock) => {
    accepted.push({ remotePort: sock.remotePort });
    sock.on('error', () => undefined);
    sock.end(`${token}\n`);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: loopback, port: opts.listenPort, exclusive: true }, () => resolve());
    });
  } catch (err) {
    return { ok: false, reason: 'listen', listen, detail: `cannot listen on ${listen}: ${(err as Error).message}` };
  }
  try {
    const outcome = await new Promise<{ ok: true } | { ok: false; detail: string }>((resolve) => {
      let answer = '';
      const sock: Socket = createConnection({ host: opts.connectAddr.host, port: opts.connectAddr.port });
      const timer = setTimeout(() => {
        sock.destroy();
        resolve({ ok: false, detail: `no answer within ${opts.timeoutMs} ms` });
      }, opts.timeoutMs);
      sock.setEncoding('utf8');
      sock.on('data', (d: string) => (answer += d));
      sock.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve({ ok: false, detail: `connect failed: ${err.code ?? err.message}` });
      });
      sock.on('end', () => {
        clearTimeout(timer);
        const ours = accepted.some((a) => a.remotePort === sock.localPort);
        if (answer.trim() === token && ours) resolve({ ok: true });
        else
          resolve({
            ok: false,
            detail: ours
              ? 'the connection reached our port but the answer was not our token'
              : `something other than ${listen} answered`,
          });
      });
    });
    if (outcome.ok) return { ok: true, ms: Date.now() - started, listen };
    return { ok: false, reason: 'not-redirected', listen, detail: outcome.detail };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** "host:port" or "[v6]:port" → HostPort; throws ConfigError naming what was expected. */
export function parseHostPort(field: string, value: string): HostPort {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(value.trim()) ?? /^([0-9.]+):(\d+)$/.exec(value.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || isIP(m[1] as string) === 0 || !(port >= 1 && port <= 65535))
    throw new ConfigError(field, value, 'an IP address and port, e.g. 192.0.2.2:20001 or [2001:db8::2]:20001');
  return { host: m[1] as string, port };
}

export { fmt as formatHostPort };
