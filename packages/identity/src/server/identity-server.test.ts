import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { identity } from '@minimesh/proto';
import { createLogger } from '@minimesh/runtime';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCsr, createIntermediateCa, createRootCa, issuerOf } from '../../test/helpers/pki.js';
import type { Issuer } from '../ca/issuer.js';
import { createCertifier } from '../certifier.js';
import { IdentityError } from '../errors.js';
import { createIdentityMetrics } from '../metrics.js';
import { DEFAULT_LISTEN_BACKLOG, startIdentityServer, toGrpcStatus, type IdentityServer } from './identity-server.js';

const somaxconn = (): number => Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));

const WEB = 'web.default.serviceaccount.identity.minimesh.cluster.local';
let issuer: Issuer;
let current: Issuer | undefined;
let apiDown = false;
let server: IdentityServer;
let client: identity.IdentityClient;
let logs = '';
const registry = new Registry();

beforeAll(async () => {
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  issuer = await issuerOf(ca, root);
  current = issuer;
  const out = new PassThrough();
  out.on('data', (d) => (logs += String(d)));
  const logger = createLogger({ name: 'identity', format: 'json', level: 'trace', destination: out });
  const certifier = createCertifier({
    issuer: () => current,
    reviewer: {
      async review(token) {
        if (apiDown)
          throw new IdentityError(
            'MINIMESH_IDENTITY_TOKEN_REVIEW_FAILED',
            'TokenReview: connect ECONNREFUSED 127.0.0.1:6443',
          );
        return token === 'web-secret-token'
          ? { authenticated: true, username: 'system:serviceaccount:default:web' }
          : { authenticated: false, reason: 'invalid bearer token' };
      },
    },
    controllerNamespace: 'minimesh',
    trustDomain: 'cluster.local',
    lifetime: 86_400_000,
    clockSkew: 20_000,
  });
  server = await startIdentityServer({
    addr: '127.0.0.1:0',
    certifier,
    logger,
    metrics: createIdentityMetrics(registry, () => current),
    serving: () => current !== undefined,
  });
  client = new identity.IdentityClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await server.close();
});

function certify(
  req: identity.CertifyRequest,
): Promise<{ err: grpc.ServiceError | null; res?: identity.CertifyResponse }> {
  return new Promise((resolve) => client.certify(req, (err, res) => resolve({ err, res })));
}

describe('identity gRPC server', () => {
  it("listens with its own backlog (ss shows it as the listening socket's Send-Q), 4096 by default", async () => {
    const backlogOf = (port: number): number => {
      const out = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim();
      return Number(out.split(/\s+/)[2]);
    };
    const other = await startIdentityServer({
      addr: '127.0.0.1:0',
      certifier: createCertifier({
        issuer: () => current,
        reviewer: { review: async () => ({ authenticated: false, reason: 'no' }) },
        controllerNamespace: 'minimesh',
        trustDomain: 'cluster.local',
        lifetime: 86_400_000,
        clockSkew: 20_000,
      }),
      logger: createLogger({ name: 'identity', level: 'silent' }),
      listenBacklog: 1234,
    });
    try {
      expect(backlogOf(other.port)).toBe(1234);
      expect(backlogOf(server.port)).toBe(Math.min(DEFAULT_LISTEN_BACKLOG, somaxconn()));
    } finally {
      await other.close();
    }
  });

  it('answers Certify with leaf, chain and valid_until as a Timestamp', async () => {
    const { der } = await createCsr({ dns: [WEB] });
    const { err, res } = await certify({
      identity: WEB,
      token: Buffer.from('web-secret-token'),
      certificateSigningRequest: der,
    });
    expect(err).toBeNull();
    expect(res?.intermediateCertificates).toEqual(issuer.chain);
    expect(res?.validUntil).toBeInstanceOf(Date);
  });

  it('answers Unavailable while no issuer is loaded, before looking at the request', async () => {
    current = undefined;
    try {
      const { err } = await certify({
        identity: '',
        token: Buffer.alloc(0),
        certificateSigningRequest: Buffer.alloc(0),
      });
      expect(err?.code).toBe(grpc.status.UNAVAILABLE);
      expect(err?.details).toBe('no valid issuer is loaded');
    } finally {
      current = issuer;
    }
  });

  it('answers Unavailable when the API server cannot be asked', async () => {
    const { der } = await createCsr({ dns: [WEB] });
    apiDown = true;
    try {
      const { err } = await certify({
        identity: WEB,
        token: Buffer.from('web-secret-token'),
        certificateSigningRequest: der,
      });
      expect(err?.code).toBe(grpc.status.UNAVAILABLE);
      expect(err?.details).toMatch(/^TokenReview: connect ECONNREFUSED/);
    } finally {
      apiDown = false;
    }
  });

  it('answers Unauthenticated and counts results', async () => {
    const { der } = await createCsr({ dns: [WEB] });
    const { err } = await certify({
      identity: WEB,
      token: Buffer.from('stolen-secret-token'),
      certificateSigningRequest: der,
    });
    expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
    const text = await registry.metrics();
    expect(text).toContain('identity_certify_requests_total{result="ok"} 1');
    expect(text).toContain('identity_certify_requests_total{result="unavailable"} 2');
    expect(text).toContain('identity_certify_requests_total{result="unauthenticated"} 1');
  });

  it('maps unknown errors to Internal without leaking their message', () => {
    expect(toGrpcStatus(new Error('secret detail'))).toEqual({
      code: grpc.status.INTERNAL,
      result: 'internal',
      message: 'internal error',
    });
    expect(toGrpcStatus(new IdentityError('MINIMESH_IDENTITY_SIGN_FAILED', 'x')).code).toBe(grpc.status.INTERNAL);
  });

  it('never logs the tokens it was given', () => {
    expect(logs).toContain('certify refused');
    expect(logs).not.toContain('web-secret-token');
    expect(logs).not.toContain('stolen-secret-token');
  });
});
