// The retry decision, as linkerd2-proxy's route retry makes it.
import type { CompiledRetry } from '@minimesh/policy/client';
import { describe, expect, it } from 'vitest';
import {
  attemptTimeoutMs,
  canBuffer,
  decideRetry,
  isRetryableOutcome,
  retryBackoffMs,
  type AttemptOutcome,
  type BodyState,
} from './retry-policy.js';

/** What minimesh's controller sends for retry.minimesh.io/http: 5xx, limit: 2, timeout: 200ms. */
const RETRY: CompiledRetry = {
  maxRetries: 2,
  grpcCodes: [],
  maxRequestBytes: 64 * 1024,
  statusRanges: [[500, 599]],
  timeoutMs: 200,
  backoff: { minMs: 25, maxMs: 250, jitter: 1 },
};
const BUFFERED: BodyState = { complete: true, capped: false };
const status = (s: number): AttemptOutcome => ({ kind: 'response', status: s });

describe('gRPC retries', () => {
  // A GRPCRoute retried on unavailable and internal: the trailers-only status in the response head.
  const GRPC: CompiledRetry = { ...RETRY, statusRanges: [], grpcCodes: [13, 14] };
  const grpc = (code: number | undefined): AttemptOutcome => ({ kind: 'response', status: 200, grpcStatus: code });

  it('a retried gRPC code is retried, another code, an OK and a plain 200 are not', () => {
    expect(decideRetry(GRPC, 1, grpc(14), BUFFERED)).toBe('retry');
    expect(decideRetry(GRPC, 1, grpc(13), BUFFERED)).toBe('retry');
    expect(decideRetry(GRPC, 3, grpc(14), BUFFERED)).toBe('limit');
    expect(decideRetry(GRPC, 1, grpc(5), BUFFERED)).toBe('done');
    expect(decideRetry(GRPC, 1, grpc(0), BUFFERED)).toBe('done');
    expect(decideRetry(GRPC, 1, grpc(undefined), BUFFERED)).toBe('done');
    // An HTTP route's ranges never retry on a gRPC code.
    expect(decideRetry(RETRY, 1, grpc(14), BUFFERED)).toBe('done');
  });
});

describe('decideRetry', () => {
  it.each<[string, number, AttemptOutcome, BodyState, string]>([
    ['a 503 on the first attempt is retried', 1, status(503), BUFFERED, 'retry'],
    ['a 500 on the second attempt is retried (limit 2)', 2, status(500), BUFFERED, 'retry'],
    ['a 503 on the third attempt exceeds the limit', 3, status(503), BUFFERED, 'limit'],
    ['a 200 is done', 1, status(200), BUFFERED, 'done'],
    ['a 404 is not in 5xx: done', 1, status(404), BUFFERED, 'done'],
    ['a 429 is not in 5xx: done', 2, status(429), BUFFERED, 'done'],
    ["the attempt's timeout is retryable", 1, { kind: 'timeout' }, BUFFERED, 'retry'],
    ['a refused HTTP/2 stream is retryable', 1, { kind: 'refused' }, BUFFERED, 'retry'],
    ['another failure (connection refused, reset) is not retried', 1, { kind: 'error' }, BUFFERED, 'done'],
    ['a body past the buffer is not retried', 1, status(503), { complete: true, capped: true }, 'unbuffered'],
    [
      'a body still streaming when the response came is not retried',
      1,
      status(503),
      { complete: false, capped: false },
      'unbuffered',
    ],
    ['an unbuffered body with a 200 is simply done', 1, status(200), { complete: false, capped: true }, 'done'],
  ])('%s', (_name, attempt, outcome, body, want) => {
    expect(decideRetry(RETRY, attempt, outcome, body)).toBe(want);
  });

  it('no status ranges: only timeouts and refused streams are retried', () => {
    const r = { ...RETRY, statusRanges: [] };
    expect(isRetryableOutcome(r, status(503))).toBe(false);
    expect(isRetryableOutcome(r, { kind: 'timeout' })).toBe(true);
    expect(decideRetry(r, 1, status(503), BUFFERED)).toBe('done');
  });

  it('status ranges are inclusive at both ends (gateway-error = 502-504)', () => {
    const r = { ...RETRY, statusRanges: [[502, 504]] as Array<[number, number]> };
    expect([501, 502, 503, 504, 505].map((s) => isRetryableOutcome(r, status(s)))).toEqual([
      false,
      true,
      true,
      true,
      false,
    ]);
  });

  it('limit 0 (a policy that names no retries) never retries', () => {
    expect(decideRetry({ ...RETRY, maxRetries: 0 }, 1, status(503), BUFFERED)).toBe('limit');
  });
});

describe('canBuffer', () => {
  it('takes bodies up to max_request_bytes by Content-Length, and those of unknown length', () => {
    expect(canBuffer(RETRY, undefined)).toBe(true);
    expect(canBuffer(RETRY, '0')).toBe(true);
    expect(canBuffer(RETRY, String(64 * 1024))).toBe(true);
    expect(canBuffer(RETRY, String(64 * 1024 + 1))).toBe(false);
  });
});

describe('attemptTimeoutMs', () => {
  it('bounds every attempt but the last, as Linkerd drops the timeout once retries are exhausted', () => {
    expect([1, 2, 3].map((n) => attemptTimeoutMs(RETRY, n))).toEqual([200, 200, undefined]);
    expect(attemptTimeoutMs({ ...RETRY, timeoutMs: undefined }, 1)).toBeUndefined();
  });
});

describe('retryBackoffMs', () => {
  it('doubles from min to max without jitter', () => {
    const r = { ...RETRY, backoff: { minMs: 25, maxMs: 250, jitter: 0 } };
    expect([1, 2, 3, 4, 5, 6].map((n) => retryBackoffMs(r, n))).toEqual([25, 50, 100, 200, 250, 250]);
  });

  it('adds up to jitter·base on top, never past max (linkerd2-proxy ExponentialBackoff)', () => {
    expect(retryBackoffMs(RETRY, 1, () => 0)).toBe(25);
    expect(retryBackoffMs(RETRY, 1, () => 0.5)).toBe(37.5);
    expect(retryBackoffMs(RETRY, 1, () => 1)).toBe(50);
    expect(retryBackoffMs(RETRY, 4, () => 1)).toBe(250);
    expect(retryBackoffMs(RETRY, 9, () => 1)).toBe(250);
  });
});
