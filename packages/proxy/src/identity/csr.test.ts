import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { webcrypto, createPrivateKey, createPublicKey } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { createKeyAndCsr } from './csr.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const ID = 'web.default.serviceaccount.identity.minimesh.cluster.local';

describe('createKeyAndCsr', () => {
  it('makes a P-256 key and a DER CSR naming only the identity, with a valid signature', async () => {
    const { keyPem, csrDer } = await createKeyAndCsr(ID);
    const key = createPrivateKey(keyPem);
    expect(key.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    const csr = new x509.Pkcs10CertificateRequest(csrDer);
    expect(await csr.verify()).toBe(true);
    expect(csr.subject).toBe(`CN=${ID}`);
    const san = csr.getExtension('2.5.29.17') as x509.SubjectAlternativeNameExtension | null;
    expect(san).not.toBeNull();
    expect(new x509.SubjectAlternativeNameExtension(san!.rawData).names.toJSON()).toEqual([{ type: 'dns', value: ID }]);
    expect(csr.signatureAlgorithm).toMatchObject({ name: 'ECDSA', hash: { name: 'SHA-256' } });
    // The CSR carries the public half of the key we keep.
    const spki = Buffer.from(csr.publicKey.rawData);
    expect(spki.equals(createPublicKey(key).export({ type: 'spki', format: 'der' }))).toBe(true);
  });
});
