// The retry transport alone: a real HTTP/1 exchange (a caller on loopback), a real upstream app, the
// stack below the route replaced by `route` (it picks the upstream, or rejects), and a policy stub that
// retries 503 up to twice. The decision itself is tested in policy/retry-policy.test.ts.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { H1Pool } from './h1-pool.js';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../errors.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { plainEndpoint } from '../targets.js';
import { H1Exchange, type ExchangeSink, type HttpExchange } from './exchange.js';
import { sendWithRetries, type RetryAttempt, type RetryPolicy } from './retry.js';
import { afterTest, listen } from '../../test/support/loopback.js';

const log = createLogger({ name: 'test', level: 'silent' });
/** A policy stub: 503 and a timed-out attempt are retryable; two retries at most; no backoff. */
function policy(opts: { maxRequestBytes?: number; attemptTimeoutMs?: number } = {}): RetryPolicy {
  return {
    maxRequestBytes: opts.maxRequestBytes ?? 1024,
    decide(attempt, outcome, body) {
      const retryable = (outcome.kind === 'response' && outcome.status === 503) || outcome.kind === 'timeout';
      if (!retryable) return 'done';
      if (!body.complete || body.capped) return 'unbuffered';
      return attempt > 2 ? 'limit' : 'retry';
    },
    backoffMs: () => 0,
    attemptTimeoutMs: (attempt) => (attempt <= 2 ? opts.attemptTimeoutMs : undefined),
    counters: { requests: { value: 0 }, successes: { value: 0 }, limitExceeded: { value: 0 }, overflow: { value: 0 } },
  };
}

/** An upstream app answering each request with answers[n] (the last one again when they run out). */
async function app(answers: Array<(res: ServerResponse) => void>) {
  const bodies: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const answer = answers[Math.min(bodies.length, answers.length - 1)]!;
      bodies.push(body);
      answer(res);
    });
  });
  return { port: await listen(server), bodies };
}

const status = (code: number) => (res: ServerResponse) =>
  res.writeHead(code, { 'x-code': String(code) }).end(`${code}`);

/** A caller's proxy: every request becomes an H1Exchange sent with retries through `route`. */
async function proxy(p: RetryPolicy, route: (attempt: RetryAttempt, ex: HttpExchange) => void) {
  const sink: ExchangeSink = { direction: 'outbound', metrics: new ProxyMetrics(new Registry()), log };
  const server = createServer((req, res) => {
    const ex = new H1Exchange(req, res, sink);
    sendWithRetries(ex, p, (attempt) => route(attempt, ex), log);
  });
  return { port: await listen(server), metrics: sink.metrics };
}

/** Sends every attempt to the app at `port`. */
function toApp(port: number) {
  const pool = new H1Pool();
  afterTest(() => pool.close());
  const ep = plainEndpoint('127.0.0.1', port);
  const agent = pool.endpoint(ep.key, ep.ip, ep.port);
  return (attempt: RetryAttempt) =>
    attempt.forward({ upstream: { kind: 'h1', endpoint: ep, agent }, labels: {}, authority: '', extra: undefined });
}

function post(port: number, body: string): Promise<{ status: number; body: string; error?: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text, error: res.headers['x-minimesh-proxy-error'] as string }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the retry transport', () => {
  it('sends a retryable answer again, the body replayed, and gives the caller the second answer', async () => {
    const upstream = await app([status(503), status(200)]);
    const p = policy();
    const px = await proxy(p, toApp(upstream.port));
    const r = await post(px.port, 'the body');
    expect(r).toMatchObject({ status: 200, body: '200' });
    expect(upstream.bodies).toEqual(['the body', 'the body']);
    expect(p.counters.requests.value).toBe(1);
    expect(p.counters.successes.value).toBe(1);
  });

  it('stops at the limit: the last retryable answer goes back', async () => {
    const upstream = await app([status(503)]);
    const p = policy();
    const px = await proxy(p, toApp(upstream.port));
    expect((await post(px.port, 'x')).status).toBe(503);
    expect(upstream.bodies).toHaveLength(3);
    expect(p.counters.limitExceeded.value).toBe(1);
  });

  it('does not retry a body larger than it keeps', async () => {
    const upstream = await app([status(503), status(200)]);
    const p = policy({ maxRequestBytes: 4 });
    const px = await proxy(p, toApp(upstream.port));
    expect((await post(px.port, 'longer than four bytes')).status).toBe(503);
    expect(upstream.bodies).toEqual(['longer than four bytes']);
    expect(p.counters.requests.value).toBe(0);
  });

  it('cuts an attempt at its own timeout and retries it', async () => {
    const upstream = await app([() => undefined, status(200)]);
    const p = policy({ attemptTimeoutMs: 100 });
    const px = await proxy(p, toApp(upstream.port));
    expect((await post(px.port, 'slow')).status).toBe(200);
    expect(upstream.bodies).toEqual(['slow', 'slow']);
  });

  it('with nowhere to send a retry, the held answer goes back (overflow)', async () => {
    const upstream = await app([status(503)]);
    const p = policy();
    const send = toApp(upstream.port);
    const px = await proxy(p, (attempt) => {
      if (attempt.n === 1) return send(attempt);
      attempt.reject(new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', 'service web: no endpoints'));
    });
    expect((await post(px.port, 'x')).status).toBe(503);
    expect(upstream.bodies).toHaveLength(1);
    expect(p.counters.overflow.value).toBe(1);
  });

  it('a first attempt nothing can take is the exchange refused, counted as the proxy error it is', async () => {
    const p = policy();
    const px = await proxy(p, (attempt) =>
      attempt.reject(new ProxyError('MINIMESH_PROXY_NO_ENDPOINTS', 'service web: no endpoints')),
    );
    const r = await post(px.port, 'x');
    expect(r.status).toBe(503);
    expect(r.error).toMatch(/^MINIMESH_PROXY_NO_ENDPOINTS/);
    const text = await px.metrics.registry.metrics();
    expect(text).toMatch(/proxy_errors_total\{direction="outbound",error="MINIMESH_PROXY_NO_ENDPOINTS"\} 1/);
  });
});
