// Linkerd's own proxy following minimesh's HTTPRoutes, from minimesh's real control plane (identity,
// destination and the policy controller on the local cluster's API server; no stub), as the client's
// sidecar; a minimesh-proxy client beside it reads the same answer. The Service `web` (pod web-1) has
//   web-timeout  policy.minimesh.io HTTPRoute: /slow with timeouts.request 1s, and / (nothing else);
//   web-retry    policy.minimesh.io HTTPRoute: /retry, retry.minimesh.io/http 503, limit 2;
//   web-split    gateway.networking.k8s.io HTTPRoute: /split over web (weight 80) and web-canary (20,
//                pod canary-1).
// Each client's proxy must cut /slow/delay/3000 with 504 at the route's timeout while /plain/delay/1500
// answers 200; send /retry/fail/1/<key> (503 from the app once) again and answer 200 from the second
// attempt, while /plain/fail/1/<key> answers the app's 503 and /retry/fail/9/<key> stops after 3 attempts
// (counted in Linkerd's outbound_http_route_retry_* metrics);
// and spread 200 requests to /split about 80/20 (the canary's share inside the binomial 99.9 % interval
// around 20 %: 22 to 58; an ignored weight gives about 100, a swapped one about 160). The servers have
// minimesh-proxy sidecars (mTLS and HTTP/2 between the proxies). Runs when the linkerd2-proxy binary is
// given (MINIMESH_PEER_LINKERD2_PROXY, or /opt/minimesh-peers/linkerd2-proxy); otherwise it says why not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { adminClient } from '@minimesh/local-cluster';
import { NetnsMesh, PROXY_UID, ROOT, findLinkerd2Proxy, waitFor } from './support/netns-mesh.js';
import { callAgent } from './support/pod-agent.js';
import { peerSkipReason, policyServer } from './support/policy-server.js';

const PEER = findLinkerd2Proxy();
const POLICY = policyServer();
const PROXY = join(ROOT, 'packages/proxy/dist/main.js');
const AGENT = join(ROOT, 'packages/proxy/test/apps/pod-agent.mjs');
const G = 'policy.minimesh.io';
const GW = 'gateway.networking.k8s.io';
const why = peerSkipReason('l5d-routes.test.ts', PEER, POLICY);

let mesh: NetnsMesh;
let webIp = '';
const SERVERS = ['web-1', 'canary-1'];
const CLIENTS = [
  { client: 'l5d-c', kind: 'linkerd2-proxy' },
  { client: 'mm-c', kind: 'minimesh-proxy' },
];
const SPLIT_N = 200;
/** The canary's share of SPLIT_N at weight 20 of 100: the binomial 99.9 % interval (40 ± 3.29 × 5.66). */
const CANARY_MIN = 22;
const CANARY_MAX = 58;

type H1 = { status: number; headers: Record<string, string>; body: string; ms: number; error?: string };

function agent<T>(pod: string, op: string, body: unknown): Promise<T> {
  return callAgent<T>(join(mesh.dir, `agent-${pod}.sock`), op, body, 120_000);
}

async function create(path: string, obj: unknown): Promise<void> {
  await adminClient().request('POST', path, obj);
}

const key = () => randomBytes(4).toString('hex');

