import { describe, expect, it } from 'vitest';
import { createPrometheusClient, PrometheusError } from './prometheus.js';

describe('createPrometheusClient', () => {
  it('asks /api/v1/query with the PromQL encoded and reads a vector, NaN included', async () => {
    const asked: string[] = [];
    const prom = createPrometheusClient('http://prom:9090', async (path) => {
      asked.push(path);
      return {
        status: 200,
        body: JSON.stringify({
          status: 'success',
          data: {
            resultType: 'vector',
            result: [
              { metric: { deployment: 'web' }, value: [1, '1.5'] },
              { metric: { deployment: 'api' }, value: [1, 'NaN'] },
            ],
          },
        }),
      };
    });
    const samples = await prom.query('sum(x{a="b"}) by (deployment)');
    expect(asked).toEqual(['/api/v1/query?query=sum(x%7Ba%3D%22b%22%7D)%20by%20(deployment)']);
    expect(samples[0]).toEqual({ metric: { deployment: 'web' }, value: 1.5 });
    expect(Number.isNaN(samples[1]?.value)).toBe(true);
  });

  it('reads a matrix from query_range', async () => {
    const prom = createPrometheusClient('p', async (path) => {
      expect(path).toMatch(/^\/api\/v1\/query_range\?query=up&start=10&end=70&step=30$/);
      return {
        status: 200,
        body: JSON.stringify({
          status: 'success',
          data: {
            resultType: 'matrix',
            result: [
              {
                metric: {},
                values: [
                  [10, '1'],
                  [40, '2'],
                ],
              },
            ],
          },
        }),
      };
    });
    expect(await prom.queryRange('up', { start: 10, end: 70, step: 30 })).toEqual([
      {
        metric: {},
        values: [
          [10, 1],
          [40, 2],
        ],
      },
    ]);
  });

  it('says what went wrong: unreachable, an API error, not Prometheus at all', async () => {
    const down = createPrometheusClient('http://prom:9090', async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:9090');
    });
    await expect(down.query('up')).rejects.toThrow(
      'prometheus at http://prom:9090 is unreachable: connect ECONNREFUSED 127.0.0.1:9090',
    );
    const bad = createPrometheusClient('p', async () => ({
      status: 400,
      body: JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error at char 3' }),
    }));
    await expect(bad.query('up{')).rejects.toThrow('prometheus at p: bad_data: parse error at char 3');
    const html = createPrometheusClient('p', async () => ({
      status: 503,
      body: 'no endpoints available for service "x"',
    }));
    await expect(html.query('up')).rejects.toThrow(PrometheusError);
    await expect(html.query('up')).rejects.toThrow('answered HTTP 503, not the Prometheus API: no endpoints available');
  });
});
