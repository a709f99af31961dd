// The inbound rate-limit stage with a fake authorization and next stage: an admitted request goes on;
// a refused one is answered 429 with Retry-After (whole seconds, at least 1) and goes no further.
import { describe, expect, it } from 'vitest';
import { FakeRequest, inboundConn, recorder } from '../../test/support/stages.js';
import type { ProxyError } from '../errors.js';
import type { RateLimited } from '../policy/local-rate-limit.js';
import { toHttpErrorResponse } from '../respond.js';
import type { Authorized } from '../targets.js';
import { pushRateLimit } from './rate-limit.js';

/** A fake request that keeps what it failed with. */
class Req extends FakeRequest {
  readonly errors: unknown[] = [];
  override fail(err: unknown): void {
    this.errors.push(err);
    super.fail(err);
  }
}

function setup(verdicts: Array<RateLimited | undefined>) {
  const asked: Array<string | undefined> = [];
  const next = recorder<Authorized, unknown>();
  const handler = pushRateLimit({
    checkRateLimit: (conn) => {
      asked.push(conn.clientId);
      return verdicts.shift();
    },
  })(next.next);
  return { asked, next, handler };
}

describe('inbound rate limit', () => {
  it('passes an admitted request on, and answers a refused one 429 with Retry-After', () => {
    const { asked, next, handler } = setup([
      undefined,
      { scope: 'identity', message: 'per-identity rate limit exceeded: 50rps', retryAfterMs: 20 },
      { scope: 'total', message: 'total rate limit exceeded: 1rps', retryAfterMs: 2500 },
    ]);
    const target: Authorized = { conn: inboundConn(), filters: [] };
    const reqs = [0, 1, 2].map(() => new Req('web', { path: '/' }));
    for (const r of reqs) handler(target, r.asIncoming);
    expect(next.calls).toEqual([[target, reqs[0]]]);
    expect(asked).toHaveLength(3);
    expect(reqs[1]!.events).toEqual(['fail MINIMESH_PROXY_RATE_LIMITED']);
    const errs = reqs.slice(1).map((r) => r.errors[0] as ProxyError);
    expect(errs.map((e) => e.retryAfterSeconds)).toEqual([1, 3]);
    const wire = toHttpErrorResponse(errs[0]);
    expect(wire.status).toBe(429);
    expect(wire.headers['retry-after']).toBe('1');
    expect(wire.headers.connection).toBeUndefined();
    expect(wire.headers['x-minimesh-proxy-error']).toBe(
      'MINIMESH_PROXY_RATE_LIMITED: per-identity rate limit exceeded: 50rps',
    );
  });

  it('without policies, every request goes on unchecked', () => {
    const next = recorder<Authorized, unknown>();
    const target: Authorized = { conn: inboundConn(), filters: [] };
    const req = new FakeRequest('web', { path: '/' });
    pushRateLimit(undefined)(next.next)(target, req.asIncoming);
    expect(next.calls).toEqual([[target, req]]);
  });
});
