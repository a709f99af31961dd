// Admission metrics: requests by result and reason, and the server-side latency.
import { Counter, Histogram, type Registry } from 'prom-client';

export type AdmissionResult = 'injected' | 'skipped' | 'error' | 'rejected';

export interface WebhookMetrics {
  requests: Counter<'result' | 'reason'>;
  duration: Histogram<'result'>;
}

export function createWebhookMetrics(registry: Registry): WebhookMetrics {
  return {
    requests: new Counter({
      name: 'minimesh_injector_admission_requests_total',
      help: 'Admission requests by result (injected, skipped, error, rejected) and reason.',
      labelNames: ['result', 'reason'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'minimesh_injector_admission_duration_seconds',
      help: 'Server-side time from request start to response, by result.',
      labelNames: ['result'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
  };
}
