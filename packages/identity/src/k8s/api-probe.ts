// Keeps track of whether the API server answers, for /ready: probes now and then, logs transitions.
import type { Logger } from '@minimesh/runtime';

export interface ApiProbe {
  reachable(): boolean;
  /** Lets a successful TokenReview count as evidence too. */
  markReachable(): void;
  stop(): void;
}

export function startApiProbe(opts: { probe: () => Promise<void>; logger: Logger; intervalMs?: number }): ApiProbe {
  let ok = false;
  let stopped = false;
  const set = (next: boolean, err?: unknown): void => {
    if (next !== ok) {
      if (next) opts.logger.info('API server reachable');
      else opts.logger.warn({ reason: (err as Error | undefined)?.message }, 'API server unreachable');
    }
    ok = next;
  };
  const tick = (): void => {
    if (stopped) return;
    opts.probe().then(
      () => set(true),
      (err: unknown) => set(false, err),
    );
  };
  tick();
  const timer = setInterval(tick, opts.intervalMs ?? 10_000);
  timer.unref();
  return {
    reachable: () => ok,
    markReachable: () => set(true),
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
