import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { makeTestCa, makeTestCert } from './tls.js';

describe('makeTestCert', () => {
  it('self-signed: a P-256 certificate for 127.0.0.1 and localhost that is its own CA', () => {
    const c = makeTestCert({ cn: 'injector-1', days: 1 });
    const x = new X509Certificate(c.cert);
    expect(x.subject).toBe('CN=injector-1');
    expect(x.subjectAltName).toBe('IP Address:127.0.0.1, DNS:localhost');
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(x.checkPrivateKey(createPrivateKey(c.key))).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(c.ca).toBe(c.cert);
  });

  it('with a CA: serverAuth leaves that the CA signed', () => {
    const authority = makeTestCa({ cn: 'webhook-test-ca', days: 1 });
    const c = makeTestCert({ cn: 'webhook', ca: authority });
    const svc = makeTestCert({ cn: 'webhook', ca: authority, name: 'svc', san: 'DNS:webhook.ns.svc' });
    expect(new X509Certificate(svc.cert).subjectAltName).toBe('DNS:webhook.ns.svc');
    expect(new X509Certificate(svc.cert).checkIssued(new X509Certificate(authority.cert))).toBe(true);
    const leaf = new X509Certificate(c.cert);
    const ca = new X509Certificate(c.ca);
    expect(leaf.subject).toBe('CN=webhook');
    expect(leaf.ca).toBe(false);
    expect(ca.ca).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.keyUsage ?? []).toContain('1.3.6.1.5.5.7.3.1');
  });
});
