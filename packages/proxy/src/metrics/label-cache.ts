// One cache of metric label sets for both stacks. Label objects are built once per (authority,
// endpoint, TLS, peer) and reused by every request: the series behind them are found by object, so a
// request costs a few increments instead of hashing some twenty labels.
import type { Labels } from './metrics.js';

export class LabelCache {
  private readonly byKey = new Map<string, Labels>();

  /** `max` bounds memory under churning names: past it, the cache starts over (series stay registered). */
  constructor(private readonly max = 10_000) {}

  get(key: string): Labels | undefined {
    return this.byKey.get(key);
  }

  put(key: string, labels: Labels): Labels {
    if (this.byKey.size >= this.max) this.byKey.clear();
    this.byKey.set(key, labels);
    return labels;
  }
}
