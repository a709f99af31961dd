import { describe, expect, it } from 'vitest';
import { frame, grpcMessage, unframe } from './server.js';

describe('gRPC framing and messages', () => {
  it('frames and unframes one message', () => {
    const f = frame(Buffer.from([1, 2, 3]));
    expect([...f]).toEqual([0, 0, 0, 0, 3, 1, 2, 3]);
    expect([...unframe(f)]).toEqual([1, 2, 3]);
    expect(() => unframe(Buffer.from([1, 0, 0, 0, 0]))).toThrow('compressed');
    expect(() => unframe(Buffer.from([0, 0, 0, 0, 9, 1]))).toThrow('truncated');
  });
  it('percent-encodes only what gRPC says', () => {
    expect(grpcMessage('tap: 100% denied é')).toBe('tap: 100%25 denied %C3%A9');
  });
});
