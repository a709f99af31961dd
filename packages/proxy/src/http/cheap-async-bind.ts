// Node 20's AsyncResource.prototype.bind defines a deprecated `asyncResource` accessor (DEP0172) on every
// function it returns, wrapping its getter and setter with util.deprecate, which re-parents each wrapper
// with Object.setPrototypeOf. http2's ClientHttp2Session.request() binds once per request, so every
// request the proxy sends over HTTP/2 paid for it: 47–92 µs per bind on this machine (microbenchmark,
// 1k–50k binds) against ~1 µs for the same closure without the accessor. This replaces the method with
// the same behaviour minus that deprecated property (fn still runs in the resource's async scope, with
// the same `this` and arguments, and the bound function keeps fn's length), on Node versions that still
// have it. Process-wide by nature; installed once by startProxy.
import { AsyncResource } from 'node:async_hooks';

let installed = false;

/** Whether this Node's AsyncResource.bind still carries the deprecated accessor (the costly version). */
export function hasCostlyAsyncBind(): boolean {
  return (
    Object.getOwnPropertyDescriptor(
      new AsyncResource('probe').bind(() => undefined),
      'asyncResource',
    ) !== undefined
  );
}

export function installCheapAsyncBind(): boolean {
  if (installed) return true;
  if (!hasCostlyAsyncBind()) return false;
  AsyncResource.prototype.bind = function bind<Func extends (...args: never[]) => unknown>(
    this: AsyncResource,
    fn: Func,
    thisArg?: unknown,
  ): Func {
    if (typeof fn !== 'function')
      throw Object.assign(new TypeError(`The "fn" argument must be of type function. Received ${typeof fn}`), {
        code: 'ERR_INVALID_ARG_TYPE',
      });
    const run = this.runInAsyncScope.bind(this) as (f: Func, t: unknown, ...a: unknown[]) => unknown;
    const bound =
      thisArg === undefined
        ? function (this: unknown, ...args: unknown[]) {
            return run(fn, this, ...args);
          }
        : (...args: unknown[]) => run(fn, thisArg, ...args);
    Object.defineProperty(bound, 'length', {
      configurable: true,
      enumerable: false,
      value: fn.length,
      writable: false,
    });
    return bound as unknown as Func;
  } as typeof AsyncResource.prototype.bind;
  installed = true;
  return true;
}
