// stack(): the layers in the order a request meets them, each handed the next one's handler.
import { describe, expect, it } from 'vitest';
import { stack, type Layer } from './layers.js';

type H = (path: string[]) => string[];
const tag =
  (name: string): Layer<H, H> =>
  (next) =>
  (path) =>
    next([...path, name]);

describe('stack', () => {
  it('composes top-down: the first layer sees the request first, the end last', () => {
    const handler = stack(tag('discover'), tag('route'), tag('balance'), (path: string[]) => [...path, 'forward']);
    expect(handler([])).toEqual(['discover', 'route', 'balance', 'forward']);
  });

  it('builds each layer once, innermost first', () => {
    const built: string[] = [];
    const layer =
      (name: string): Layer<H, H> =>
      (next) => {
        built.push(name);
        return next;
      };
    stack(layer('a'), layer('b'), layer('c'), (p: string[]) => p);
    expect(built).toEqual(['c', 'b', 'a']);
  });
});
