import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { X509Certificate } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@minimesh/runtime';
import { createIntermediateCa, createRootCa, privateKeyPem, writeSecretVolume, type Ca } from '../test/helpers/pki.js';
import { parseTrustAnchors } from './ca/issuer.js';
import { createIssuerWatcher, type IssuerWatcher } from './issuer-watcher.js';
import { createIdentityMetrics } from './metrics.js';

let root: Ca;
let dir: string;
let watcher: IssuerWatcher | undefined;
let logText = '';
const registry = new Registry();

async function secretFiles(
  ca: Ca,
  scheme: 'minimesh.io/tls' | 'kubernetes.io/tls' = 'minimesh.io/tls',
): Promise<Record<string, string>> {
  const key = await privateKeyPem(ca.keys);
  return scheme === 'minimesh.io/tls'
    ? { 'crt.pem': ca.certPem, 'key.pem': key }
    : { 'tls.crt': ca.certPem, 'tls.key': key, 'ca.crt': root.certPem };
}

const fp = (ca: Ca): string => new X509Certificate(ca.certPem).fingerprint256;

async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${ms}ms waiting for ${what}`);
}

async function reloads(result: string): Promise<number> {
  const m = await registry.getSingleMetric('identity_issuer_reloads_total')?.get();
  return m?.values.find((v) => v.labels.result === result)?.value ?? 0;
}

beforeAll(async () => {
  root = await createRootCa();
  dir = await mkdtemp(join(tmpdir(), 'mm-id-watch-'));
});
afterAll(async () => {
  watcher?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('createIssuerWatcher', () => {
  it('follows Secret-volume swaps: a valid new issuer replaces the old, an invalid one is refused, logged and counted', async () => {
    const first = await createIntermediateCa(root, { name: 'issuer-1' });
    const second = await createIntermediateCa(root, { name: 'issuer-2' });
    const stranger = await createIntermediateCa(await createRootCa({ name: 'other-root' }), { name: 'stranger' });
    const volume = join(dir, 'minimesh');
    await writeSecretVolume(volume, await secretFiles(first));

    const out = new PassThrough();
    out.on('data', (d) => (logText += String(d)));
    const logger = createLogger({ name: 'identity', format: 'json', level: 'debug', destination: out });
    const metrics = createIdentityMetrics(registry, () => watcher?.current());
    // No poll: only the directory watch can notice the swaps.
    watcher = await createIssuerWatcher({
      dir: volume,
      scheme: 'minimesh.io/tls',
      anchors: parseTrustAnchors(root.certPem, 'ca.crt'),
      logger,
      metrics,
      debounceMs: 50,
      pollIntervalMs: 0,
    });
    const w = watcher;
    expect(w.current().fingerprint).toBe(fp(first));

    await writeSecretVolume(volume, await secretFiles(second));
    await eventually(() => w.current().fingerprint === fp(second), 'the second issuer to be picked up');
    expect(await reloads('updated')).toBe(1);
    expect(logText).toContain('"msg":"issuer updated"');

    await writeSecretVolume(volume, await secretFiles(stranger));
    await eventually(async () => (await reloads('refused')) === 1, 'the stranger to be refused');
    expect(w.current().fingerprint).toBe(fp(second));
    expect(logText).toMatch(
      /issuer update refused, keeping issuer [0-9A-F:]+: .*crt\.pem: issuer \\"CN=stranger\\" does not chain to the trust anchors/,
    );

    // An unchanged re-read is not a reload.
    expect(await w.reload()).toBe('unchanged');

    // A key that does not match its certificate is refused too.
    await writeSecretVolume(volume, { 'crt.pem': first.certPem, 'key.pem': await privateKeyPem(second.keys) });
    await eventually(async () => (await reloads('refused')) === 2, 'the mismatched key to be refused');
    expect(w.current().fingerprint).toBe(fp(second));
    expect(logText).toMatch(/key\.pem: private key does not match the issuer certificate/);

    await writeSecretVolume(volume, await secretFiles(first));
    await eventually(() => w.current().fingerprint === fp(first), 'the first issuer to come back');
    expect(await reloads('updated')).toBe(2);
    expect(logText).not.toContain('PRIVATE KEY');
    expect(await registry.metrics()).toMatch(/identity_issuer_cert_ttl_seconds \d+/);
  });

  it('reads the kubernetes.io/tls layout (tls.crt, tls.key) as cert-manager writes it', async () => {
    const ca = await createIntermediateCa(root, { name: 'from-cert-manager' });
    const volume = join(dir, 'cert-manager');
    await writeSecretVolume(volume, await secretFiles(ca, 'kubernetes.io/tls'));
    const w = await createIssuerWatcher({
      dir: volume,
      scheme: 'kubernetes.io/tls',
      anchors: parseTrustAnchors(root.certPem, 'ca.crt'),
      logger: createLogger({ name: 't', level: 'silent' }),
      pollIntervalMs: 0,
    });
    try {
      expect(w.current().fingerprint).toBe(fp(ca));
    } finally {
      w.close();
    }
  });
});
