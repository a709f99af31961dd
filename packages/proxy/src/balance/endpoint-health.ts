// Endpoint health, beside the balancer that acts on it (outbound/balance.ts): an endpoint whose
// connection broke (reset, refused, TLS failure, closed by the peer) is left out of the pick while it
// reconnects in the background, with backoff, without a request on the line, and for at least an
// ejection time. A pod killed mid-stream then fails only the requests in flight on it, not the ones sent
// until destination learns it is gone. Failure accrual (consecutive failures) belongs here too.
import type { UpstreamSession } from '../http/h2-engine.js';
import { backoffDelay } from '@minimesh/runtime';
import type { Endpoint } from '../targets.js';

/** Background reconnects to a broken endpoint: 100 ms, doubling, at most every 10 s. */
const RECONNECT = { initialMs: 100, maxMs: 10_000 };
/**
 * A broken endpoint stays out of balancing at least this long even when a reconnect works sooner (an
 * ejection time, as Envoy's outlier detection has): a killed pod's proxy is restarted by the kubelet
 * within a second or two, before its app listens and before the API server has marked the pod not ready;
 * by then destination has dropped it.
 */
export const MIN_EJECTION_MS = 3000;

/** Opens the endpoint's connection again (its HTTP/2 session); undefined when it cannot be tried. */
export type Reconnect = (ep: Endpoint) => UpstreamSession | undefined;

export class EndpointHealth {
  private closed = false;

  constructor(private readonly reconnect: Reconnect) {}

  /** Whether the balancer may pick the endpoint (while another one is ready). */
  readonly ready = (ep: Endpoint): boolean => ep.load?.ready !== false;

  /** The endpoint's connection broke: out of the pick until a reconnect works and the ejection is over. */
  broken(ep: Endpoint): void {
    const load = ep.load;
    if (!load || this.closed) return;
    load.ready = false;
    load.ejectedUntil = Date.now() + MIN_EJECTION_MS;
    if (load.reconnecting) return;
    load.reconnecting = true;
    const delay = backoffDelay(load.failures++, RECONNECT);
    // The loop follows the load estimate, not this Endpoint object: destination's updates replace an
    // endpoint's object but keep its load, so the object may be garbage long before the endpoint is
    // gone. The loop stops once the load is (every object of the endpoint dropped: it left its set).
    const ref = new WeakRef(load);
    const { load: _, ...where } = ep;
    setTimeout(() => {
      const l = ref.deref();
      if (!l) return;
      l.reconnecting = false;
      const session = this.closed ? undefined : this.reconnect({ ...where, load: l });
      if (session === undefined) return;
      const up = () => {
        const again = ref.deref();
        if (!again || again.reconnecting) return;
        const wait = again.ejectedUntil - Date.now();
        if (wait > 0) {
          setTimeout(up, wait).unref();
          return;
        }
        again.ready = true;
        again.failures = 0;
      };
      if (session.connecting) session.once('connect', up);
      else if (!session.destroyed && !session.closed) up();
    }, delay).unref();
  }

  close(): void {
    this.closed = true;
  }
}
