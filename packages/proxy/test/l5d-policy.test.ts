// Linkerd's own proxy as the sidecar of every pod, against minimesh's real control plane (identity,
// destination and the policy controller on the local cluster's API server; no stub): a Service with two
// endpoints whose Server admits only the `client` service account (an AuthorizationPolicy). The client's
// linkerd2-proxy balances its requests over both endpoints and gets 200; a meshed client with another
// identity and an unmeshed client get 403 from the servers' linkerd2-proxies, which count them in
// inbound_http_authz_deny_total with the Server's name. Runs when the linkerd2-proxy binary is given
// (MINIMESH_PEER_LINKERD2_PROXY, or /opt/minimesh-peers/linkerd2-proxy); otherwise it says why not.
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
const why = peerSkipReason('l5d-policy.test.ts', PEER, POLICY);

let mesh: NetnsMesh;
let webIp = '';
const SERVERS = ['srv-1', 'srv-2'];
const CLIENTS = ['client', 'other', 'plain'];

type H1 = { status: number; headers: Record<string, string>; body: string; error?: string };

function agent<T>(pod: string, op: string, body: unknown): Promise<T> {
  return callAgent<T>(join(mesh.dir, `agent-${pod}.sock`), op, body);
}

async function create(path: string, obj: unknown): Promise<void> {
  await adminClient().request('POST', path, obj);
}

describe.skipIf(why !== undefined)(
  `linkerd2-proxy enforces minimesh's policy${why ? ` (skipped: ${why})` : ` (${PEER})`}`,
  () => {
    beforeAll(async () => {
      mesh = await NetnsMesh.create('mmpl');
      for (const s of SERVERS) await mesh.addPod(s, 'web');
      await mesh.addPod('client', 'client');
      await mesh.addPod('other', 'other');
      await mesh.addPod('plain', 'plain', { meshed: false });
      webIp = await mesh.service('web', [{ name: 'http', port: 80, targetPort: 8080 }], SERVERS);
      await mesh.startControlPlane({ policy: POLICY.argv });
      // The policy before any proxy starts (startControlPlane installs the CRDs).
      await create(`/apis/${G}/v1beta3/namespaces/${mesh.kns}/servers`, {
        apiVersion: `${G}/v1beta3`,
        kind: 'Server',
        metadata: { name: 'web-http', namespace: mesh.kns },
        spec: {
          podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: SERVERS }] },
          port: 8080,
          proxyProtocol: 'HTTP/1',
        },
      });
      await create(`/apis/${G}/v1alpha1/namespaces/${mesh.kns}/authorizationpolicies`, {
        apiVersion: `${G}/v1alpha1`,
        kind: 'AuthorizationPolicy',
        metadata: { name: 'client-only', namespace: mesh.kns },
        spec: {
          targetRef: { group: G, kind: 'Server', name: 'web-http' },
          requiredAuthenticationRefs: [{ kind: 'ServiceAccount', name: 'client' }],
        },
      });
      for (const pod of [...SERVERS, 'client', 'other']) await mesh.meshPod(pod);
      for (const s of SERVERS) mesh.start(`app-${s}`, [process.execPath, AGENT, 'server', s], { pod: s });
      for (const c of CLIENTS) {
        mesh.start(`agent-${c}`, [process.execPath, AGENT, 'client', join(mesh.dir, `agent-${c}.sock`)], { pod: c });
        await waitFor(`the client agent in ${c}`, () => existsSync(join(mesh.dir, `agent-${c}.sock`)));
      }
      for (const pod of [...SERVERS, 'client', 'other'])
        mesh.start(`proxy-${pod}`, [PEER!], {
          pod,
          uid: PROXY_UID,
          env: await mesh.linkerdEnv(pod, '8080', {
            LINKERD2_PROXY_LOG: 'warn,linkerd=info',
            // The pods' own default, as the chart's deny namespace would set it.
            LINKERD2_PROXY_INBOUND_DEFAULT_POLICY: 'deny',
          }),
        });
      for (const pod of [...SERVERS, 'client', 'other']) await mesh.waitReady(pod, `proxy-${pod}`, 60_000);
    }, 300_000);

    afterAll(async () => {
      await mesh?.destroy();
    }, 60_000);

    it("admits the client's service account, balanced over both endpoints", async () => {
      const host = mesh.fqdn('web');
      const rs = await waitFor('200s from both endpoints', async () => {
        const got = await agent<H1[]>('client', 'h1', { ip: webIp, port: 80, host, n: 20, parallel: 2 });
        const apps = new Set(
          got.filter((r) => r.status === 200).map((r) => (JSON.parse(r.body) as { app: string }).app),
        );
        return got.every((r) => r.status === 200) && apps.size === 2 ? got : undefined;
      });
      const body = JSON.parse(rs[0]!.body) as { headers: Record<string, string> };
      expect(body.headers['l5d-client-id']).toBe(mesh.pod('client').identity);
    }, 60_000);

    it('refuses a meshed client with another identity: 403 from the server side', async () => {
      const rs = await agent<H1[]>('other', 'h1', { ip: webIp, port: 80, host: mesh.fqdn('web'), n: 6 });
      expect(rs.map((r) => r.error ?? r.status)).toEqual(Array(6).fill(403));
    });

    it('refuses an unmeshed client: 403', async () => {
      for (const s of SERVERS) {
        const rs = await agent<H1[]>('plain', 'h1', { ip: mesh.pod(s).ip, port: 8080, host: 'web', n: 2 });
        expect(rs.map((r) => r.error ?? r.status)).toEqual([403, 403]);
      }
    });

    it("counts allows and denies under the Server's and the policy's names", () => {
      const text = SERVERS.map((s) => mesh.podFetch(s, 'http://127.0.0.1:4191/metrics').body).join('\n');
      const lines = (name: string) => text.split('\n').filter((l) => l.startsWith(`${name}{`));
      const deny = lines('inbound_http_authz_deny_total').filter((l) => l.includes('srv_name="web-http"'));
      expect(deny.length).toBeGreaterThan(0);
      expect(deny.some((l) => l.includes(`client_id="${mesh.pod('other').identity}"`))).toBe(true);
      const allow = lines('inbound_http_authz_allow_total').filter(
        (l) => l.includes('srv_name="web-http"') && l.includes('authz_name="client-only"'),
      );
      expect(allow.length).toBeGreaterThan(0);
    });
  },
);
