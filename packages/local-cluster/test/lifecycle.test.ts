// The node agent's pod lifecycle beyond the basics: native sidecars (started, startup probe passed,
// before the next init container), liveness restarts, capabilities for non-root users, and
// Deployments through the real deployment and replicaset controllers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { adminClient, createNamespace, ensureCluster, podNetnsName, type KubeObject } from '../src/index.js';
import { eventually, uniqueName } from './helpers.js';

const ns = uniqueName('lc-life');
const admin = () => adminClient();
const getPod = (name: string) => admin().request('GET', `/api/v1/namespaces/${ns}/pods/${name}`);

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
            image: 'minimesh.test/http-echo:v1',
            restartPolicy: 'Always',
            env: [{ name: 'PORT', value: '8081' }],
            startupProbe: { httpGet: { path: '/healthz', port: 8081 }, periodSeconds: 1, failureThreshold: 30 },
          },
          {
            name: 'needs-sidecar',
            image: 'busybox',
            command: ['curl', '-sf', '--max-time', '2', 'http://127.0.0.1:8081/healthz'],
          },
        ],
        containers: [{ name: 'app', image: 'minimesh.test/http-echo:v1' }],
      },
    });
    const p = await eventually('sidecar pod Ready', async () => {
      const x = await getPod('sidecar');
      return x.status?.conditions?.find((c: KubeObject) => c.type === 'Ready')?.status === 'True' ? x : undefined;
    });
    const [proxy, init] = p.status.initContainerStatuses;
    expect(proxy).toMatchObject({ name: 'proxy', started: true, ready: true, restartCount: 0 });
    expect(proxy.state.running).toBeTruthy();
    expect(init.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    expect(init.restartCount).toBe(0);
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
            image: 'minimesh.test/http-echo:v1',
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
      30_000,
    );
    expect(p.status.containerStatuses[0].lastState.terminated).toBeTruthy();
  });

  it('gives a non-root container the capabilities it adds', async () => {
    await admin().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'caps' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: 'busybox',
            command: ['sh', '-c', 'test "$(id -u)" = 2102 && grep -q "^CapEff:.*0000000000001000$" /proc/self/status'],
            securityContext: { runAsUser: 2102, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } },
          },
        ],
      },
    });
    const p = await eventually('caps pod finished', async () => {
      const x = await getPod('caps');
      return ['Succeeded', 'Failed'].includes(x.status?.phase) ? x : undefined;
    });
    expect(p.status.containerStatuses[0].state.terminated.exitCode).toBe(0);
  });

  it("runs a Deployment: replicas become Running pods in the Service's EndpointSlice", async () => {
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
                image: 'minimesh.test/http-echo:v1',
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 2 },
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
      45_000,
    );
    expect(d.status.availableReplicas).toBe(2);
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
  it("a restarted node agent cleans what it left and runs the node's pods again", async () => {
    await admin().request('POST', `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'survivor' },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'minimesh.test/http-echo:v1',
            readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    });
    const ready = async () => {
      const x = await getPod('survivor');
      return x.status?.conditions?.find((c: KubeObject) => c.type === 'Ready')?.status === 'True' ? x : undefined;
    };
    const before = await eventually('survivor Ready', ready);
    const info = await ensureCluster();
    const oldPids = execFileSync('ip', ['netns', 'pids', podNetnsName(before.metadata.uid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    expect(oldPids.length).toBeGreaterThan(0);
    const agentPid = Number(readFileSync(join(info.dir, 'pids', 'node-agent.pid'), 'utf8'));
    process.kill(agentPid, 'SIGKILL');
    await eventually(
      'agent gone',
      () => !existsSync(`/proc/${agentPid}`) || /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${agentPid}/stat`, 'utf8')),
    );
    await ensureCluster();
    const after = await eventually(
      'survivor Ready again with a new container',
      async () => {
        const x = await ready();
        return x &&
          x.status.containerStatuses[0].state.running.startedAt !==
            before.status.containerStatuses[0].state.running.startedAt
          ? x
          : undefined;
      },
      30_000,
    );
    expect(after.status.podIP).toMatch(/^10\.23\./);
    // The old container processes are gone (the new agent destroyed the old namespace first). Their
    // parent, the old agent, was SIGKILLed, so a killed process may linger as a zombie until init reaps
    // it: a zombie is dead, and only a running process counts.
    const running = (pid: string) => {
      try {
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false; // gone
      }
    };
    expect(oldPids.filter(running)).toEqual([]);
  });
});
