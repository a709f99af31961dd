import { describe, expect, it } from 'vitest';
import { AsyncResource, executionAsyncId } from 'node:async_hooks';
import { hasCostlyAsyncBind, installCheapAsyncBind } from './cheap-async-bind.js';

describe('installCheapAsyncBind', () => {
  it('keeps what bind does: async scope, this, arguments, result, length; drops the deprecated accessor', () => {
    const costly = hasCostlyAsyncBind();
    expect(installCheapAsyncBind()).toBe(costly);
    expect(hasCostlyAsyncBind()).toBe(false);
    const r = new AsyncResource('test');
    const seen: unknown[] = [];
    const fn = function (this: unknown, a: number, b: number) {
      seen.push(executionAsyncId(), this);
      return a + b;
    };
    const self = { me: 1 };
    // @types/node declares bind(fn) only; Node's bind(fn, thisArg) is what http2 and others call.
    const withThis = (r.bind as (f: typeof fn, t: unknown) => typeof fn)(fn, self);
    expect(withThis(1, 2)).toBe(3);
    expect(seen).toEqual([r.asyncId(), self]);
    seen.length = 0;
    const callerThis = { caller: true };
    const plain = r.bind(fn);
    expect(plain.call(callerThis, 2, 3)).toBe(5);
    expect(seen).toEqual([r.asyncId(), callerThis]);
    expect(plain.length).toBe(2);
    expect(AsyncResource.bind(fn)(4, 5)).toBe(9);
    expect(() => r.bind(42 as never)).toThrow(TypeError);
  });
});
