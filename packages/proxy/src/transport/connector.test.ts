// The connector's choice of transport: a meshed endpoint gets mTLS, an endpoint at one of this pod's own
// IPs (the pod itself) gets plaintext straight to the app, whatever identity destination gave it.
import { afterEach, describe, expect, it } from 'vitest';
import { discovered } from '../../test/support/stages.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { Connector } from './connector.js';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { listen, tcpTimer } from '../../test/support/loopback.js';
import { getTcpUserTimeout } from '../native/index.js';

const ID = 'web.shop.serviceaccount.identity.minimesh.cluster.local';
// meshIdentity only asks whether we hold a certificate (a TLS context); nothing here connects.
const creds = { context: {} } as unknown as TlsCredentials;
const open: Connector[] = [];

function connector(localIps: string[] = []): Connector {
  const c = new Connector(creds, 1000, undefined, new Set(localIps));
  open.push(c);
  return c;
}

afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

describe('Connector', () => {
  it('originates mTLS to a meshed endpoint that is not this pod', () => {
    const c = connector(['10.0.0.9']);
    const ep = discovered('10.0.0.1', 8080, ID);
    expect(c.isLocal(ep)).toBe(false);
    expect(c.meshIdentity(ep)).toBe(ID);
  });

  it("reaches an endpoint at this pod's own IP in plaintext: HTTP/1 pool, raw TCP, no identity", () => {
    const c = connector(['10.0.0.9', 'fd00::9']);
    for (const ip of ['10.0.0.9', 'fd00::9']) {
      const ep = discovered(ip, 8080, ID);
      expect(c.isLocal(ep)).toBe(true);
      expect(c.meshIdentity(ep)).toBeUndefined();
      expect(c.http(ep, 'http1')).toMatchObject({ kind: 'h1', endpoint: ep });
    }
  });

  it('dials with TCP keepalive (10 s idle) and TCP_USER_TIMEOUT (30 s)', async () => {
    const port = await listen(createServer());
    const c = connector(['127.0.0.1']);
    const s = c.stream(discovered('127.0.0.1', port, ID));
    await once(s, 'connect');
    // Probing within the minute (ss words it "keepalive,9.9…,0"; the kernel's own default would be 2 h).
    expect(tcpTimer(s.localPort!, port)).toMatch(/^keepalive,[0-9.]+(sec|ms),0$/);
    expect(getTcpUserTimeout(s)).toBe(30_000);
    s.destroy();
  });

  it('without a certificate nothing is meshed', () => {
    const c = new Connector({ context: undefined } as unknown as TlsCredentials, 1000);
    open.push(c);
    expect(c.meshIdentity(discovered('10.0.0.1', 8080, ID))).toBeUndefined();
  });
});
