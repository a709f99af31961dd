// explain's policy part: the Server, the route and the authorization, in words, with the proxy's decision.
import { describe, expect, it } from 'vitest';
import { explainInboundPolicy } from './explain.js';
import { PolicyIndex } from './index/policy-index.js';
import { TEST_CLUSTER } from './testing.js';

const CLIENT = 'client.shop.serviceaccount.identity.minimesh.cluster.local';

function index(): PolicyIndex {
  const i = new PolicyIndex(TEST_CLUSTER);
  i.apply('Pod', {
    kind: 'Pod',
    metadata: {
      name: 'web-1',
      namespace: 'shop',
      labels: { app: 'web' },
      annotations: { 'config.minimesh.io/default-inbound-policy': 'deny' },
    },
    spec: { containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] },
  });
  i.apply('Server', {
    kind: 'Server',
    metadata: { name: 'web-http', namespace: 'shop' },
    spec: { podSelector: { matchLabels: { app: 'web' } }, port: 'http' },
  });
  i.apply('AuthorizationPolicy', {
    kind: 'AuthorizationPolicy',
    metadata: { name: 'client-only', namespace: 'shop' },
    spec: {
      targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
      requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
    },
  });
  return i;
}
const target = { namespace: 'shop', pod: 'web-1', port: 8080 };

describe('explain: inbound policy', () => {
  it('names the Server, the route and the policy that admits a request', () => {
    const e = explainInboundPolicy(index(), target, { ip: '10.0.0.5', identity: CLIENT }, { method: 'get', path: '/' });
    expect(e.outcome).toBe('admitted');
    expect(e.lines).toEqual([
      'Port 8080 of shop/web-1: it is selected by Server web-http; protocol detect (timeout 10s).',
      `GET / takes default route default; from a meshed client ${CLIENT} (mTLS) from 10.0.0.5 it is admitted by AuthorizationPolicy client-only (counted in inbound_http_authz_allow_total).`,
    ]);
  });

  it("adds the Server's rate limit after an admitted request", () => {
    const i = index();
    i.apply('HTTPLocalRateLimitPolicy', {
      kind: 'HTTPLocalRateLimitPolicy',
      metadata: { name: 'web-limit', namespace: 'shop' },
      spec: {
        targetRef: { group: 'policy.minimesh.io', kind: 'Server', name: 'web-http' },
        identity: { requestsPerSecond: 50 },
      },
    });
    const e = explainInboundPolicy(i, target, { ip: '10.0.0.5', identity: CLIENT }, { method: 'GET', path: '/' });
    expect(e.lines[2]).toBe(
      "Then the Server's rate limit applies: HTTPLocalRateLimitPolicy web-limit: 50 rps per identity (over it: 429); counted in inbound_http_local_ratelimit_total.",
    );
  });

  it('says what would have admitted a denied request, and the 403', () => {
    const e = explainInboundPolicy(index(), target, {}, { method: 'GET', path: '/x' });
    expect(e.outcome).toBe('forbidden');
    expect(e.lines[1]).toBe(
      `GET /x takes default route default; from an unmeshed client (plaintext) from an in-cluster address it is admitted by none of: AuthorizationPolicy client-only: mesh TLS as ${CLIENT} from 0.0.0.0/0,::/0.`,
    );
    expect(e.lines[2]).toMatch(/403 Forbidden/);
  });

  it('explains a connection to a port under the default policy', () => {
    const e = explainInboundPolicy(index(), { ...target, port: 9000 }, { identity: CLIENT });
    expect(e.outcome).toBe('closed');
    expect(e.lines).toEqual([
      'Port 9000 of shop/web-1: no Server selects it, so default policy deny; protocol detect (timeout 10s).',
      'Nothing is authorized on this port.',
      'The proxy closes the connection and counts it in inbound_tcp_authz_deny_total.',
    ]);
    expect(explainInboundPolicy(index(), { ...target, pod: 'gone' }, {}).outcome).toBe('unknown-pod');
  });
});
