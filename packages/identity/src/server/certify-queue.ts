// Admission control for Certify: at most `concurrency` calls at work (TokenReview, CSR check, signing),
// the rest wait in arrival order. The work runs on identity's one thread, as does every connection's
// HTTP/2 set-up; when every proxy certifies at once (the restart storm), unbounded work kept new
// connections waiting past their clients' 1 s connect timeout and each failure cost a new connection
// (docs/scale.md, "Fixes"). Queued calls start one macrotask later (setImmediate), so the event loop
// reads and accepts sockets between them; a call whose client gave up while queued never starts.

export interface CertifyQueueOptions {
  /** Calls at work at once (>= 1). */
  concurrency: number;
}

export interface CertifyQueue {
  /**
   * Runs `task` when a slot is free. `cancelled` is asked when the call reaches a slot: when it says
   * true the task does not run and the promise resolves to undefined.
   */
  run<T>(task: () => Promise<T>, cancelled?: () => boolean): Promise<T | undefined>;
  /** Calls at work. */
  readonly active: number;
  /** Calls waiting for a slot. */
  readonly queued: number;
}

interface Waiting {
  start: () => void;
  skip: () => void;
  cancelled: () => boolean;
}

export function createCertifyQueue(opts: CertifyQueueOptions): CertifyQueue {
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)
    throw new RangeError(`certify concurrency: ${opts.concurrency} is not valid: expected a whole number >= 1`);
  let active = 0;
  const waiting: Waiting[] = [];
  let scheduled = false;

  const drain = (): void => {
    scheduled = false;
    while (active < opts.concurrency && waiting.length > 0) {
      const next = waiting.shift() as Waiting;
      if (next.cancelled()) next.skip();
      else next.start();
    }
  };
  const release = (): void => {
    active--;
    if (waiting.length > 0 && !scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  };

  return {
    run<T>(task: () => Promise<T>, cancelled: () => boolean = () => false): Promise<T | undefined> {
      return new Promise<T | undefined>((resolve, reject) => {
        const start = (): void => {
          active++;
          let p: Promise<T>;
          try {
            p = task();
          } catch (err) {
            p = Promise.reject(err as Error);
          }
          p.then(
            (v) => {
              release();
              resolve(v);
            },
            (err: unknown) => {
              release();
              reject(err as Error);
            },
          );
        };
        if (active < opts.concurrency && waiting.length === 0) start();
        else waiting.push({ start, skip: () => resolve(undefined), cancelled });
      });
    },
    get active() {
      return active;
    },
    get queued() {
      return waiting.length;
    },
  };
}
