// The shape of every stage of the proxy, after linkerd2-proxy's stacks: a stage file exports one builder,
// push<Stage>(options), which returns a Layer: given the next stage's handler, the handler of this
// stage's own target. A chain is those layers in the order a connection or a request meets them,
// composed by stack() into one expression (outbound/index.ts, inbound/index.ts).
//
// Connection stages take one target per connection; request stages take a target and the request it
// is for (the target is a value several requests share, the request carries their own state).
import type { Http, Opaque } from './targets.js';

/** A connection stage's handler; it may finish asynchronously (the accept stage catches what it throws). */
export type Handler<T> = (target: T) => void | Promise<void>;

/** A request stage's handler: the target and the request it is for. */
export type RequestHandler<T, R> = (target: T, req: R) => void;

/** What a stage builder returns: from the next stage's handler to its own. */
export type Layer<Next, This> = (next: Next) => This;

/** A request every stage can refuse: answered with the error (and counted, for a caller's request). */
export interface Rejectable {
  reject(err: unknown): void;
}

/**
 * The layers in the order a connection or a request meets them, ending with the last handler: the
 * handler of the first layer's target. Each layer's handler type is checked against the next one's.
 */
export function stack<A, B>(l1: Layer<B, A>, end: B): A;
export function stack<A, B, C>(l1: Layer<B, A>, l2: Layer<C, B>, end: C): A;
export function stack<A, B, C, D>(l1: Layer<B, A>, l2: Layer<C, B>, l3: Layer<D, C>, end: D): A;
export function stack<A, B, C, D, E>(l1: Layer<B, A>, l2: Layer<C, B>, l3: Layer<D, C>, l4: Layer<E, D>, end: E): A;
export function stack<A, B, C, D, E, F>(
  l1: Layer<B, A>,
  l2: Layer<C, B>,
  l3: Layer<D, C>,
  l4: Layer<E, D>,
  l5: Layer<F, E>,
  end: F,
): A;
export function stack<A, B, C, D, E, F, G>(
  l1: Layer<B, A>,
  l2: Layer<C, B>,
  l3: Layer<D, C>,
  l4: Layer<E, D>,
  l5: Layer<F, E>,
  l6: Layer<G, F>,
  end: G,
): A;
export function stack<A, B, C, D, E, F, G, H>(
  l1: Layer<B, A>,
  l2: Layer<C, B>,
  l3: Layer<D, C>,
  l4: Layer<E, D>,
  l5: Layer<F, E>,
  l6: Layer<G, F>,
  l7: Layer<H, G>,
  end: H,
): A;
export function stack<A, B, C, D, E, F, G, H, I>(
  l1: Layer<B, A>,
  l2: Layer<C, B>,
  l3: Layer<D, C>,
  l4: Layer<E, D>,
  l5: Layer<F, E>,
  l6: Layer<G, F>,
  l7: Layer<H, G>,
  l8: Layer<I, H>,
  end: I,
): A;
export function stack<A, B, C, D, E, F, G, H, I, J>(
  l1: Layer<B, A>,
  l2: Layer<C, B>,
  l3: Layer<D, C>,
  l4: Layer<E, D>,
  l5: Layer<F, E>,
  l6: Layer<G, F>,
  l7: Layer<H, G>,
  l8: Layer<I, H>,
  l9: Layer<J, I>,
  end: J,
): A;
export function stack(...parts: unknown[]): unknown {
  let handler = parts[parts.length - 1];
  for (let i = parts.length - 2; i >= 0; i--) handler = (parts[i] as (next: unknown) => unknown)(handler);
  return handler;
}

/** Where a detect stage hands a connection: the HTTP server, or the opaque (TCP) chain. */
export interface Protocols<T> {
  http: (target: Http<T>) => void;
  opaque: Handler<Opaque<T>>;
}
