// A stream's bounded queue: listeners push without blocking; the queue drains into the gRPC call as
// fast as the client reads. When the client falls behind by more than `capacity` messages the
// stream is closed (onOverflow) rather than letting memory grow.

/** The part of a grpc-js server stream the queue writes to. */
export interface MessageSink<T> {
  write(message: T): boolean;
  once(event: 'drain', fn: () => void): unknown;
}

export class UpdateQueue<T> {
  private readonly pending: T[] = [];
  private blocked = false;
  private closed = false;

  constructor(
    private readonly sink: MessageSink<T>,
    private readonly capacity: number,
    private readonly hooks: { onSent?: (message: T) => void; onOverflow: () => void },
  ) {}

  get length(): number {
    return this.pending.length;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  push(message: T): void {
    if (this.closed) return;
    if (this.pending.length >= this.capacity) {
      this.close();
      this.hooks.onOverflow();
      return;
    }
    this.pending.push(message);
    this.flush();
  }

  /** Drops everything queued; later pushes are ignored. */
  close(): void {
    this.closed = true;
    this.pending.length = 0;
  }

  private flush(): void {
    while (!this.blocked && !this.closed && this.pending.length > 0) {
      const message = this.pending.shift() as T;
      const more = this.sink.write(message);
      this.hooks.onSent?.(message);
      if (!more) {
        this.blocked = true;
        this.sink.once('drain', () => {
          this.blocked = false;
          this.flush();
        });
      }
    }
  }
}
