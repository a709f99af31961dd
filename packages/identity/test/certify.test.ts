// The real thing: the built minimesh-identity binary on 127.0.0.1, a real gRPC client (the generated
// IdentityClient), the Linkerd tutorial's certificates made with openssl, and TokenReviews against the real API server
// of the local cluster, made with the identity ServiceAccount's own token and RBAC.
import { execFileSync } from 'node:child_process';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { health as healthProto, identity } from '@minimesh/proto';
import {
  adminClient,
  createNamespace,
  createServiceAccountToken,
  ensureCluster,
  kubeconfigForServiceAccount,
  KubeApiError,
  readAuditEvents,
} from '@minimesh/local-cluster';
import { startConnectionCounter } from '@minimesh/kube/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBinary, type RunningIdentity } from './helpers/binary.js';
import { makeTutorialPki, makeSigned, type TutorialPki } from './helpers/openssl-pki.js';
import { createCsr, createIntermediateCa, createRootCa, privateKeyPem, writeSecretVolume } from './helpers/pki.js';

const AUDIENCE = 'identity.minimesh.io';
const suffix = randomBytes(3).toString('hex');
const ns = `mm-id-${suffix}`;
const roleName = `mm-id-${suffix}-tokenreviews`;
const idFor = (sa: string, namespace = ns): string =>
  `${sa}.${namespace}.serviceaccount.identity.minimesh.cluster.local`;
const WEB = idFor('web');

let dir: string;
let pki: TutorialPki;
let issuerDir: string;
let server: RunningIdentity;
let client: identity.IdentityClient;
let kubeconfig: string;
const tokens = { web: '', wrongAudience: '', db: '', identitySa: '' };

