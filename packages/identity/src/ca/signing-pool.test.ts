import { X509Certificate } from 'node:crypto';
import { threadId as mainThreadId, Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCsr, createIntermediateCa, createRootCa, issuerOf } from '../../test/helpers/pki.js';
import { IdentityError } from '../errors.js';
import { inThreadCrypto } from './certify-crypto.js';
import type { Issuer } from './issuer.js';
import type { LeafOptions } from './leaf.js';
import { createSigningPool, parseCertifyWorkers, type SigningPool } from './signing-pool.js';

const WEB = 'web.default.serviceaccount.identity.minimesh.cluster.local';
let issuer: Issuer;
let csr: Buffer;
let pool: SigningPool;

beforeAll(async () => {
  const root = await createRootCa();
  const ca = await createIntermediateCa(root);
  issuer = await issuerOf(ca, root);
  csr = (await createCsr({ dns: [WEB] })).der;
  pool = await createSigningPool({ size: 2 });
});
afterAll(() => pool.close());

const leafOpts = (publicKeyInfo: Buffer, i: Issuer = issuer): LeafOptions => ({
  issuer: i,
  identity: WEB,
  publicKeyInfo,
  lifetime: 86_400_000,
  clockSkew: 20_000,
  now: new Date(),
});

async function failure(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e as Error,
  );
}

