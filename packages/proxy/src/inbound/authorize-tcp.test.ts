// The inbound authorize stage for connections that are not HTTP, with a fake authorization and next
// stage: admitted → on; denied → reset.
import { describe, expect, it } from 'vitest';
import type { AuthzConn, InboundAuthz } from '../policy/inbound-authz.js';
import { fakeSocket, inboundConn, targets } from '../../test/support/stages.js';
import type { InboundConn, Opaque } from '../targets.js';
import { pushAuthorizeTcp } from './authorize-tcp.js';

function authz(admit: (c: AuthzConn) => boolean): InboundAuthz {
  return {
    policy: () => {
      throw new Error('not asked here');
    },
    admitConnection: admit,
    checkRequest: () => {
      throw new Error('not asked here');
    },
    checkRateLimit: () => {
      throw new Error('not asked here');
    },
  };
}

function run(a: InboundAuthz | undefined, conn: InboundConn) {
  const next = targets<Opaque<InboundConn>>();
  const socket = fakeSocket();
  const target: Opaque<InboundConn> = { kind: 'opaque', parent: conn, socket, prefix: Buffer.alloc(0) };
  void pushAuthorizeTcp(a)(next.next)(target);
  return { next, socket, target };
}

describe('inbound authorize (connections)', () => {
  it("asks with the connection's view (client, TLS, target) and hands on an admitted one", () => {
    const seen: AuthzConn[] = [];
    const { next, target } = run(
      authz((c) => (seen.push(c), true)),
      inboundConn(5432),
    );
    expect(next.seen).toEqual([target]);
    expect(seen[0]).toMatchObject({ targetAddr: '10.0.0.9:5432', targetPort: 5432, tls: 'true', clientIp: '10.0.0.7' });
  });

  it('resets a denied connection', () => {
    const { next, socket } = run(
      authz(() => false),
      inboundConn(5432, { tls: 'no_identity', clientId: undefined }),
    );
    expect(next.seen).toEqual([]);
    expect(socket.destroyedBy).toEqual(['reset']);
  });

  it('without policies every connection goes on', () => {
    const { next, target } = run(undefined, inboundConn());
    expect(next.seen).toEqual([target]);
  });
});