function certify(req: Partial<identity.CertifyRequest>): Promise<identity.CertifyResponse> {
  return new Promise((resolve, reject) => {
    client.certify(
      {
        identity: req.identity ?? '',
        token: req.token ?? Buffer.alloc(0),
        certificateSigningRequest: req.certificateSigningRequest ?? Buffer.alloc(0),
      },
      new grpc.Metadata(),
      { deadline: Date.now() + 15_000 },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

async function refusal(req: Partial<identity.CertifyRequest>): Promise<grpc.ServiceError> {
  try {
    await certify(req);
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('Certify succeeded but should have been refused');
}

const pem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`;

async function admin(method: string, path: string, body?: unknown): Promise<void> {
  try {
    await adminClient().request(method, path, body);
  } catch (err) {
    if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409))) throw err;
  }
}

beforeAll(async () => {
  await ensureCluster();
  dir = mkdtempSync(join(tmpdir(), 'mm-id-certify-'));
  pki = makeTutorialPki(dir);
  issuerDir = join(dir, 'issuer');
  await writeSecretVolume(issuerDir, {
    'crt.pem': readFileSync(pki.issuerCrt, 'utf8'),
    'key.pem': readFileSync(pki.issuerKey, 'utf8'),
  });

  // The identity ServiceAccount may create TokenReviews: real RBAC, nothing more.
  await createNamespace(ns);
  await admin('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: roleName },
    rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }],
  });
  await admin('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: roleName },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
    subjects: [{ kind: 'ServiceAccount', name: 'minimesh-identity', namespace: ns }],
  });
  kubeconfig = await kubeconfigForServiceAccount({ namespace: ns, serviceAccount: 'minimesh-identity' });
  tokens.identitySa =
    (JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]?.user.token ??
    '';
  tokens.web = await createServiceAccountToken({ namespace: ns, serviceAccount: 'web', audiences: [AUDIENCE] });
  tokens.wrongAudience = await createServiceAccountToken({
    namespace: ns,
    serviceAccount: 'web',
    audiences: ['https://some-other-service.example'],
  });
  tokens.db = await createServiceAccountToken({ namespace: ns, serviceAccount: 'db', audiences: [AUDIENCE] });

  server = await startBinary([
    '--issuer-dir',
    issuerDir,
    '--trust-anchors',
    pki.caCrt,
    '--kubeconfig',
    kubeconfig,
    '--trust-domain',
    'cluster.local',
    '--controller-namespace',
    'minimesh',
    '--log-level',
    'trace',
  ]);
  client = new identity.IdentityClient(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
}, 600_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await admin('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${roleName}`);
  await admin('DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${roleName}`);
  await admin('DELETE', `/api/v1/namespaces/${ns}`);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Certify against the real API server', () => {
  it('reuses its kept-alive connections to the API server: 1,000 Certify calls (16 at a time) open at most 4', async () => {
    // The identity's kubeconfig, pointed at a relay that counts the connections the API server accepts.
    const api = new URL(JSON.parse(readFileSync(kubeconfig, 'utf8')).clusters[0].cluster.server as string);
    const relay = await startConnectionCounter({ host: api.hostname, port: Number(api.port) });
    const relayed = join(dir, 'relayed.kubeconfig');
    const kc = JSON.parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
    for (const c of kc.clusters) c.cluster.server = `https://127.0.0.1:${relay.port}`;
    writeFileSync(relayed, JSON.stringify(kc));
    const counted = await startBinary([
      '--issuer-dir',
      issuerDir,
      '--trust-anchors',
      pki.caCrt,
      '--kubeconfig',
      relayed,
    ]);
    const c = new identity.IdentityClient(`127.0.0.1:${counted.grpcPort}`, grpc.credentials.createInsecure());
    try {
      const { der } = await createCsr({ dns: [WEB], cn: WEB });
      const call = (): Promise<identity.CertifyResponse> =>
        new Promise((resolve, reject) =>
          c.certify({ identity: WEB, token: Buffer.from(tokens.web), certificateSigningRequest: der }, (err, res) =>
            err ? reject(err) : resolve(res),
          ),
        );
      let issued = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next++ < 1000) if ((await call()).leafCertificate.length > 0) issued++;
        }),
      );
      expect(issued).toBe(1000);
      // One HTTP/2 connection (src/main.ts) carries every TokenReview and the /version probes
      // (before: one connection per Certify).
      console.log(`1,000 Certify calls: ${relay.connections} connection(s) to the API server`);
      expect(relay.connections).toBe(1);
    } finally {
      c.close();
      await counted.stop();
      await relay.close();
    }
  }, 300_000);

  it('issues a leaf that openssl verifies against ca.crt with issuer.crt as the untrusted intermediate', async () => {
    const { der } = await createCsr({ dns: [WEB], cn: WEB });
    const t0 = Date.now();
    const res = await certify({ identity: WEB, token: Buffer.from(tokens.web), certificateSigningRequest: der });
    writeFileSync(join(dir, 'leaf.crt'), pem(res.leafCertificate));
    const verified = execFileSync('openssl', ['verify', '-CAfile', 'ca.crt', '-untrusted', 'issuer.crt', 'leaf.crt'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(verified.trim()).toBe('leaf.crt: OK');
    // And as a TLS client or server would use it.
    execFileSync(
      'openssl',
      ['verify', '-purpose', 'sslclient', '-CAfile', 'ca.crt', '-untrusted', 'issuer.crt', 'leaf.crt'],
      { cwd: dir },
    );
    execFileSync(
      'openssl',
      ['verify', '-purpose', 'sslserver', '-CAfile', 'ca.crt', '-untrusted', 'issuer.crt', 'leaf.crt'],
      { cwd: dir },
    );

    expect(res.intermediateCertificates).toEqual([new X509Certificate(readFileSync(pki.issuerCrt)).raw]);
    const leaf = new X509Certificate(res.leafCertificate);
    expect(leaf.subjectAltName).toBe(`DNS:${WEB}`);
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    const validUntil = res.validUntil as Date;
    expect(validUntil.getTime()).toBe(new Date(leaf.validTo).getTime());
    // 24h + 20s skew from now (whole seconds).
    expect(validUntil.getTime()).toBeGreaterThanOrEqual(t0 + 86_420_000 - 1000);
    expect(validUntil.getTime()).toBeLessThanOrEqual(Date.now() + 86_420_000);
    expect(new Date(leaf.validFrom).getTime()).toBeLessThanOrEqual(t0 - 19_000);
  });

  it('issues leaves two workloads can use for mutual TLS 1.3 with only ca.crt as trust', async () => {
    const issue = async (sa: 'web' | 'db'): Promise<{ key: string; cert: string }> => {
      const { der, keys } = await createCsr({ dns: [idFor(sa)] });
      const res = await certify({
        identity: idFor(sa),
        token: Buffer.from(tokens[sa]),
        certificateSigningRequest: der,
      });
      return {
        key: await privateKeyPem(keys, 'pkcs8'),
        cert: [res.leafCertificate, ...res.intermediateCertificates].map(pem).join(''),
      };
    };
    const [web, db] = await Promise.all([issue('web'), issue('db')]);
    const ca = readFileSync(pki.caCrt);
    const srv = tls.createServer(
      { ...web, ca, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' },
      (sock) => {
        sock.end((sock.getPeerCertificate().subjectaltname ?? 'none') + '\n');
      },
    );
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    try {
      const port = (srv.address() as { port: number }).port;
      const seen = await new Promise<string>((resolve, reject) => {
        const sock = tls.connect({
          host: '127.0.0.1',
          port,
          servername: WEB,
          ...db,
          ca,
          checkServerIdentity: (host, cert) => tls.checkServerIdentity(host, cert),
        });
        let text = '';
        sock.on('data', (d) => (text += String(d)));
        sock.on('end', () => resolve(text.trim()));
        sock.on('error', reject);
      });
      expect(seen).toBe(`DNS:${idFor('db')}`);
    } finally {
      srv.close();
    }
  });

  it('shows up in the audit log as a TokenReview created by the identity ServiceAccount, allowed by RBAC', () => {
    const events = readAuditEvents(
      (e) =>
        e.user.username === `system:serviceaccount:${ns}:minimesh-identity` && e.objectRef?.resource === 'tokenreviews',
    );
    expect(events.length).toBeGreaterThan(0);
    expect(events.some((e) => e.verb === 'create' && e.responseStatus?.code === 201)).toBe(true);
  });

  it.each([
    [
      'no identity',
      () => ({ token: Buffer.from(tokens.web), certificateSigningRequest: Buffer.from([0x30, 0]) }),
      grpc.status.INVALID_ARGUMENT,
      /^request has no identity$/,
    ],
    [
      'no token',
      () => ({ identity: WEB, certificateSigningRequest: Buffer.from([0x30, 0]) }),
      grpc.status.INVALID_ARGUMENT,
      /^request has no token$/,
    ],
    [
      'no CSR',
      () => ({ identity: WEB, token: Buffer.from(tokens.web) }),
      grpc.status.INVALID_ARGUMENT,
      /^request has no certificate_signing_request$/,
    ],
    [
      'a CSR that is not DER',
      () => ({
        identity: WEB,
        token: Buffer.from(tokens.web),
        certificateSigningRequest: Buffer.from('-----BEGIN CERTIFICATE REQUEST-----'),
      }),
      grpc.status.INVALID_ARGUMENT,
      /^CSR: not a DER-encoded PKCS#10/,
    ],
  ])('refuses %s with InvalidArgument', async (_name, req, code, message) => {
    const err = await refusal(req());
    expect(err.code).toBe(code);
    expect(err.details).toMatch(message);
  });

  it.each([
    ['an RSA key', { kind: 'RSA' as const, dns: [WEB] }, /key is RSA, expected ECDSA P-256/],
    ['a P-384 key', { kind: 'P-384' as const, dns: [WEB] }, /key is ECDSA P-384/],
    ['a SAN for another identity', { dns: [idFor('db')] }, /DNS SAN ".*" does not match the requested identity/],
    ['two DNS SANs', { dns: [WEB, idFor('db')] }, /has 2 DNS SANs/],
    ['no SAN', { cn: WEB }, /has 0 DNS SANs/],
    ['an IP SAN', { dns: [WEB], ips: ['10.23.0.7'] }, /ip SAN/],
    ['a URI SAN', { dns: [WEB], uris: ['spiffe://cluster.local/ns/x/sa/web'] }, /uri SAN/],
    ['an email SAN', { dns: [WEB], emails: ['web@example.com'] }, /email SAN/],
    ['a different CN', { dns: [WEB], cn: 'admin' }, /CommonName "admin" does not match/],
  ])('refuses a CSR with %s with InvalidArgument', async (_name, csrOpts, message) => {
    const { der } = await createCsr(csrOpts);
    const err = await refusal({ identity: WEB, token: Buffer.from(tokens.web), certificateSigningRequest: der });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(message);
  });

  it('refuses a token minted for another audience with Unauthenticated', async () => {
    const { der } = await createCsr({ dns: [WEB] });
    const err = await refusal({
      identity: WEB,
      token: Buffer.from(tokens.wrongAudience),
      certificateSigningRequest: der,
    });
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.details).toMatch(/^token not authenticated: .*audience/);
  });

  it('refuses a token that is not a token with Unauthenticated', async () => {
    const { der } = await createCsr({ dns: [WEB] });
    const err = await refusal({ identity: WEB, token: Buffer.from('not-a-jwt'), certificateSigningRequest: der });
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("refuses another service account's token with PermissionDenied", async () => {
    const { der } = await createCsr({ dns: [WEB] });
    const err = await refusal({ identity: WEB, token: Buffer.from(tokens.db), certificateSigningRequest: der });
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(err.details).toBe(
      `token belongs to system:serviceaccount:${ns}:db (identity ${idFor('db')}), not to the requested identity ${WEB}`,
    );
  });

  it('refuses a good token asking for the same name in another namespace with PermissionDenied', async () => {
    const other = idFor('web', 'default');
    const { der } = await createCsr({ dns: [other] });
    const err = await refusal({ identity: other, token: Buffer.from(tokens.web), certificateSigningRequest: der });
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
  });

  it('serves gRPC health and reflection so ordinary gRPC tools can call it', async () => {
    const h = new healthProto.HealthClient(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
    const status = await new Promise<healthProto.HealthCheckResponse_ServingStatus>((resolve, reject) =>
      h.check({ service: 'io.linkerd.proxy.identity.Identity' }, (e, r) => (e ? reject(e) : resolve(r.status))),
    );
    expect(status).toBe(healthProto.HealthCheckResponse_ServingStatus.SERVING);
    h.close();

    const reflectionProto = createRequire(import.meta.url).resolve(
      '@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto',
    );
    const refl = grpc.loadPackageDefinition(protoLoader.loadSync(reflectionProto, { keepCase: true })) as unknown as {
      grpc: {
        reflection: {
          v1: {
            ServerReflection: new (
              addr: string,
              creds: grpc.ChannelCredentials,
            ) => grpc.Client & {
              ServerReflectionInfo(): grpc.ClientDuplexStream<
                object,
                { list_services_response?: { service: { name: string }[] } }
              >;
            };
          };
        };
      };
    };
    const r = new refl.grpc.reflection.v1.ServerReflection(
      `127.0.0.1:${server.grpcPort}`,
      grpc.credentials.createInsecure(),
    );
    const stream = r.ServerReflectionInfo();
    const services = await new Promise<string[]>((resolve, reject) => {
      stream.on('data', (m) => {
        resolve((m.list_services_response?.service ?? []).map((svc: { name: string }) => svc.name));
        stream.end();
      });
      stream.on('error', reject);
      stream.write({ list_services: '*' });
    });
    r.close();
    expect(services.sort()).toEqual(['grpc.health.v1.Health', 'io.linkerd.proxy.identity.Identity']);
  });

  it('serves /live, /ready and /metrics with results by outcome and the issuer TTL', async () => {
    const base = `http://127.0.0.1:${server.adminPort}`;
    expect((await fetch(`${base}/live`)).status).toBe(200);
    expect((await fetch(`${base}/ready`)).status).toBe(200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/identity_certify_requests_total\{result="ok"\} [1-9]/);
    expect(metrics).toMatch(/identity_certify_requests_total\{result="invalid_argument"\} [1-9]/);
    expect(metrics).toMatch(/identity_certify_requests_total\{result="unauthenticated"\} [1-9]/);
    expect(metrics).toMatch(/identity_certify_requests_total\{result="permission_denied"\} [1-9]/);
    expect(metrics).toMatch(/identity_certify_duration_seconds_bucket\{le="0.1",result="ok"\} [1-9]/);
    const ttl = Number(/^identity_issuer_cert_ttl_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(ttl).toBeGreaterThan(364 * 86_400);
    expect(ttl).toBeLessThanOrEqual(365 * 86_400);
  });

  it('hot-reloads the issuer: new leaves come from the new issuer; an invalid one is refused and the old kept', async () => {
    makeSigned(dir, { name: 'issuer2', ca: 'ca', cn: 'identity-2.minimesh.cluster.local', profile: 'intermediate-ca' });
    await writeSecretVolume(issuerDir, {
      'crt.pem': readFileSync(join(dir, 'issuer2.crt'), 'utf8'),
      'key.pem': readFileSync(join(dir, 'issuer2.key'), 'utf8'),
    });
    const { der } = await createCsr({ dns: [WEB] });
    const issuedBy = async (): Promise<string> =>
      new X509Certificate(
        (await certify({ identity: WEB, token: Buffer.from(tokens.web), certificateSigningRequest: der }))
          .leafCertificate,
      ).issuer;
    const deadline = Date.now() + 10_000;
    while ((await issuedBy()) !== 'CN=identity-2.minimesh.cluster.local' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(await issuedBy()).toBe('CN=identity-2.minimesh.cluster.local');

    // Certificate and key from different issuers: refused, counted, and issuer2 keeps signing.
    await writeSecretVolume(issuerDir, {
      'crt.pem': readFileSync(pki.issuerCrt, 'utf8'),
      'key.pem': readFileSync(join(dir, 'issuer2.key'), 'utf8'),
    });
    const refusedCount = async (): Promise<number> =>
      Number(
        /identity_issuer_reloads_total\{result="refused"\} (\d+)/.exec(
          await (await fetch(`http://127.0.0.1:${server.adminPort}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const until = Date.now() + 10_000;
    while ((await refusedCount()) < 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await refusedCount()).toBe(1);
    expect(await issuedBy()).toBe('CN=identity-2.minimesh.cluster.local');
    expect(server.output()).toMatch(
      /issuer update refused, keeping issuer .*key\.pem: private key does not match the issuer certificate/,
    );
  });

  it('never logs a token or a private key (trace level, after every kind of request)', () => {
    const out = server.output();
    expect(out).toContain('"msg":"issuer loaded"');
    for (const [name, token] of Object.entries(tokens)) {
      expect(token.length, name).toBeGreaterThan(20);
      expect(out).not.toContain(token);
      // Not even a JWT segment of it.
      for (const part of token.split('.')) expect(out).not.toContain(part);
    }
    for (const keyFile of [pki.issuerKey, join(dir, 'issuer2.key')]) {
      const body = readFileSync(keyFile, 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('-----'));
      for (const line of body) expect(out).not.toContain(line);
    }
    expect(out).not.toContain('PRIVATE KEY');
  });
});

describe('an issuer that expires while the server runs', () => {
  it('answers Unavailable, and /ready turns 503', async () => {
    const root = await createRootCa({ name: 'short-lived-root' });
    const expiresAt = new Date(Math.ceil((Date.now() + 4000) / 1000) * 1000);
    const ca = await createIntermediateCa(root, { notAfter: expiresAt });
    const d = join(dir, 'short-lived');
    await writeSecretVolume(d, { 'crt.pem': ca.certPem, 'key.pem': await privateKeyPem(ca.keys) });
    writeFileSync(join(dir, 'short-root.crt'), root.certPem);
    const s = await startBinary([
      '--issuer-dir',
      d,
      '--trust-anchors',
      join(dir, 'short-root.crt'),
      '--kubeconfig',
      kubeconfig,
    ]);
    const c = new identity.IdentityClient(`127.0.0.1:${s.grpcPort}`, grpc.credentials.createInsecure());
    try {
      const { der } = await createCsr({ dns: [WEB] });
      const ask = () =>
        new Promise<grpc.ServiceError | null>((resolve) =>
          c.certify({ identity: WEB, token: Buffer.from(tokens.web), certificateSigningRequest: der }, (err) =>
            resolve(err),
          ),
        );
      expect(await ask()).toBeNull();
      await new Promise((r) => setTimeout(r, Math.max(0, expiresAt.getTime() - Date.now() + 1100)));
      const err = await ask();
      expect(err?.code).toBe(grpc.status.UNAVAILABLE);
      expect(err?.details).toBe(`the issuer expired at ${expiresAt.toISOString()}`);
      const ready = await fetch(`http://127.0.0.1:${s.adminPort}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toContain('the issuer has expired');
    } finally {
      c.close();
      await s.stop();
    }
  });
});
