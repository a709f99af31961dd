// The kubelet's pod lifecycle as minimesh uses it: a native sidecar (started, startup probe passed)
// before the next init container, liveness restarts, an init container with only NET_ADMIN and
// NET_RAW as a non-root user, and a Deployment through the real scheduler, deployment and replicaset
// controllers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient, createNamespace, ensureCluster, type KubeObject } from '../src/index.js';
import { eventually, fixture, nodeScript, uniqueName } from './helpers.js';

const ns = uniqueName('lc-life');
const admin = () => adminClient();
const getPod = (name: string) => admin().request('GET', `/api/v1/namespaces/${ns}/pods/${name}`);
const isReady = (p: KubeObject) => p.status?.conditions?.find((c: KubeObject) => c.type === 'Ready')?.status === 'True';

beforeAll(async () => {
  await ensureCluster();
  await createNamespace(ns);
});

afterAll(async () => {
  await admin()
    .request('DELETE', `/api/v1/namespaces/${ns}`)
    .catch(() => undefined);
});

describe('pod lifecycle', () => {
  it('starts a native sidecar and waits for its startup probe before the next init container', async () => {
    await admin().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sidecar' },
      spec: {
        initContainers: [
          {
            name: 'proxy',
            image: fixture('http-echo'),
            restartPolicy: 'Always',
            env: [{ name: 'PORT', value: '8081' }],
            startupProbe: { httpGet: { path: '/healthz', port: 8081 }, periodSeconds: 1, failureThreshold: 30 },
          },
          nodeScript(
            'needs-sidecar',
            "fetch('http://127.0.0.1:8081/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(2))",
          ),
        ],
        containers: [{ name: 'app', image: fixture('http-echo') }],
      },
    });
    const p = await eventually('sidecar pod Ready', async () => {
      const x = await getPod('sidecar');
      return isReady(x) ? x : undefined;
    });
    const [proxy, init] = p.status.initContainerStatuses;
    expect(proxy).toMatchObject({ name: 'proxy', started: true, ready: true, restartCount: 0 });
    expect(proxy.state.running).toBeTruthy();
    expect(init.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(init.restartCount).toBe(0);
    // The sidecar was running before the init container that needs it started.
    expect(Date.parse(proxy.state.running.startedAt)).toBeLessThanOrEqual(Date.parse(init.state.terminated.startedAt));
    expect(p.status.containerStatuses[0].state.running).toBeTruthy();
  });

  it('restarts a container whose liveness probe fails', async () => {
    await admin().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'unlive' },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'app',
            image: fixture('http-echo'),
            livenessProbe: { httpGet: { path: '/status/500', port: 8080 }, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      },
    });
    const p = await eventually(
      'a liveness restart',
      async () => {
        const x = await getPod('unlive');
        return x.status?.containerStatuses?.[0]?.restartCount >= 1 ? x : undefined;
      },
      45_000,
    );
    expect(p.status.containerStatuses[0].lastState.terminated).toBeTruthy();
  });

  it('gives a non-root init container exactly the capabilities it adds (NET_ADMIN, NET_RAW)', async () => {
    // CapEff as the kernel reports it: NET_ADMIN is bit 12, NET_RAW bit 13.
    await admin().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'caps' },
      spec: {
        restartPolicy: 'Never',
        initContainers: [
          nodeScript(
            'init',
            "const s = require('node:fs').readFileSync('/proc/self/status', 'utf8'); console.log(process.getuid(), /CapBnd:\\s*(\\w+)/.exec(s)[1]);",
            {
              securityContext: {
                runAsUser: 2102,
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
              },
            },
          ),
        ],
        containers: [nodeScript('main', 'console.log("ok")')],
      },
    });
    await eventually('caps pod finished', async () => {
      const x = await getPod('caps');
      return ['Succeeded', 'Failed'].includes(x.status?.phase) ? x : undefined;
    });
    const logs = await admin().request<string>('GET', `/api/v1/namespaces/${ns}/pods/caps/log?container=init`);
    expect(String(logs).trim()).toBe('2102 0000000000003000');
  });

  it('runs a Deployment: the scheduler binds the replicas, which become ready endpoints of the Service', async () => {
    await admin().request('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            containers: [
              {
                name: 'app',
                image: fixture('http-echo'),
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    });
    await admin().request('POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const d = await eventually(
      'deployment available',
      async () => {
        const x = await admin().request('GET', `/apis/apps/v1/namespaces/${ns}/deployments/web`);
        return x.status?.readyReplicas === 2 ? x : undefined;
      },
      60_000,
    );
    expect(d.status.availableReplicas).toBe(2);
    const events = await admin().request('GET', `/api/v1/namespaces/${ns}/events?fieldSelector=reason%3DScheduled`);
    expect(
      events.items.filter(
        (e: KubeObject) => e.source?.component === 'default-scheduler' || e.reportingComponent === 'default-scheduler',
      ).length,
    ).toBeGreaterThanOrEqual(2);
    await eventually('2 ready endpoints', async () => {
      const list = await admin().request(
        'GET',
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io/service-name=web`,
      );
      const ready = list.items
        .flatMap((s: KubeObject) => s.endpoints ?? [])
        .filter((e: KubeObject) => e.conditions.ready);
      return ready.length === 2;
    });
  });
});