describe('signing pool', () => {
  it('checks the CSR and signs on worker threads, not the calling thread', async () => {
    expect(pool.threadIds()).toHaveLength(2);
    const checked = await pool.checkCsr(csr, WEB);
    expect(checked.threadId).not.toBe(mainThreadId);
    expect(pool.threadIds()).toContain(checked.threadId);
    const leaf = await pool.sign(leafOpts(checked.publicKeyInfo));
    expect(leaf.threadId).not.toBe(mainThreadId);
    expect(pool.threadIds()).toContain(leaf.threadId);
    const cert = new X509Certificate(leaf.der);
    expect(cert.verify(issuer.certificate.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe(`DNS:${WEB}`);
    expect(cert.serialNumber.toLowerCase()).toBe(leaf.serial.toString('hex'));
    expect(new Date(cert.validTo).getTime()).toBe(leaf.notAfter.getTime());
    // The same public key as the in-thread check returns.
    expect(checked.publicKeyInfo).toEqual((await inThreadCrypto.checkCsr(csr, WEB)).publicKeyInfo);
  });

  it('spreads concurrent calls over its workers', async () => {
    const threads = new Set<number>();
    await Promise.all(Array.from({ length: 20 }, async () => threads.add((await pool.checkCsr(csr, WEB)).threadId)));
    expect([...threads].sort()).toEqual([...pool.threadIds()].sort());
  });

  it('refuses an invalid CSR with the same IdentityError (code and message) as the calling thread', async () => {
    const p384 = (await createCsr({ kind: 'P-384', dns: [WEB] })).der;
    const twoSans = (await createCsr({ dns: [WEB, 'x.example'] })).der;
    const withIp = (await createCsr({ dns: [WEB], ips: ['10.0.0.1'] })).der;
    const cases: [Buffer, string][] = [
      [Buffer.from('garbage'), WEB],
      [csr, 'db.default.serviceaccount.identity.minimesh.cluster.local'],
      [p384, WEB],
      [twoSans, WEB],
      [withIp, WEB],
    ];
    for (const [der, identity] of cases) {
      const here = await failure(inThreadCrypto.checkCsr(der, identity));
      const there = await failure(pool.checkCsr(der, identity));
      expect(here).toBeInstanceOf(IdentityError);
      expect(there).toBeInstanceOf(IdentityError);
      expect((there as IdentityError).code).toBe('MINIMESH_IDENTITY_CSR_INVALID');
      expect((there as IdentityError).code).toBe((here as IdentityError).code);
      expect(there.message).toBe(here.message);
    }
  });

  it('signs with the issuer it is given: a new issuer object is sent to the workers before its first use', async () => {
    const root = await createRootCa();
    const other = await createIntermediateCa(root, { name: 'other-issuer.minimesh.cluster.local' });
    const second = await issuerOf(other, root);
    const { publicKeyInfo } = await pool.checkCsr(csr, WEB);
    for (const i of [issuer, second, issuer, second]) {
      // Two at once, so that both workers sign with each.
      const leaves = await Promise.all([pool.sign(leafOpts(publicKeyInfo, i)), pool.sign(leafOpts(publicKeyInfo, i))]);
      for (const leaf of leaves) {
        const cert = new X509Certificate(leaf.der);
        expect(cert.issuer).toBe(i.certificate.subject);
        expect(cert.verify(i.certificate.publicKey)).toBe(true);
      }
    }
  });

  it('fails the calls of a worker that dies with MINIMESH_IDENTITY_WORKER_FAILED, and replaces it', async () => {
    const workers: Worker[] = [];
    const exits: { threadId: number; failedCalls: number; replaced: boolean }[] = [];
    const p = await createSigningPool({
      size: 1,
      spawn: (url, o) => {
        const w = new Worker(url, o);
        workers.push(w);
        return w;
      },
      onWorkerExit: (e) => exits.push(e),
    });
    try {
      const [first] = p.threadIds();
      const calls = Array.from({ length: 200 }, () =>
        p.checkCsr(csr, WEB).then(
          () => undefined,
          (e: unknown) => e as IdentityError,
        ),
      );
      await workers[0]?.terminate();
      const errors = (await Promise.all(calls)).filter((e) => e !== undefined);
      expect(errors.length).toBeGreaterThan(0);
      for (const e of errors) {
        expect(e).toBeInstanceOf(IdentityError);
        expect(e.code).toBe('MINIMESH_IDENTITY_WORKER_FAILED');
        expect(e.message).toMatch(
          new RegExp(`^the certify worker thread ${first} ended \\(exit code 1\\) before it answered`),
        );
      }
      expect(exits).toEqual([{ threadId: first, reason: 'exit code 1', failedCalls: errors.length, replaced: true }]);
      expect(p.inFlight).toBe(0);
      // The next call goes to the replacement, which signs as well (the issuer is sent to it anew).
      const checked = await p.checkCsr(csr, WEB);
      expect(checked.threadId).not.toBe(first);
      expect(p.threadIds()).toEqual([checked.threadId]);
      const leaf = await p.sign(leafOpts(checked.publicKeyInfo));
      expect(new X509Certificate(leaf.der).verify(issuer.certificate.publicKey)).toBe(true);
      expect(workers).toHaveLength(2);
    } finally {
      await p.close();
    }
  });

  it('close() ends every worker; calls in flight and later calls fail with a clear error', async () => {
    const workers: Worker[] = [];
    const p = await createSigningPool({
      size: 2,
      spawn: (url, o) => {
        const w = new Worker(url, o);
        workers.push(w);
        return w;
      },
    });
    const exited = workers.map((w) => new Promise<number>((resolve) => w.once('exit', resolve)));
    const inFlight = Array.from({ length: 50 }, () =>
      p.checkCsr(csr, WEB).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await p.close();
    await Promise.all(exited);
    expect(p.threadIds()).toEqual([]);
    const results = await Promise.all(inFlight);
    expect(results.filter((r) => r !== 'ok').length).toBeGreaterThan(0);
    for (const r of results) if (r !== 'ok') expect(r).toBe('the signing pool is closed');
    await expect(p.checkCsr(csr, WEB)).rejects.toMatchObject({
      code: 'MINIMESH_IDENTITY_WORKER_FAILED',
      message: 'the signing pool is closed',
    });
  });

  it('refuses a size that is not 1 to 16', async () => {
    for (const size of [0, -1, 1.5, 17])
      await expect(createSigningPool({ size })).rejects.toThrow(
        `signing pool size: ${size} is not valid: expected a whole number from 1 to 16`,
      );
  });
});

describe('parseCertifyWorkers', () => {
  it.each([
    ['0', 2, 0],
    ['1', 2, 1],
    ['16', 2, 16],
    ['auto', 1, 1],
    ['auto', 2, 1],
    ['auto', 3, 2],
    ['auto', 64, 4],
  ])('%s on %i cores → %i', (value, cores, want) => expect(parseCertifyWorkers(value, cores)).toBe(want));

  it.each(['', '-1', '17', '1.5', 'two', '0x2', '1e1'])('refuses "%s", saying what is expected', (value) => {
    expect(() => parseCertifyWorkers(value, 2)).toThrow(
      `"${value}" is not valid: expected auto or a whole number from 0 (no worker threads) to 16`,
    );
  });
});
