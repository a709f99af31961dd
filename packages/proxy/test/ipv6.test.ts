// Issue 15 item 5: IPv6 through the mesh, as root on a dual-stack virtual node (NetnsMesh with
// ipv6): each pod has an IPv4 and an IPv6 address on its veth and both in its Pod's podIPs;
// proxy-init runs with the injector's arguments for proxyInit.ipv6=true (iptables AND ip6tables nat
// rules, nft mode); each proxy gets the listeners the injector writes when IPv6 is on
// (packages/injector/src/patch/proxy-container.ts): inbound [::]:4143, outbound 127.0.0.1:4140 and
// [::1]:4140, admin [::]:4191. The real identity and destination run against the local cluster.
//   client pod → (ip6tables OUTPUT) outbound [::1]:4140 → destination: the pod IP's endpoint and
//   identity → mTLS over IPv6 → (ip6tables PREROUTING) inbound [::]:4143 → app
// and the same over IPv4. A third pod keeps the listeners the injector wrote before IPv6 support
// (0.0.0.0:4143, 127.0.0.1:4140): there the IPv6 connection finds nothing, which is the bug this proves fixed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NetnsMesh, PROXY_UID, ROOT } from './support/netns-mesh.js';

const PROXY = join(ROOT, 'packages/proxy/dist/main.js');
const AGENT = join(ROOT, 'packages/proxy/test/apps/pod-agent.mjs');
const asRoot = process.getuid?.() === 0;

/** The injector's listener values with proxyInit.ipv6 on (buildProxyEnv in proxy-container.ts). */
const DUAL_STACK_LISTENERS = {
  MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '[::]:4143',
  MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140,[::1]:4140',
  MINIMESH_PROXY_ADMIN_LISTEN_ADDR: '[::]:4191',
  MINIMESH_PROXY_CONTROL_LISTEN_ADDR: '[::]:4190',
};
/** What it wrote before (IPv4 only): redirected IPv6 connections find no listener. */
const IPV4_ONLY_LISTENERS = {
  MINIMESH_PROXY_INBOUND_LISTEN_ADDR: '0.0.0.0:4143',
  MINIMESH_PROXY_OUTBOUND_LISTEN_ADDR: '127.0.0.1:4140',
  MINIMESH_PROXY_ADMIN_LISTEN_ADDR: '0.0.0.0:4191',
  MINIMESH_PROXY_CONTROL_LISTEN_ADDR: '0.0.0.0:4190',
};

let mesh: NetnsMesh;

describe.skipIf(!asRoot)('IPv6: a dual-stack pod, both families redirected and proxied', () => {
  beforeAll(async () => {
    if (!existsSync(PROXY)) throw new Error(`${PROXY} is missing: build the packages first (npm run build)`);
    mesh = await NetnsMesh.create('mm6', { ipv6: true });
    await mesh.addPod('c', 'client6');
    await mesh.addPod('s', 'web6');
    await mesh.addPod('old', 'old6');
    await mesh.startControlPlane();
    for (const pod of ['c', 's', 'old']) await mesh.meshPod(pod, { ipv6: true });
    for (const pod of ['s', 'old']) mesh.start(`app-${pod}`, [process.execPath, AGENT, 'server', pod], { pod });
    for (const [pod, listeners] of [
      ['c', { ...DUAL_STACK_LISTENERS, MINIMESH_PROXY_LOG: 'debug' }],
      ['s', DUAL_STACK_LISTENERS],
      ['old', IPV4_ONLY_LISTENERS],
    ] as const)
      mesh.start(`proxy-${pod}`, [process.execPath, PROXY], {
        pod,
        uid: PROXY_UID,
        env: mesh.minimeshEnv(pod, { MINIMESH_PROXY_LOG: 'info', ...listeners }),
      });
    for (const pod of ['c', 's', 'old']) await mesh.waitReady(pod, `proxy-${pod}`, 60_000);
  }, 300_000);

  afterAll(async () => {
    await mesh?.destroy();
  }, 60_000);

  it('proxy-init wrote its nat rules for both families in the pod (ip6tables, nft)', () => {
    const ns = mesh.pod('c').netns;
    for (const save of ['iptables-nft-save', 'ip6tables-nft-save']) {
      const rules = mesh.sh(['ip', 'netns', 'exec', ns, save, '-t', 'nat']);
      expect(rules, save).toMatch(/-A PROXY_INIT_REDIRECT .*--to-ports 4143/);
      expect(rules, save).toMatch(/-A PROXY_INIT_OUTPUT .*--to-ports 4140/);
    }
  });

  it('the proxy listens on [::]:4143 (both families) and on 127.0.0.1:4140 and [::1]:4140', () => {
    const listening = mesh.sh(['ip', 'netns', 'exec', mesh.pod('s').netns, 'ss', '-ltnH']);
    expect(listening).toMatch(/ (\*|\[::\]):4143 /);
    expect(listening).toMatch(/ 127\.0\.0\.1:4140 /);
    expect(listening).toMatch(/ \[::1\]:4140 /);
  });

  const metricsOf = (pod: string) => mesh.podFetch(pod, 'http://127.0.0.1:4191/metrics').body;
  const escape = (s: string) => s.replace(/[.[\]]/g, '\\$&');

  it.each([
    ['IPv6', () => `[${mesh.pod('s').ip6}]`, () => `[${mesh.pod('s').ip6}]:8080`],
    ['IPv4', () => mesh.pod('s').ip, () => `${mesh.pod('s').ip}:8080`],
  ])(
    '%s: client → outbound → mTLS → inbound → app, the app sees the client identity',
    async (family, host, targetAddr) => {
      // The first request to an address the proxy has not looked up before: it waits for destination's
      // answer (the pod's identity) and goes over mTLS. podFetchAsync keeps this process's control-plane
      // bridge flowing while the request waits (with the blocking podFetch, destination's answer waited in
      // the bridge until the proxy gave up after 1 s and forwarded in plaintext).
      type Body = { app: string; url: string; headers: Record<string, string> };
      const r = await mesh.podFetchAsync('c', `http://${host()}:8080/${family}`);
      expect(r.status, r.body).toBe(200);
      const body = JSON.parse(r.body) as Body;
      expect(body.app).toBe('s');
      expect(body.url).toBe(`/${family}`);
      expect(
        body.headers['l5d-client-id'],
        `client proxy:\n${mesh.logOf('proxy-c').slice(-4000)}\ndestination:\n${mesh.logOf('destination').slice(-3000)}`,
      ).toBe(mesh.pod('c').identity);
      // The server's proxy took it on its inbound listener, over mTLS, for the address of this family.
      expect(metricsOf('s')).toMatch(
        new RegExp(
          `request_total\\{direction="inbound"[^}]*target_addr="${escape(targetAddr())}"[^}]*tls="true",client_id="${escape(mesh.pod('c').identity)}"`,
        ),
      );
    },
    60_000,
  );

  it('with IPv4-only listeners (before the fix) the redirected IPv6 connection finds nothing', () => {
    const r = mesh.podFetch('c', `http://[${mesh.pod('old').ip6}]:8080/old`);
    expect(r.status).not.toBe(200);
    // ...while IPv4 to the same pod works: the failure is the missing [::] listener, nothing else.
    expect(mesh.podFetch('c', `http://${mesh.pod('old').ip}:8080/old`).status).toBe(200);
  });
});
