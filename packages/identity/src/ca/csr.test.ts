import { beforeAll, describe, expect, it } from 'vitest';
import { createCsr, type CsrOptions } from '../../test/helpers/pki.js';
import { IdentityError } from '../errors.js';
import { parseCsr, validateCsr } from './csr.js';
import { der } from '@minimesh/proto';

const { bitString, encodeOid, seq } = der;

const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';

describe('parseCsr', () => {
  it('reads CN, SANs and the key algorithm', async () => {
    const { der } = await createCsr({ cn: ID, dns: [ID], ips: ['10.0.0.1'] });
    const csr = parseCsr(der);
    expect(csr.commonName).toBe(ID);
    expect(csr.sans).toEqual([
      { kind: 'dns', value: ID },
      { kind: 'ip', value: '0a000001' },
    ]);
    expect(csr.keyAlgorithm).toBe('ECDSA P-256');
    expect(csr.signatureAlgorithm).toBe('1.2.840.10045.4.3.2');
  });

  it.each([
    ['empty input', Buffer.alloc(0)],
    ['random bytes', Buffer.from('not a certificate request at all')],
    ['a bare INTEGER', Buffer.from([0x02, 0x01, 0x05])],
    ['indefinite length', Buffer.from([0x30, 0x80, 0x00, 0x00])],
  ])('refuses %s as not a PKCS#10 request', (_name, der) => {
    expect(() => parseCsr(der)).toThrow(/^CSR: not a DER-encoded PKCS#10 certificate request/);
  });
});

describe('validateCsr', () => {
  type Case = [name: string, opts: CsrOptions, problem: RegExp | null];
  const cases: Case[] = [
    ['one DNS SAN equal to the identity, no CN', { dns: [ID] }, null],
    ['CN equal to the identity', { dns: [ID], cn: ID }, null],
    ['empty subject CN', { dns: [ID], cn: '' }, null],
    ['an RSA key', { kind: 'RSA', dns: [ID] }, /key is RSA, expected ECDSA P-256/],
    ['a P-384 key', { kind: 'P-384', dns: [ID] }, /key is ECDSA P-384, expected ECDSA P-256/],
    ['no SAN at all', { cn: ID }, /has 0 DNS SANs \(none\), expected exactly one/],
    ['two DNS SANs', { dns: [ID, `other.${ID}`] }, /has 2 DNS SANs/],
    [
      'a different DNS SAN',
      { dns: ['db.default.serviceaccount.identity.minimesh.cluster.local'] },
      /DNS SAN "db\.default.*" does not match the requested identity/,
    ],
    ['a different CN', { dns: [ID], cn: 'db.default' }, /CommonName "db.default" does not match/],
    ['an IP SAN', { dns: [ID], ips: ['10.1.2.3'] }, /has ip SAN "0a010203"; only one DNS SAN is allowed/],
    [
      'a URI SAN',
      { dns: [ID], uris: ['spiffe://cluster.local/ns/default/sa/web'] },
      /has uri SAN "spiffe:\/\/cluster.local\/ns\/default\/sa\/web"/,
    ],
    ['an email SAN', { dns: [ID], emails: ['web@example.com'] }, /has email SAN "web@example.com"/],
    ['only an IP SAN', { ips: ['10.1.2.3'] }, /has ip SAN/],
  ];
  it.each(cases)('%s', async (_name, opts, problem) => {
    const { der } = await createCsr(opts);
    if (problem === null) {
      const ok = validateCsr(der, ID);
      expect(ok.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      expect(ok.publicKeyInfo.length).toBe(91);
      return;
    }
    try {
      validateCsr(der, ID);
      expect.unreachable('validateCsr accepted it');
    } catch (err) {
      expect(err).toBeInstanceOf(IdentityError);
      expect((err as IdentityError).code).toBe('MINIMESH_IDENTITY_CSR_INVALID');
      expect((err as Error).message).toMatch(/^CSR: /);
      expect((err as Error).message).toMatch(problem);
    }
  });

  let good: Buffer;
  beforeAll(async () => {
    good = (await createCsr({ dns: [ID] })).der;
  });

  it('refuses a CSR whose signature does not verify (tampered SAN)', () => {
    // Flip one letter of the DNS name inside the signed part: the structure still parses.
    const tampered = Buffer.from(good);
    const at = tampered.indexOf(Buffer.from('web.default'));
    tampered[at] = 'x'.charCodeAt(0);
    expect(() => validateCsr(tampered, `xeb${ID.slice(3)}`)).toThrow(/signature does not verify/);
  });

  it('refuses a CSR signed by another key (proof of possession)', async () => {
    // The request info of one CSR (its key and SAN) with the signature of another key.
    const other = parseCsr((await createCsr({ dns: [ID] })).der);
    const mine = parseCsr(good);
    const forged = seq(other.signedBytes, seq(encodeOid(mine.signatureAlgorithm)), bitString(mine.signature));
    expect(parseCsr(forged).sans).toEqual([{ kind: 'dns', value: ID }]);
    expect(() => validateCsr(forged, ID)).toThrow(/^CSR: signature does not verify with its own public key$/);
  });

  it('refuses trailing garbage', () => {
    expect(() => validateCsr(Buffer.concat([good, Buffer.from([0])]), ID)).toThrow(/trailing bytes/);
  });

  it('refuses a truncated CSR', () => {
    expect(() => validateCsr(good.subarray(0, good.length - 5), ID)).toThrow(
      /CSR: not a DER-encoded PKCS#10 certificate request \(truncated/,
    );
  });
});
