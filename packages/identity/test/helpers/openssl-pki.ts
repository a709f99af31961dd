// The Linkerd tutorial's certificates, made with the openssl CLI at test time (what `step certificate create
// --profile root-ca` and `--profile intermediate-ca` produce: ECDSA P-256, root pathlen 1, issuer pathlen 0).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function openssl(args: string[], cwd: string): string {
  return execFileSync('openssl', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface TutorialPki {
  dir: string;
  /** ca.crt, ca.key, issuer.crt, issuer.key inside dir. */
  caCrt: string;
  issuerCrt: string;
  issuerKey: string;
}

function ecKey(dir: string, name: string): void {
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', name], dir);
}

/** root-ca: CA, pathlen 1, keyCertSign+cRLSign. */
export function makeRoot(dir: string, name = 'ca', cn = 'root.minimesh.cluster.local'): void {
  ecKey(dir, `${name}.key`);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      `${name}.key`,
      '-subj',
      `/CN=${cn}`,
      '-days',
      '3650',
      '-sha256',
      '-addext',
      'basicConstraints=critical,CA:TRUE,pathlen:1',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-addext',
      'subjectKeyIdentifier=hash',
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
}

/** Signs `${name}.crt` for `${name}.key` with the given CA; `profile` picks the extensions. */
export function makeSigned(
  dir: string,
  opts: { name: string; ca: string; cn: string; profile: 'intermediate-ca' | 'leaf' },
): void {
  ecKey(dir, `${opts.name}.key`);
  openssl(['req', '-new', '-key', `${opts.name}.key`, '-subj', `/CN=${opts.cn}`, '-out', `${opts.name}.csr`], dir);
  const ext =
    opts.profile === 'intermediate-ca'
      ? 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n'
      : 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n';
  writeFileSync(join(dir, `${opts.name}.ext`), ext);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${opts.name}.csr`,
      '-CA',
      `${opts.ca}.crt`,
      '-CAkey',
      `${opts.ca}.key`,
      '-CAcreateserial',
      '-sha256',
      '-days',
      '365',
      '-extfile',
      `${opts.name}.ext`,
      '-out',
      `${opts.name}.crt`,
    ],
    dir,
  );
}

/** ca.crt/ca.key (root) and issuer.crt/issuer.key (intermediate) in dir, the Linkerd tutorial's way. */
export function makeTutorialPki(dir: string): TutorialPki {
  makeRoot(dir);
  makeSigned(dir, { name: 'issuer', ca: 'ca', cn: 'identity.minimesh.cluster.local', profile: 'intermediate-ca' });
  return { dir, caCrt: join(dir, 'ca.crt'), issuerCrt: join(dir, 'issuer.crt'), issuerKey: join(dir, 'issuer.key') };
}
