import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AddonMissingError,
  getOriginalDst,
  getTcpUserTimeout,
  NotRedirectedError,
  OriginalDstError,
  setTcpUserTimeout,
} from './index.js';

async function acceptOne(host: string): Promise<{ server: Server; client: Socket; accepted: Socket }> {
  const server = createServer();
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const acceptedP = once(server, 'connection') as Promise<[Socket]>;
  const client = createConnection({ host, port });
  await once(client, 'connect');
  const [accepted] = await acceptedP;
  return { server, client, accepted };
}

describe('getOriginalDst', () => {
  const open: Array<{ server: Server; client: Socket; accepted: Socket }> = [];
  afterEach(() => {
    for (const c of open.splice(0)) {
      c.client.destroy();
      c.accepted.destroy();
      c.server.close();
    }
    delete process.env.MINIMESH_ORIGINAL_DST_ADDON;
    vi.resetModules();
  });

  it.each(['127.0.0.1', '::1'])('says a direct (not redirected) connection on %s was not redirected', async (host) => {
    const c = await acceptOne(host);
    open.push(c);
    let caught: unknown;
    try {
      getOriginalDst(c.accepted);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(NotRedirectedError);
    expect((caught as NotRedirectedError).code).toBe('MINIMESH_PROXY_NOT_REDIRECTED');
    expect((caught as Error).message).toMatch(
      /^original destination of .+: the connection was not redirected by iptables/,
    );
  });

  it('refuses a destroyed socket with a clear error', async () => {
    const c = await acceptOne('127.0.0.1');
    open.push(c);
    c.accepted.destroy();
    expect(() => getOriginalDst(c.accepted)).toThrow(OriginalDstError);
    expect(() => getOriginalDst(c.accepted)).toThrow(/the socket has no file descriptor/);
  });

  it('tells the user to run npm run setup when the addon is missing', async () => {
    process.env.MINIMESH_ORIGINAL_DST_ADDON = '/nonexistent/original_dst.node';
    vi.resetModules();
    const fresh = await import('./index.js');
    const c = await acceptOne('127.0.0.1');
    open.push(c);
    let caught: unknown;
    try {
      fresh.getOriginalDst(c.accepted);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(fresh.AddonMissingError);
    expect(caught).not.toBeInstanceOf(AddonMissingError); // a fresh module instance, so the cache was not reused
    expect((caught as Error).message).toContain('/nonexistent/original_dst.node');
    expect((caught as Error).message).toContain('run `npm run setup`');
  });

  it('sets TCP_USER_TIMEOUT and reads it back; a closed socket or a missing addon is false, not an error', async () => {
    const c = await acceptOne('127.0.0.1');
    open.push(c);
    expect(getTcpUserTimeout(c.accepted)).toBe(0);
    expect(setTcpUserTimeout(c.accepted, 30_000)).toBe(true);
    expect(getTcpUserTimeout(c.accepted)).toBe(30_000);
    c.client.destroy();
    c.accepted.destroy();
    expect(setTcpUserTimeout(c.accepted, 30_000)).toBe(false);

    process.env.MINIMESH_ORIGINAL_DST_ADDON = '/nonexistent/original_dst.node';
    vi.resetModules();
    const fresh = await import('./index.js');
    const d = await acceptOne('127.0.0.1');
    open.push(d);
    expect(fresh.setTcpUserTimeout(d.accepted, 30_000)).toBe(false);
    expect(fresh.setTcpUserTimeout(d.accepted, 30_000)).toBe(false);
    expect(getTcpUserTimeout(d.accepted)).toBe(0);
  });
});