describe.skipIf(why !== undefined)(
  `linkerd2-proxy follows minimesh's HTTPRoutes: timeout, retries, weighted backends${why ? ` (skipped: ${why})` : ` (${PEER})`}`,
  () => {
    beforeAll(async () => {
      if (!existsSync(PROXY)) throw new Error(`${PROXY} is missing: build the packages first (npm run build)`);
      mesh = await NetnsMesh.create('mmrt');
      await mesh.addPod('web-1', 'web');
      await mesh.addPod('canary-1', 'web-canary');
      await mesh.addPod('l5d-c', 'l5dclient');
      await mesh.addPod('mm-c', 'mmclient');
      const http = [{ name: 'http', port: 80, targetPort: 8080 }];
      webIp = await mesh.service('web', http, ['web-1']);
      await mesh.service('web-canary', http, ['canary-1']);
      await mesh.startControlPlane({ policy: POLICY.argv, gatewayApi: true });
      const parent = { group: 'core', kind: 'Service', name: 'web', port: 80 };
      const prefix = (value: string) => [{ path: { type: 'PathPrefix', value } }];
      await create(`/apis/${G}/v1beta3/namespaces/${mesh.kns}/httproutes`, {
        apiVersion: `${G}/v1beta3`,
        kind: 'HTTPRoute',
        metadata: { name: 'web-timeout', namespace: mesh.kns },
        spec: {
          parentRefs: [parent],
          rules: [{ matches: prefix('/slow'), timeouts: { request: '1s' } }, { matches: prefix('/') }],
        },
      });
      await create(`/apis/${G}/v1beta3/namespaces/${mesh.kns}/httproutes`, {
        apiVersion: `${G}/v1beta3`,
        kind: 'HTTPRoute',
        metadata: {
          name: 'web-retry',
          namespace: mesh.kns,
          annotations: { 'retry.minimesh.io/http': '503', 'retry.minimesh.io/limit': '2' },
        },
        spec: { parentRefs: [parent], rules: [{ matches: prefix('/retry') }] },
      });
      await create(`/apis/${GW}/v1/namespaces/${mesh.kns}/httproutes`, {
        apiVersion: `${GW}/v1`,
        kind: 'HTTPRoute',
        metadata: { name: 'web-split', namespace: mesh.kns },
        spec: {
          parentRefs: [{ group: '', kind: 'Service', name: 'web', port: 80 }],
          rules: [
            {
              matches: prefix('/split'),
              backendRefs: [
                { name: 'web', port: 80, weight: 80 },
                { name: 'web-canary', port: 80, weight: 20 },
              ],
            },
          ],
        },
      });
      for (const pod of [...SERVERS, 'l5d-c', 'mm-c']) await mesh.meshPod(pod);
      for (const pod of SERVERS) mesh.start(`app-${pod}`, [process.execPath, AGENT, 'server', pod], { pod });
      for (const { client } of CLIENTS) {
        mesh.start(`agent-${client}`, [process.execPath, AGENT, 'client', join(mesh.dir, `agent-${client}.sock`)], {
          pod: client,
        });
        await waitFor(`the client agent in ${client}`, () => existsSync(join(mesh.dir, `agent-${client}.sock`)));
      }
      for (const pod of [...SERVERS, 'mm-c'])
        mesh.start(`proxy-${pod}`, [process.execPath, PROXY], {
          pod,
          uid: PROXY_UID,
          env: mesh.minimeshEnv(pod, { MINIMESH_PROXY_LOG: 'info' }),
        });
      mesh.start('proxy-l5d-c', [PEER!], {
        pod: 'l5d-c',
        uid: PROXY_UID,
        env: await mesh.linkerdEnv('l5d-c', '8080', { LINKERD2_PROXY_LOG: 'warn,linkerd=info' }),
      });
      for (const pod of [...SERVERS, 'l5d-c', 'mm-c']) await mesh.waitReady(pod, `proxy-${pod}`, 60_000);
    }, 300_000);

    afterAll(async () => {
      await mesh?.destroy();
    }, 60_000);

    describe.each(CLIENTS)('$kind as the client sidecar', ({ client, kind }) => {
      const get = async (path: string, timeoutMs = 8000): Promise<H1> =>
        (await agent<H1[]>(client, 'h1', { ip: webIp, port: 80, host: mesh.fqdn('web'), path, timeoutMs }))[0]!;
      const metrics = () => mesh.podFetch(client, 'http://127.0.0.1:4191/metrics').body;

      beforeAll(async () => {
        // The client's proxy follows the routes once /slow is cut and /split has reached both backends.
        const seen = new Set<string>();
        await waitFor(
          `${kind} in ${client} to follow the routes`,
          async () => {
            for (let i = 0; i < 10; i++) seen.add((await get('/split/probe')).headers?.['x-app'] ?? '');
            return seen.has('web-1') && seen.has('canary-1') && (await get('/slow/delay/3000')).status === 504
              ? true
              : undefined;
          },
          60_000,
          () =>
            `seen on /split: ${[...seen].join(', ')}\n${kind}:\n${mesh.logOf(`proxy-${client}`).slice(-3000)}\n` +
            `policy:\n${mesh.logOf('policy').slice(-2000)}`,
        );
      }, 90_000);

      it('request timeout: /slow/delay/3000 is cut with 504 at the route’s 1 s; a slow path outside it answers 200', async () => {
        const cut = await get('/slow/delay/3000');
        const slow = await get('/plain/delay/1500');
        console.log(
          `${kind} route timeout: /slow/delay/3000 → ${cut.error ?? cut.status} after ${cut.ms?.toFixed(0)} ms ` +
            `(${JSON.stringify(cut.headers?.['l5d-proxy-error'] ?? cut.headers?.['x-minimesh-proxy-error'] ?? '')}); ` +
            `/plain/delay/1500 → ${slow.error ?? slow.status} after ${slow.ms?.toFixed(0)} ms`,
        );
        expect(cut.status).toBe(504);
        // Not before the timeout: the 504 is the route's, not some other failure.
        expect(cut.ms).toBeGreaterThanOrEqual(950);
        expect(cut.headers['x-app']).toBeUndefined();
        expect(slow.status).toBe(200);
        expect(slow.headers['x-app']).toBe('web-1');
      }, 30_000);

      it('retries: 503 once comes back 200 from the second attempt; no retry outside the route; at most 2 retries', async () => {
        const retried = await get(`/retry/fail/1/${key()}`);
        const plain = await get(`/plain/fail/1/${key()}`);
        const exhausted = await get(`/retry/fail/9/${key()}`);
        console.log(
          `${kind} retries: /retry/fail/1 → ${retried.status} (attempt ${retried.headers?.['x-attempt']}); ` +
            `/plain/fail/1 → ${plain.status} (attempt ${plain.headers?.['x-attempt']}); ` +
            `/retry/fail/9 → ${exhausted.status} (attempt ${exhausted.headers?.['x-attempt']})`,
        );
        expect(retried.status).toBe(200);
        expect(retried.headers['x-attempt']).toBe('2');
        expect(plain.status).toBe(503);
        expect(plain.headers['x-attempt']).toBe('1');
        expect(exhausted.status).toBe(503);
        expect(exhausted.headers['x-attempt']).toBe('3');
        const lines = metrics()
          .split('\n')
          .filter((l) => l.startsWith('outbound_http_route_retry_') && l.includes('route_name="web-retry"'));
        console.log(`${kind} retry metrics:\n${lines.join('\n')}`);
        // Linkerd's retry metrics, on both proxies: 3 retries sent (1 for the first key, 2 for the last),
        // 1 of them answered 200, 1 request stopped at the limit.
        const value = (name: string) =>
          Number(
            lines
              .find((l) => l.startsWith(`${name}{`))
              ?.split(' ')
              .pop(),
          );
        expect(value('outbound_http_route_retry_requests_total')).toBe(3);
        expect(value('outbound_http_route_retry_successes_total')).toBe(1);
        expect(value('outbound_http_route_retry_limit_exceeded_total')).toBe(1);
      }, 30_000);

      it(`weighted backends: ${SPLIT_N} requests to /split, about 80/20 over web and web-canary`, async () => {
        const rs = await agent<H1[]>(client, 'h1', {
          ip: webIp,
          port: 80,
          host: mesh.fqdn('web'),
          path: '/split/x',
          n: SPLIT_N,
          parallel: 2,
          agentKey: 'split',
        });
        const counts: Record<string, number> = {};
        for (const r of rs) {
          const k = r.error ?? `${r.status} ${r.headers?.['x-app'] ?? ''}`;
          counts[k] = (counts[k] ?? 0) + 1;
        }
        console.log(`${kind} split over ${SPLIT_N} requests: ${JSON.stringify(counts)}`);
        expect(rs.every((r) => r.status === 200)).toBe(true);
        const canary = counts['200 canary-1'] ?? 0;
        expect((counts['200 web-1'] ?? 0) + canary).toBe(SPLIT_N);
        expect(canary).toBeGreaterThanOrEqual(CANARY_MIN);
        expect(canary).toBeLessThanOrEqual(CANARY_MAX);
      }, 120_000);
    });
  },
);
