// Linkerd's own proxy enforcing minimesh's resilience policies, from minimesh's real control plane
// (identity, destination and the policy controller on the local cluster's API server; no stub), as the
// resilience issue asks of a peer:
// - failure accrual: a Service `web` over three pods, one of which answers 500 to everything, with the
//   balancer.linkerd.io/failure-accrual annotations; the client's linkerd2-proxy gets them through
//   minimesh's OutboundPolicies and ejects the failing endpoint after 3 consecutive failures, so of 300
//   requests only the few before the ejection fail (without it, about a third would);
// - an HTTPLocalRateLimitPolicy of 5 requests a second per identity on a Server: the server's
//   linkerd2-proxy admits about that many of a burst of 40 and answers the rest 429, counted in
//   inbound_http_local_ratelimit_total under the policy's name.
// Runs when the linkerd2-proxy binary is given (MINIMESH_PEER_LINKERD2_PROXY, or
// /opt/minimesh-peers/linkerd2-proxy); otherwise it says why not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient } from '@minimesh/local-cluster';
import { NetnsMesh, PROXY_UID, ROOT, findLinkerd2Proxy, waitFor } from './support/netns-mesh.js';
import { callAgent } from './support/pod-agent.js';
import { peerSkipReason, policyServer } from './support/policy-server.js';

const PEER = findLinkerd2Proxy();
const POLICY = policyServer();
const AGENT = join(ROOT, 'packages/proxy/test/apps/pod-agent.mjs');
const G = 'policy.minimesh.io';
const why = peerSkipReason('l5d-resilience.test.ts', PEER, POLICY);

let mesh: NetnsMesh;
let webIp = '';
let limitedIp = '';
const WEB = ['good-1', 'good-2', 'bad'];
const MESHED = [...WEB, 'limited', 'client'];
const LIMIT_RPS = 5;

type H1 = { status: number; headers: Record<string, string>; body: string; error?: string };

function agent<T>(pod: string, op: string, body: unknown): Promise<T> {
  return callAgent<T>(join(mesh.dir, `agent-${pod}.sock`), op, body, 120_000);
}

async function create(path: string, obj: unknown): Promise<void> {
  await adminClient().request('POST', path, obj);
}

const outcome = (r: H1) => r.error ?? `${r.status} ${r.headers?.['x-app'] ?? ''}`.trim();

