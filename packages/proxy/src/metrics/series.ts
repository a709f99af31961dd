// Label-set handles for hot paths. prom-client hashes every label object on every inc(); with ~20
// labels that costs more than the proxying itself. Here a label set is resolved to a handle once
// (cached per label object) and each request is a few number updates. The metrics register in the
// ordinary prom-client Registry, so /metrics renders them with everything else.
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

/** Labels that do not apply (empty values) are left out of the series, as Linkerd's proxy does. */
function withoutEmpty(labels: Labels): Labels {
  const out: Labels = {};
  for (const k of Object.keys(labels)) if (labels[k] !== '') out[k] = labels[k] as string;
  return out;
}

interface MetricValue {
  value: number;
  labels: Labels;
  metricName?: string;
}

abstract class Series<H> {
  protected readonly byKey = new Map<string, H>();
  private readonly byObject = new WeakMap<Labels, H>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  protected abstract create(labels: Labels): H;

  /** The handle of a label set; cached per (immutable) label object and per value tuple. */
  with(labels: Labels): H {
    let h = this.byObject.get(labels);
    if (h) return h;
    const key = Object.keys(labels)
      .sort()
      .map((k) => `${k}=${labels[k]}`)
      .join('\x01');
    h = this.byKey.get(key);
    if (!h) {
      h = this.create(withoutEmpty(labels));
      this.byKey.set(key, h);
    }
    this.byObject.set(labels, h);
    return h;
  }

  abstract values(): MetricValue[];

  get(): Promise<{ name: string; help: string; type: string; values: MetricValue[]; aggregator: string }> {
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values: this.values(),
      aggregator: 'sum',
    });
  }

  reset(): void {
    this.byKey.clear();
  }
}

export interface CounterHandle {
  labels: Labels;
  value: number;
}

export class SeriesCounter extends Series<CounterHandle> {
  constructor(name: string, help: string, registry: Registry, type: 'counter' | 'gauge' = 'counter') {
    super(name, help, type, registry);
  }
  protected create(labels: Labels): CounterHandle {
    return { labels, value: 0 };
  }
  values(): MetricValue[] {
    return [...this.byKey.values()].map((h) => ({ value: h.value, labels: h.labels }));
  }
}

export interface HistogramHandle {
  labels: Labels;
  counts: Float64Array;
  sum: number;
  count: number;
  observe(v: number): void;
}

export class SeriesHistogram extends Series<HistogramHandle> {
  constructor(
    name: string,
    help: string,
    registry: Registry,
    readonly buckets: number[],
  ) {
    super(name, help, 'histogram', registry);
  }
  protected create(labels: Labels): HistogramHandle {
    const buckets = this.buckets;
    const h: HistogramHandle = {
      labels,
      counts: new Float64Array(buckets.length),
      sum: 0,
      count: 0,
      observe(v: number) {
        h.sum += v;
        h.count++;
        for (let i = 0; i < buckets.length; i++) {
          if (v <= (buckets[i] as number)) {
            (h.counts[i] as number)++;
            break;
          }
        }
      },
    };
    return h;
  }
  values(): MetricValue[] {
    const out: MetricValue[] = [];
    for (const h of this.byKey.values()) {
      let acc = 0;
      this.buckets.forEach((b, i) => {
        acc += h.counts[i] as number;
        out.push({ metricName: `${this.name}_bucket`, labels: { le: String(b), ...h.labels }, value: acc });
      });
      out.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...h.labels }, value: h.count });
      out.push({ metricName: `${this.name}_sum`, labels: h.labels, value: h.sum });
      out.push({ metricName: `${this.name}_count`, labels: h.labels, value: h.count });
    }
    return out;
  }
}
