// viz authz's queries, rows and table over Prometheus answers shaped as minimesh-proxy's authorization
// and rate-limit metrics scrape (linkerd2-proxy's names and labels).
import { describe, expect, it } from 'vitest';
import { authzQueries, renderAuthz, toAuthzRows } from './authz.js';
import type { Sample } from './prometheus.js';

const srv = { srv_group: 'policy.minimesh.io', srv_kind: 'server', srv_name: 'web-http' };
const s = (metric: Record<string, string>, value: number): Sample => ({ metric: { ...srv, ...metric }, value });

describe('viz authz', () => {
  it("queries the workload's authorization and rate-limit series by Linkerd's names", () => {
    const q = authzQueries({ kind: 'deployment', namespace: 'shop', name: 'web', window: '1m' });
    expect(q.allow).toBe(
      'sum by (srv_group, srv_kind, srv_name, route_group, route_kind, route_name, authz_group, authz_kind, authz_name) (increase(inbound_http_authz_allow_total{namespace="shop", deployment="web"}[1m]))',
    );
    expect(q.deny).toContain('inbound_http_authz_deny_total{namespace="shop", deployment="web"}[1m]');
    expect(q.rateLimited).toContain(
      'ratelimit_scope) (increase(inbound_http_local_ratelimit_total{namespace="shop", deployment="web"}[1m]))',
    );
  });

  it('allowed per authorization, refused per route, rate limited per Server with its policy and scope', () => {
    const rows = toAuthzRows(
      {
        allow: [
          s({ route_name: 'default', authz_kind: 'authorizationpolicy', authz_name: 'web-clients' }, 600),
          s({ srv_kind: 'default', srv_name: 'all-unauthenticated', authz_kind: 'default', authz_name: 'probe' }, 0),
        ],
        deny: [s({ route_name: 'default' }, 60)],
        rateLimited: [
          s(
            {
              ratelimit_group: 'policy.minimesh.io',
              ratelimit_kind: 'HTTPLocalRateLimitPolicy',
              ratelimit_name: 'web-limit',
              ratelimit_scope: 'identity',
            },
            300,
          ),
        ],
      },
      60,
    );
    expect(
      rows.map((r) => [r.server, r.route, r.authorization, r.rateLimit, r.allowed, r.unauthorized, r.rateLimited]),
    ).toEqual([
      ['web-http', '', '', 'HTTPLocalRateLimitPolicy/web-limit (identity)', 0, 0, 300],
      ['web-http', 'default', '', '', 0, 60, 0],
      ['web-http', 'default', 'authorizationpolicy/web-clients', '', 600, 0, 0],
    ]);
    const table = renderAuthz(rows);
    expect(table.split('\n')[0]).toMatch(
      /^SERVER\s+ROUTE\s+AUTHORIZATION\s+RPS\s+UNAUTHORIZED\s+RATE_LIMITED\s+RATE_LIMIT$/,
    );
    expect(table).toMatch(
      /web-http\s+-\s+-\s+0\.0rps\s+0\.0rps\s+5\.0rps\s+HTTPLocalRateLimitPolicy\/web-limit \(identity\)/,
    );
    expect(table).toMatch(/web-http\s+default\s+authorizationpolicy\/web-clients\s+10\.0rps\s+0\.0rps\s+0\.0rps\s+-/);
  });

  it('no traffic, no rows', () => {
    expect(toAuthzRows({ allow: [s({ authz_name: 'x' }, 0)] }, 60)).toEqual([]);
  });
});
