// The inbound connect stage with a fake connector and next stage: to the app's port on 127.0.0.1, the
// mesh's own headers dropped, l5d-client-id set only for a client mTLS named, labels for the client.
import { describe, expect, it } from 'vitest';
import type { Connected } from '../http/upstream.js';
import { InboundLabels } from '../metrics/traffic-labels.js';
import { FakeRequest, inboundConn, recorder, fakeConnector } from '../../test/support/stages.js';
import type { InboundConn } from '../targets.js';
import { AppEndpoints } from '../transport/app.js';
import { pushConnect } from './connect.js';

function setup() {
  const connector = fakeConnector();
  const asked = connector.asked;
  const next = recorder<Connected, unknown>();
  const handler = pushConnect({ connector, labels: new InboundLabels(), app: new AppEndpoints() })(next.next);
  const run = (conn: InboundConn, req: FakeRequest) => handler({ conn, filters: [] }, req.asIncoming);
  return { asked, next, run };
}

describe('inbound connect', () => {
  it("goes to the app's port, drops the caller's mesh headers and sets l5d-client-id from mTLS", () => {
    const { asked, next, run } = setup();
    const conn = inboundConn(8080);
    const req = new FakeRequest('web.shop:80', {
      protocol: 'h2',
      headers: { 'l5d-client-id': 'forged', 'x-minimesh-anything': '1', accept: '*/*' },
    });
    run(conn, req);
    expect(asked).toEqual(['http 127.0.0.1:8080 h2']);
    expect(req.headers).toEqual({ accept: '*/*' });
    const t = next.calls[0]![0];
    expect(t.extra).toEqual({ 'l5d-client-id': conn.clientId });
    expect(t.authority).toBe('');
    expect(t.labels).toMatchObject({
      direction: 'inbound',
      authority: 'web.shop:80',
      target_addr: '10.0.0.9:8080',
      tls: 'true',
      client_id: conn.clientId,
    });
  });

  it('a plaintext client gets no l5d-client-id, and its labels say why', () => {
    const { next, run } = setup();
    run(inboundConn(8080, { tls: 'no_identity', clientId: undefined }), new FakeRequest('web'));
    expect(next.calls[0]![0].extra).toBeUndefined();
    expect(next.calls[0]![0].labels).toMatchObject({ tls: 'no_identity', no_tls_reason: 'no_tls_from_remote' });
  });

  it('a request a peer proxy upgraded from HTTP/1 goes to the app as HTTP/1', () => {
    const { asked, run } = setup();
    run(inboundConn(8080), new FakeRequest('web', { protocol: 'h2', upgradedHttp1: true }));
    expect(asked).toEqual(['http 127.0.0.1:8080 http1']);
  });

  it('an HTTP/1 Upgrade gets a raw connection to the app, the mesh headers left out of its head', () => {
    const { asked, next, run } = setup();
    const req = new FakeRequest('web', { upgrade: true });
    run(inboundConn(9000), req);
    expect(asked).toEqual(['stream 127.0.0.1:9000']);
    expect(next.calls[0]![0].upstream).toMatchObject({ kind: 'stream', identity: undefined });
    expect(req.omit?.('l5d-client-id')).toBe(true);
    expect(req.omit?.('accept')).toBe(false);
  });
});
