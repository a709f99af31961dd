// The Prometheus HTTP API as viz reads it: instant and range queries, parsed into plain samples.
// The transport is the caller's (a direct URL, or the API server's service proxy), so this stays thin.
export interface Sample {
  metric: Record<string, string>;
  /** NaN when Prometheus answered NaN (a quantile without data). */
  value: number;
}

export interface Series {
  metric: Record<string, string>;
  /** [unix seconds, value] */
  values: Array<[number, number]>;
}

export class PrometheusError extends Error {
  readonly code = 'MINIMESH_VIZ_PROMETHEUS';
}

/** GET a path (with query string) from Prometheus: status and body, or a thrown error when unreachable. */
export type PrometheusTransport = (pathAndQuery: string) => Promise<{ status: number; body: string }>;

export interface PrometheusClient {
  /** Where it is, for messages: a URL or "service minimesh/minimesh-prometheus:9090 (through the API server)". */
  readonly where: string;
  query(promql: string): Promise<Sample[]>;
  queryRange(promql: string, opts: { start: number; end: number; step: number }): Promise<Series[]>;
}

export function createPrometheusClient(where: string, transport: PrometheusTransport): PrometheusClient {
  async function get(path: string): Promise<unknown> {
    let res: { status: number; body: string };
    try {
      res = await transport(path);
    } catch (err) {
      throw new PrometheusError(`prometheus at ${where} is unreachable: ${(err as Error).message}`, { cause: err });
    }
    return parseApiResponse(where, res.status, res.body);
  }
  return {
    where,
    async query(promql) {
      return toSamples(where, await get(`/api/v1/query?query=${encodeURIComponent(promql)}`));
    },
    async queryRange(promql, { start, end, step }) {
      const qs = `query=${encodeURIComponent(promql)}&start=${start}&end=${end}&step=${step}`;
      return toSeries(where, await get(`/api/v1/query_range?${qs}`));
    },
  };
}

/** The `data` of a Prometheus API answer, or a PrometheusError with its message. */
export function parseApiResponse(where: string, status: number, body: string): unknown {
  let json: { status?: string; data?: unknown; error?: string; errorType?: string } | undefined;
  try {
    json = JSON.parse(body) as typeof json;
  } catch {
    json = undefined;
  }
  if (json?.status === 'success') return json.data;
  if (json?.status === 'error')
    throw new PrometheusError(`prometheus at ${where}: ${json.errorType ?? 'error'}: ${json.error ?? '(no message)'}`);
  const first = body.split('\n')[0]?.slice(0, 200) ?? '';
  throw new PrometheusError(`prometheus at ${where} answered HTTP ${status}, not the Prometheus API: ${first}`);
}

function toSamples(where: string, data: unknown): Sample[] {
  const d = data as {
    resultType?: string;
    result?: Array<{ metric?: Record<string, string>; value?: [number, string] }>;
  };
  if (d?.resultType !== 'vector' || !Array.isArray(d.result))
    throw new PrometheusError(`prometheus at ${where}: expected a vector result, got ${String(d?.resultType)}`);
  return d.result.map((r) => ({ metric: r.metric ?? {}, value: Number(r.value?.[1]) }));
}

function toSeries(where: string, data: unknown): Series[] {
  const d = data as {
    resultType?: string;
    result?: Array<{ metric?: Record<string, string>; values?: Array<[number, string]> }>;
  };
  if (d?.resultType !== 'matrix' || !Array.isArray(d.result))
    throw new PrometheusError(`prometheus at ${where}: expected a matrix result, got ${String(d?.resultType)}`);
  return d.result.map((r) => ({
    metric: r.metric ?? {},
    values: (r.values ?? []).map(([t, v]) => [Number(t), Number(v)] as [number, number]),
  }));
}
