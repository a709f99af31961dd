// The outbound connect stage with a fake connector and next stage: an exchange gets the connector's
// HTTP upstream, an Upgrade a raw connection; the labels say mTLS and server_id when the endpoint is
// meshed, the authority is the Concrete's.
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { Connected } from '../http/upstream.js';
import { OutboundLabels } from '../metrics/traffic-labels.js';
import { discovered, fakeSocket, FakeRequest, recorder, fakeConnector } from '../../test/support/stages.js';
import type { Balanced } from '../targets.js';
import type { TlsCredentials } from '../tls/credentials.js';
import { Connector } from '../transport/connector.js';
import { pushConnect } from './connect.js';

const ID = 'web.shop.serviceaccount.identity.minimesh.cluster.local';

function setup(stream: () => Socket = () => fakeSocket()) {
  const connector = fakeConnector(stream);
  const asked = connector.asked;
  const next = recorder<Connected, FakeRequest>();
  const handler = pushConnect<FakeRequest>({ connector, labels: new OutboundLabels() })(next.next);
  return { asked, next, handler };
}

const meshed: Balanced = {
  concrete: { kind: 'balanced', authority: 'web.shop.svc.cluster.local:80', set: { list: [] } },
  endpoint: discovered('10.0.0.1', 8080, ID),
};

describe('outbound connect', () => {
  it("an exchange goes to the connector's upstream for its protocol, labelled mTLS to the endpoint", () => {
    const { asked, next, handler } = setup();
    handler(meshed, new FakeRequest(undefined, { protocol: 'h2' }));
    expect(asked).toEqual(['http 10.0.0.1:8080 h2']);
    const t = next.calls[0]![0];
    expect(t.authority).toBe('web.shop.svc.cluster.local:80');
    expect(t.labels).toMatchObject({
      direction: 'outbound',
      authority: 'web.shop.svc.cluster.local:80',
      target_addr: '10.0.0.1:8080',
      tls: 'true',
      server_id: ID,
      dst_pod: 'pod-10.0.0.1',
    });
  });

  it('an unmeshed endpoint is labelled plaintext, and says why', () => {
    const { next, handler } = setup();
    const ep = discovered('10.0.0.2', 80);
    handler(
      {
        concrete: { kind: 'forward', authority: '10.0.0.2:80', endpoint: { ...ep, discovered: false } },
        endpoint: { ...ep, discovered: false },
      },
      new FakeRequest(),
    );
    expect(next.calls[0]![0].labels).toMatchObject({ tls: 'no_identity', no_tls_reason: 'no_endpoint', server_id: '' });
  });

  it('an HTTP/1 Upgrade gets a raw connection of its own; one that cannot be opened is answered', () => {
    const { asked, next, handler } = setup();
    handler(meshed, new FakeRequest(undefined, { upgrade: true }));
    expect(asked).toEqual(['stream 10.0.0.1:8080']);
    expect(next.calls[0]![0].upstream).toMatchObject({ kind: 'stream', identity: ID });
    const failing = setup(() => {
      throw Object.assign(new Error('no certificate yet'), { code: 'MINIMESH_PROXY_NOT_READY' });
    });
    const req = new FakeRequest(undefined, { upgrade: true });
    failing.handler(meshed, req);
    expect(req.events).toEqual(['fail MINIMESH_PROXY_NOT_READY']);
    expect(failing.next.calls).toEqual([]);
  });

  it('an endpoint that is this pod itself goes plaintext to the app, labelled loopback (not mTLS to its own app port)', () => {
    const connector = new Connector(
      { context: {} } as unknown as TlsCredentials,
      1000,
      undefined,
      new Set(['10.0.0.1']),
    );
    const next = recorder<Connected, FakeRequest>();
    pushConnect<FakeRequest>({ connector, labels: new OutboundLabels((ep) => connector.isLocal(ep)) })(next.next)(
      meshed,
      new FakeRequest(),
    );
    connector.close();
    const t = next.calls[0]![0];
    expect(t.upstream).toMatchObject({ kind: 'h1' });
    expect(t.labels).toMatchObject({ tls: 'no_identity', no_tls_reason: 'loopback', server_id: '' });
  });
});
