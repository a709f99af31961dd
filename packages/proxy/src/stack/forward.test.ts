// The last stage: the request goes where the connect stage said.
import { describe, expect, it } from 'vitest';
import type { Connected } from '../http/upstream.js';
import { FakeRequest } from '../../test/support/stages.js';
import { forward } from './forward.js';

describe('forward', () => {
  it("sends the request with the connect stage's target", () => {
    const req = new FakeRequest();
    const t = { labels: {}, authority: 'web:80', extra: undefined } as unknown as Connected;
    forward<FakeRequest>()(t, req);
    expect(req.forwarded).toBe(t);
    expect(req.events).toEqual(['forward']);
  });
});
