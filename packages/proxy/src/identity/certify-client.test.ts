import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { createLogger } from '@minimesh/runtime';
import { removeTempDirs, tempDir } from '../../test/support/harness.js';
import { createTestPki, type TestPki } from '../../test/support/pki.js';
import { startFakeControlPlane, type FakeControlPlane } from '../../test/support/fake-control-plane.js';
import { ProxyMetrics } from '../metrics/metrics.js';
import { TlsCredentials, dnsNames } from '../tls/credentials.js';
import { CertifyClient } from './certify-client.js';

const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';
const logger = createLogger({ name: 'test', level: 'silent' });
let pki: TestPki;
let cp: FakeControlPlane;
beforeAll(async () => {
  pki = await createTestPki();
  cp = await startFakeControlPlane(pki);
});
afterAll(async () => {
  await cp.close();
  removeTempDirs();
});

describe('CertifyClient', () => {
  it('certifies with the token file, renews before expiry, re-reads the token, swaps the context', async () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'token-1\n');
    cp.identity.lifetimeMs = 1500;
    cp.identity.tokens = [];
    const creds = new TlsCredentials(ID, pki.anchorPem);
    const metrics = new ProxyMetrics(new Registry());
    const client = new CertifyClient({
      addr: { addr: cp.addr, name: undefined, plaintext: true },
      localIdentity: ID,
      tokenFile,
      tls: creds,
      metrics,
      logger,
      schedule: { minMs: 200 },
    });
    await client.start();
    const first = creds.certificate!;
    const firstCtx = creds.context;
    expect(dnsNames({ subjectaltname: first.leaf.subjectAltName })).toEqual([ID]);
    expect(first.chainPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    writeFileSync(tokenFile, 'token-2\n');
    // 70 % of ~1.5 s (clamped to the test's 200 ms minimum): a renewal within ~1.5 s.
    for (let i = 0; i < 40 && creds.certificate === first; i++) await new Promise((r) => setTimeout(r, 100));
    expect(creds.certificate).not.toBe(first);
    expect(creds.context).not.toBe(firstCtx);
    expect(cp.identity.tokens.slice(0, 2)).toEqual(['token-1', 'token-2']);
    expect(await metrics.registry.getSingleMetricAsString('control_identity_cert_refreshes_total')).toMatch(
      /result="ok"\} [2-9]/,
    );
    client.stop();
  });

  it('backs off and retries when identity fails, keeping the current certificate', async () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'token');
    cp.identity.lifetimeMs = 86400_000;
    cp.identity.failNext = 2;
    const creds = new TlsCredentials(ID, pki.anchorPem);
    const metrics = new ProxyMetrics(new Registry());
    const client = new CertifyClient({
      addr: { addr: cp.addr, name: undefined, plaintext: true },
      localIdentity: ID,
      tokenFile,
      tls: creds,
      metrics,
      logger,
      schedule: { backoffBaseMs: 50 },
    });
    await client.start();
    expect(creds.certificate).toBeDefined();
    expect(await metrics.registry.getSingleMetricAsString('control_identity_cert_refreshes_total')).toMatch(
      /result="error"\} 2/,
    );
    client.stop();
  });
});
