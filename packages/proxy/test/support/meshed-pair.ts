// client → outbound A → mTLS → inbound B → an echo app, in-process on loopback with the fake control plane:
// the setup the in-process fault and hostile-input tests share. A's outbound sends the ClusterIP
// 10.96.0.80:80 to the Service WEB, whose one endpoint is B.
import type { RunningProxy } from '../../src/index.js';
import { h1Echo, listen } from './apps.js';
import { startFakeControlPlane, type FakeControlPlane } from './fake-control-plane.js';
import { removeTempDirs, startHarnessProxy } from './harness.js';
import { createTestPki, type TestPki } from './pki.js';

export const A_ID = 'client.default.serviceaccount.identity.minimesh.cluster.local';
export const B_ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
export const WEB = 'web.default.svc.cluster.local';

export interface MeshedPair {
  pki: TestPki;
  cp: FakeControlPlane;
  a: RunningProxy;
  b: RunningProxy;
  close(): Promise<void>;
}

/**
 * Starts the pair and waits until both proxies are ready. `leafLifetimeMs`: the certificates identity
 * issues; `appPort`: the app B forwards to, asked per connection (default: an HTTP/1 echo of its own).
 */
export async function startMeshedPair(
  opts: { leafLifetimeMs?: number; appPort?: () => number } = {},
): Promise<MeshedPair> {
  const pki = await createTestPki();
  const cp = await startFakeControlPlane(pki);
  if (opts.leafLifetimeMs !== undefined) cp.identity.lifetimeMs = opts.leafLifetimeMs;
  const web = opts.appPort ? undefined : h1Echo('web');
  const webPort = web ? await listen(web) : 0;
  const appPort = opts.appPort ?? (() => webPort);
  const b = await startHarnessProxy({
    identity: B_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    inbound: () => ({ ip: '127.0.0.1', port: appPort() }),
  });
  const a = await startHarnessProxy({
    identity: A_ID,
    anchorPem: pki.anchorPem,
    controlAddr: cp.addr,
    outbound: () => ({ ip: '10.96.0.80', port: 80 }),
  });
  cp.destination.set(`${WEB}:80`, [{ ip: '127.0.0.1', port: b.ports.inbound, identity: B_ID }]);
  cp.destination.profiles.set('10.96.0.80:80', { fullyQualifiedName: WEB });
  await Promise.all([a.ready, b.ready]);
  return {
    pki,
    cp,
    a,
    b,
    async close() {
      await a.shutdown(100);
      await b.shutdown(100);
      web?.close();
      await cp.close();
      removeTempDirs();
    },
  };
}
