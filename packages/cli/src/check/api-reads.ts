// The reads several checks share: one GET through the API server (to a pod's admin port, through the
// API server's pod proxy) that never throws, and the first line of an answer for a check's detail.
import type { KubeClient } from '@minimesh/kube';
import { describeKubeError } from '../kube.js';

export interface PodList {
  items: Array<{ metadata?: { name?: string; deletionTimestamp?: string }; status?: { phase?: string } }>;
}

/** One GET through the API server, bounded by timeoutMs; never throws. */
export async function getViaApiServer(
  client: KubeClient,
  path: string,
  timeoutMs: number,
  maxBody = 4096,
): Promise<{ status?: number; body: string; error?: string }> {
  try {
    const res = await client.request('GET', path, undefined, { timeoutMs, accept: '*/*' });
    const text = typeof res.body === 'string' ? res.body : res.body === undefined ? '' : JSON.stringify(res.body);
    return { status: res.status, body: text.slice(0, maxBody) };
  } catch (err) {
    const detail = describeKubeError(err);
    const pathname = path.split('?')[0] ?? path;
    return {
      body: '',
      error: `GET ${pathname}: ${detail.startsWith('no response within') ? `no answer within ${timeoutMs / 1000} s` : detail}`,
    };
  }
}

/**
 * GET /ready on a pod's admin port through the API server's pod proxy: works wherever the API server
 * can reach pod IPs, and sends nothing from this machine but to the API server; a probe that hangs is
 * cut at the timeout.
 */
export function getPodReady(
  client: KubeClient,
  namespace: string,
  pod: string,
  port: number,
  timeoutMs: number,
): Promise<{ status?: number; body: string; error?: string }> {
  return getViaApiServer(client, `/api/v1/namespaces/${namespace}/pods/${pod}:${port}/proxy/ready`, timeoutMs);
}

/** The first line of an answer, at most 200 characters. */
export const firstLine = (body: string): string | undefined => body.trim().split('\n')[0]?.slice(0, 200);
