// The specs' app objects, checked without a cluster: what each builder puts where (the pull policy on
// every container, the ServiceAccount a client runs as, the opt-out of injection, the namespace's scope).
import { describe, expect, it } from 'vitest';
import type { Driver } from '../drivers/types.js';
import { appObjects, deployment, echoServer, httpClient, meshedNamespace } from './apps.js';

const driver = { imagePullPolicy: 'Never', fixtureImage: (n: string) => `minimesh.test/${n}:e2e` } as Driver;
const m = { driver, appNs: 'shop', cpNs: 'mm-cp', scopeWebhook: true };
type Obj = { kind: string; metadata: { name: string; annotations?: object; labels?: object }; spec?: any }; // eslint-disable-line @typescript-eslint/no-explicit-any
const pods = (o: Obj) => o.spec.template.spec;

describe("the specs' apps", () => {
  it('a Deployment puts the driver’s pull policy and the defaults on every container', () => {
    const d = deployment(driver, 'shop', 'web', [{ name: 'a' }, { name: 'b' }], {
      replicas: 2,
      podLabels: { svc: 'web' },
      containerDefaults: { securityContext: { runAsNonRoot: true } },
    }) as Obj;
    expect(d.spec.replicas).toBe(2);
    expect(d.spec.selector).toEqual({ matchLabels: { app: 'web' } });
    expect(d.spec.template.metadata.labels).toEqual({ app: 'web', svc: 'web' });
    expect(pods(d).serviceAccountName).toBeUndefined();
    expect(pods(d).containers).toEqual([
      { name: 'a', imagePullPolicy: 'Never', securityContext: { runAsNonRoot: true } },
      { name: 'b', imagePullPolicy: 'Never', securityContext: { runAsNonRoot: true } },
    ]);
  });

  it('a client runs as its own ServiceAccount, or as the one it is given; unmeshed opts out of injection', () => {
    const own = httpClient(m, 'client', 'http://server/') as Obj[];
    expect(own.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(['ServiceAccount/client', 'Deployment/client']);
    expect(pods(own[1]!).serviceAccountName).toBe('client');
    const borrowed = httpClient(m, 'slow', 'http://server/delay', { serviceAccount: 'client', meshed: false }) as Obj[];
    expect(borrowed.map((o) => o.kind)).toEqual(['Deployment']);
    expect(pods(borrowed[0]!).serviceAccountName).toBe('client');
    expect(borrowed[0]!.spec.template.metadata.annotations).toEqual({ 'minimesh.io/inject': 'disabled' });
  });

  it('the echo server is its ServiceAccount, a Service on the HTTP port and a Deployment ready on /healthz', () => {
    const [sa, svc, dep] = echoServer(m, { graceSeconds: 2 }) as Obj[];
    expect([sa!.kind, svc!.kind, dep!.kind]).toEqual(['ServiceAccount', 'Service', 'Deployment']);
    expect(svc!.spec.ports).toEqual([{ name: 'http', port: 8080, targetPort: 8080 }]);
    expect(pods(dep!).terminationGracePeriodSeconds).toBe(2);
    expect(pods(dep!).containers[0].readinessProbe.httpGet).toEqual({ path: '/healthz', port: 8080 });
  });

  it('the namespace is injected and, on a shared cluster, scoped to the spec’s webhook', () => {
    const ns = meshedNamespace(m, { annotations: { 'config.minimesh.io/default-inbound-policy': 'deny' } }) as Obj;
    expect(ns.metadata.labels).toEqual({ 'mm-e2e-mesh': 'mm-cp' });
    expect(ns.metadata.annotations).toEqual({
      'minimesh.io/inject': 'enabled',
      'config.minimesh.io/default-inbound-policy': 'deny',
    });
    expect((meshedNamespace({ ...m, scopeWebhook: false }) as Obj).metadata.labels).toEqual({});
    expect((appObjects(m)[0] as Obj).metadata.labels).toEqual({ 'mm-e2e-mesh': 'mm-cp' });
  });
});