describe.skipIf(why !== undefined)(
  `linkerd2-proxy enforces minimesh's failure accrual and rate limits${why ? ` (skipped: ${why})` : ` (${PEER})`}`,
  () => {
    beforeAll(async () => {
      mesh = await NetnsMesh.create('mmrs');
      for (const s of WEB) await mesh.addPod(s, 'web');
      await mesh.addPod('limited', 'limited');
      await mesh.addPod('client', 'client');
      webIp = await mesh.service('web', [{ name: 'http', port: 80, targetPort: 8080 }], WEB, {
        'balancer.linkerd.io/failure-accrual': 'consecutive',
        'balancer.linkerd.io/failure-accrual-consecutive-max-failures': '3',
        // Longer than the test: an ejected endpoint is not probed again while it runs.
        'balancer.linkerd.io/failure-accrual-consecutive-min-penalty': '60s',
        'balancer.linkerd.io/failure-accrual-consecutive-max-penalty': '120s',
      });
      limitedIp = await mesh.service('limited', [{ name: 'http', port: 80, targetPort: 8080 }], ['limited']);
      await mesh.startControlPlane({ policy: POLICY.argv });
      await create(`/apis/${G}/v1beta3/namespaces/${mesh.kns}/servers`, {
        apiVersion: `${G}/v1beta3`,
        kind: 'Server',
        metadata: { name: 'limited-http', namespace: mesh.kns },
        spec: {
          podSelector: { matchLabels: { app: 'limited' } },
          port: 8080,
          proxyProtocol: 'HTTP/1',
          accessPolicy: 'all-unauthenticated',
        },
      });
      await create(`/apis/${G}/v1alpha1/namespaces/${mesh.kns}/httplocalratelimitpolicies`, {
        apiVersion: `${G}/v1alpha1`,
        kind: 'HTTPLocalRateLimitPolicy',
        metadata: { name: 'limited-limit', namespace: mesh.kns },
        spec: {
          targetRef: { group: G, kind: 'Server', name: 'limited-http' },
          identity: { requestsPerSecond: LIMIT_RPS },
        },
      });
      for (const pod of MESHED) await mesh.meshPod(pod);
      mesh.start('app-good-1', [process.execPath, AGENT, 'server', 'good-1'], { pod: 'good-1' });
      mesh.start('app-good-2', [process.execPath, AGENT, 'server', 'good-2'], { pod: 'good-2' });
      mesh.start('app-bad', [process.execPath, AGENT, 'server', 'bad', '500'], { pod: 'bad' });
      mesh.start('app-limited', [process.execPath, AGENT, 'server', 'limited'], { pod: 'limited' });
      mesh.start('agent-client', [process.execPath, AGENT, 'client', join(mesh.dir, 'agent-client.sock')], {
        pod: 'client',
      });
      await waitFor('the client agent', () => existsSync(join(mesh.dir, 'agent-client.sock')));
      for (const pod of MESHED)
        mesh.start(`proxy-${pod}`, [PEER!], {
          pod,
          uid: PROXY_UID,
          env: await mesh.linkerdEnv(pod, '8080', { LINKERD2_PROXY_LOG: 'warn,linkerd=info' }),
        });
      for (const pod of MESHED) await mesh.waitReady(pod, `proxy-${pod}`, 60_000);
      // Every app answers (in its own namespace, not through a proxy) before the tests: a good endpoint
      // whose app was still starting would fail its first requests and be ejected as the bad one is.
      for (const pod of [...WEB, 'limited'])
        await waitFor(`the app in ${pod} to answer`, () => mesh.podFetch(pod, 'http://127.0.0.1:8080/').status > 0);
    }, 300_000);

    afterAll(async () => {
      await mesh?.destroy();
    }, 60_000);

    it('failure accrual: the endpoint answering 500 is ejected after 3 failures; 300 requests, the rest succeed', async () => {
      const host = mesh.fqdn('web');
      // The client's proxy has the Service's policy once the good endpoints answer through it.
      await waitFor('200s through the Service', async () => {
        const got = await agent<H1[]>('client', 'h1', { ip: webIp, port: 80, host, n: 4, agentKey: 'web' });
        return got.some((r) => r.status === 200) ? got : undefined;
      });
      const rs = await agent<H1[]>('client', 'h1', { ip: webIp, port: 80, host, n: 300, parallel: 2, agentKey: 'web' });
      const counts = new Map<string, number>();
      for (const r of rs) counts.set(outcome(r), (counts.get(outcome(r)) ?? 0) + 1);
      const failed = rs.filter((r) => r.status !== 200).length;
      const seen = `outcomes of the 300: ${JSON.stringify(Object.fromEntries(counts))}`;
      console.log(`linkerd2-proxy failure accrual: ${seen}`);
      // Without accrual the balancer would send about 100 of them to the failing pod.
      expect(failed, seen).toBeLessThanOrEqual(10);
      expect(rs.filter((r) => r.headers?.['x-app'] === 'bad').length, seen).toBe(failed);
      // Both good endpoints stayed in the balancer (an ejected one would get none). How evenly the
      // peak-EWMA balancer spreads the rest is its own business: a latency spike on one endpoint (a busy
      // machine) sends most to the other for a while.
      expect(counts.get('200 good-1') ?? 0, seen).toBeGreaterThanOrEqual(30);
      expect(counts.get('200 good-2') ?? 0, seen).toBeGreaterThanOrEqual(30);
      expect((counts.get('200 good-1') ?? 0) + (counts.get('200 good-2') ?? 0), seen).toBe(300 - failed);
    }, 120_000);

    it(`rate limit: ${LIMIT_RPS} rps per identity; of a burst of 40 about that many pass, the rest 429, counted`, async () => {
      const host = mesh.fqdn('limited');
      // The server's proxy has the limit once a burst is refused in part.
      await waitFor('a 429 from the limited server', async () => {
        const got = await agent<H1[]>('client', 'h1', { ip: limitedIp, port: 80, host, n: 12, parallel: 4 });
        return got.some((r) => r.status === 429) ? got : undefined;
      });
      await new Promise((r) => setTimeout(r, 2000)); // the bucket fills again
      const t0 = performance.now();
      const rs = await agent<H1[]>('client', 'h1', { ip: limitedIp, port: 80, host, n: 40, parallel: 4 });
      const seconds = (performance.now() - t0) / 1000;
      const ok = rs.filter((r) => r.status === 200).length;
      const limited = rs.filter((r) => r.status === 429).length;
      const seen = `${ok} admitted, ${limited} refused (429) of 40 in ${seconds.toFixed(2)} s; outcomes ${JSON.stringify(rs.map(outcome))}`;
      console.log(`linkerd2-proxy rate limit: ${seen}`);
      expect(ok + limited, seen).toBe(40);
      expect(ok, seen).toBeGreaterThanOrEqual(1);
      expect(ok, seen).toBeLessThanOrEqual(LIMIT_RPS + Math.ceil(LIMIT_RPS * seconds) + 1);
      expect(limited, seen).toBeGreaterThan(20);
      const text = mesh.podFetch('limited', 'http://127.0.0.1:4191/metrics').body;
      const lines = text
        .split('\n')
        .filter(
          (l) => l.startsWith('inbound_http_local_ratelimit_total{') && l.includes('ratelimit_name="limited-limit"'),
        );
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.some((l) => / [1-9]\d*$/.test(l))).toBe(true);
    }, 120_000);
  },
);
