// --certify-workers in the shipped forms of the program: dist/ (npm's bin) and the one-file bundle the
// image runs (scripts/bundle.mjs), where the worker is a chunk of its own. No API server is needed: the
// CSR check runs on a worker thread before the TokenReview, so a CSR for another identity is refused
// by the worker, and a good request reaches the (unreachable) API server only after the worker's check.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { identity } from '@minimesh/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINARY, startBinary, type RunningIdentity } from './helpers/binary.js';
import { makeTutorialPki } from './helpers/openssl-pki.js';
import { createCsr } from './helpers/pki.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../bundle/main.mjs', import.meta.url));
const WEB = 'web.default.serviceaccount.identity.minimesh.cluster.local';
let dir: string;
let kubeconfig: string;
let issuerDir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'mm-id-workers-'));
  makeTutorialPki(dir);
  issuerDir = join(dir, 'issuer');
  mkdirSync(issuerDir);
  copyFileSync(join(dir, 'issuer.crt'), join(issuerDir, 'crt.pem'));
  copyFileSync(join(dir, 'issuer.key'), join(issuerDir, 'key.pem'));
  // An API server that is not there (port 9, discard): start-up does not need it.
  kubeconfig = join(dir, 'kubeconfig.json');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'u', user: { token: 'not-a-token' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  // The bundle as the image builds it (from dist/, which the binary tests need anyway).
  execFileSync(process.execPath, [join(REPO, 'scripts/bundle.mjs'), 'identity'], { cwd: REPO, stdio: 'pipe' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function certify(port: number, req: identity.CertifyRequest): Promise<grpc.ServiceError | identity.CertifyResponse> {
  const client = new identity.IdentityClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.certify(req, new grpc.Metadata(), { deadline: Date.now() + 15_000 }, (err, res) => {
      client.close();
      resolve(err ?? (res as identity.CertifyResponse));
    });
  });
}

describe.each([
  ['dist/main.js', BINARY],
  ['bundle/main.mjs', BUNDLE],
])('%s with --certify-workers 2', (_name, binary) => {
  let server: RunningIdentity;
  beforeAll(async () => {
    server = await startBinary(
      [
        '--issuer-dir',
        issuerDir,
        '--issuer-scheme',
        'minimesh.io/tls',
        '--trust-anchors',
        join(dir, 'ca.crt'),
        '--kubeconfig',
        kubeconfig,
        '--certify-workers',
        '2',
      ],
      30_000,
      binary,
    );
  });
  afterAll(() => server.stop());

  it('starts two worker threads and checks CSRs on them, with the same refusals', async () => {
    expect(server.output()).toMatch(/"workers":2,.*"msg":"certify worker threads"/);
    const csr = (await createCsr({ dns: [WEB] })).der;
    const other = 'db.default.serviceaccount.identity.minimesh.cluster.local';
    const refused = (await certify(server.grpcPort, {
      identity: other,
      token: Buffer.from('t'),
      certificateSigningRequest: csr,
    })) as grpc.ServiceError;
    expect(refused.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(refused.details).toBe(`CSR: DNS SAN "${WEB}" does not match the requested identity "${other}"`);
    const garbage = (await certify(server.grpcPort, {
      identity: WEB,
      token: Buffer.from('t'),
      certificateSigningRequest: Buffer.from('garbage'),
    })) as grpc.ServiceError;
    expect(garbage.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(garbage.details).toMatch(/^CSR: not a DER-encoded PKCS#10 certificate request/);
    // A good CSR passes the worker's check and gets as far as the TokenReview, which cannot be made.
    const unreviewed = (await certify(server.grpcPort, {
      identity: WEB,
      token: Buffer.from('t'),
      certificateSigningRequest: csr,
    })) as grpc.ServiceError;
    expect(unreviewed.code).toBe(grpc.status.UNAVAILABLE);
    expect(unreviewed.details).toMatch(/TokenReview/);
    expect(server.child.exitCode).toBeNull();
  });
});
