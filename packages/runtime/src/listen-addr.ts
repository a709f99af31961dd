// "0.0.0.0:8080", "127.0.0.1:4140", "[::]:4143", ":8086" → { host, port }
import { isIP } from 'node:net';

export class ListenAddrError extends Error {
  readonly code = 'MINIMESH_RUNTIME_BAD_ADDR';
  /** Bad input: a program that meets it at start exits 2. */
  readonly exitCode = 2;
}

export function parseListenAddr(field: string, value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value.trim());
  const host = m ? (m[1] ?? m[2] ?? '') : '';
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535 || (host !== '' && host !== 'localhost' && isIP(host) === 0)) {
    throw new ListenAddrError(
      `${field}: "${value}" is not valid: expected host:port such as 0.0.0.0:8080, 127.0.0.1:4140 or [::]:4143`,
    );
  }
  return { host: host === '' ? '0.0.0.0' : host, port };
}
