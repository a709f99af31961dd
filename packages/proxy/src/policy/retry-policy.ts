// The retry decision of an outbound route, as linkerd2-proxy makes it (linkerd/http/retry and
// app/outbound/src/http/logical/policy/route/retry.rs), with no I/O: the I/O is the retry transport,
// http/retry.ts, which sends every attempt through the one forwarder.
//   - A request is retried only if its body can be replayed: bodies are buffered up to the route's
//     max_request_bytes (64 KiB from minimesh's controller, as Linkerd's); a larger body (by
//     Content-Length up front, or once more has streamed) is not retried, and neither is a request
//     whose body had not ended when the response that would be retried arrived.
//   - A response is retryable when its HTTP status is in the route's status ranges, or (a gRPC route)
//     when its gRPC status is one of the route's retried codes: a trailers-only response carries it in
//     its head, which is what is held; a status in trailers after a body is not retried (the body would
//     have to be held whole before the decision). Errors are
//     retryable only when no response head came back for a reason that is safe to retry: the attempt's
//     own timeout fired, or an HTTP/2 peer refused the stream (REFUSED_STREAM: it did not process it).
//     Other failures (a refused connection, a reset after the request was sent) are not retried, as
//     Linkerd's route retry does not (its endpoint stack owns reconnecting).
//   - At most max_retries retries follow the first attempt, each after an exponential backoff.
//   - Each attempt but the last is bounded by the route's per-attempt timeout; the last has none
//     (Linkerd drops the response-headers timeout once retries are exhausted), so only the route's
//     request timeout, over all attempts, bounds it.
import type { CompiledRetry } from '@minimesh/policy/client';
import { isRetryableGrpc, isRetryableStatus } from '@minimesh/policy/client';
import type { AttemptOutcome, BodyState, RetryDecision, RetryPolicy } from '../http/retry.js';
import type { RouteRetryCounters } from './retry-metrics.js';

export type { AttemptOutcome, BodyState, RetryDecision };

export function isRetryableOutcome(retry: CompiledRetry, o: AttemptOutcome): boolean {
  switch (o.kind) {
    case 'response':
      return isRetryableStatus(retry, o.status) || (o.grpcStatus !== undefined && isRetryableGrpc(retry, o.grpcStatus));
    case 'timeout':
    case 'refused':
      return true;
    case 'error':
      return false;
  }
}

/** `attempt` counts from 1 (the original request); retries are attempts 2 … maxRetries + 1. */
export function decideRetry(
  retry: CompiledRetry,
  attempt: number,
  outcome: AttemptOutcome,
  body: BodyState,
): RetryDecision {
  if (!isRetryableOutcome(retry, outcome)) return 'done';
  if (!body.complete || body.capped) return 'unbuffered';
  if (attempt > retry.maxRetries) return 'limit';
  return 'retry';
}

/**
 * Whether a request can take the retry path at all: not when its declared length is over the buffer
 * (linkerd2-proxy's ReplayBody::try_new refuses a body whose size hint is larger).
 */
export function canBuffer(retry: CompiledRetry, contentLength: string | undefined): boolean {
  if (contentLength === undefined) return true;
  const n = Number(contentLength);
  return !Number.isFinite(n) || n <= retry.maxRequestBytes;
}

/** The per-attempt timeout of `attempt` (from 1), or undefined: none for the last attempt, as Linkerd. */
export function attemptTimeoutMs(retry: CompiledRetry, attempt: number): number | undefined {
  if (retry.timeoutMs === undefined || retry.timeoutMs <= 0) return undefined;
  return attempt <= retry.maxRetries ? retry.timeoutMs : undefined;
}

/** The wait before retry `n` (from 1): linkerd2-proxy's ExponentialBackoff (exponentialBackoffMs). */
export function retryBackoffMs(retry: CompiledRetry, n: number, random: () => number = Math.random): number {
  return exponentialBackoffMs(retry.backoff, n, random);
}

/**
 * Wait `n` (from 1) of linkerd2-proxy's ExponentialBackoff: base = min·2^(n-1) capped at max, plus a
 * uniform jitter of up to jitter·base that never takes it past max. Retries and failure accrual's
 * penalties (balance/consecutive-failures.ts) both wait this way.
 */
export function exponentialBackoffMs(
  backoff: { minMs: number; maxMs: number; jitter: number },
  n: number,
  random: () => number = Math.random,
): number {
  const { minMs, maxMs, jitter } = backoff;
  if (maxMs <= 0) return 0;
  const base = Math.min(maxMs, minMs * 2 ** Math.min(Math.max(0, n - 1), 30));
  if (jitter <= 0) return base;
  return base + Math.min(random() * jitter * base, maxMs - base);
}

/** A route's retry policy as the retry transport asks it, counting into the route's retry metrics. */
export function routeRetryPolicy(retry: CompiledRetry, counters: RouteRetryCounters): RetryPolicy {
  return {
    maxRequestBytes: retry.maxRequestBytes,
    decide: (attempt, outcome, body) => decideRetry(retry, attempt, outcome, body),
    backoffMs: (n) => retryBackoffMs(retry, n),
    attemptTimeoutMs: (attempt) => attemptTimeoutMs(retry, attempt),
    counters,
  };
}
