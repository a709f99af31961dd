// Certificates for tests: a trust anchor and an issuer like the Linkerd tutorial's `step` commands (ECDSA P-256, a
// root CA with path length 1 and an intermediate CA valid one year), made with openssl so the chart
// tests need nothing but what scripts/setup.sh installs. The e2e suite and the demo use
// `minimesh certs create` instead (see cluster-install.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runOk } from './tools.js';

export interface CertFiles {
  dir: string;
  caCrt: string;
  caKey: string;
  issuerCrt: string;
  issuerKey: string;
}

export function certFiles(dir: string): CertFiles {
  return {
    dir,
    caCrt: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    issuerCrt: join(dir, 'issuer.crt'),
    issuerKey: join(dir, 'issuer.key'),
  };
}

/** Writes ca.crt, ca.key, issuer.crt, issuer.key into dir with openssl. */
export async function createTestCerts(dir: string, trustDomain = 'cluster.local'): Promise<CertFiles> {
  mkdirSync(dir, { recursive: true });
  const f = certFiles(dir);
  const ssl = (args: string[]): Promise<string> => runOk('openssl', args, { cwd: dir });
  await ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f.caKey]);
  await ssl([
    'req',
    '-x509',
    '-new',
    '-key',
    f.caKey,
    '-subj',
    `/CN=root.minimesh.${trustDomain}`,
    '-days',
    '3650',
    '-out',
    f.caCrt,
    '-addext',
    'basicConstraints=critical,CA:TRUE,pathlen:1',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f.issuerKey]);
  const csr = join(dir, 'issuer.csr');
  const ext = join(dir, 'issuer.ext');
  writeFileSync(ext, 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n');
  await ssl(['req', '-new', '-key', f.issuerKey, '-subj', `/CN=identity.minimesh.${trustDomain}`, '-out', csr]);
  await ssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    f.caCrt,
    '-CAkey',
    f.caKey,
    '-set_serial',
    '2',
    '-days',
    '365',
    '-extfile',
    ext,
    '-out',
    f.issuerCrt,
  ]);
  return f;
}
