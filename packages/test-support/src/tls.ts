// Throwaway TLS certificates for test servers on 127.0.0.1 (webhooks, API server stand-ins), made by
// openssl: ECDSA P-256, valid for 127.0.0.1 and localhost, a day or two. Tests only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCert {
  /** The directory holding the files. */
  dir: string;
  certFile: string;
  keyFile: string;
  /** The certificate, PEM. */
  cert: string;
  /** Its private key, PEM. */
  key: string;
  /** What a client trusts: the certificate itself when self-signed, else the CA's certificate (PEM). */
  ca: string;
}

/** A CA for test certificates (makeTestCa), to sign several leaves with. */
export interface TestCa {
  dir: string;
  certFile: string;
  keyFile: string;
  /** The CA's certificate, PEM: what a client trusts. */
  cert: string;
}

export interface TestCertOptions {
  /** Subject CN (default 127.0.0.1). */
  cn?: string;
  /** Where the files go (default: the CA's directory, else a new temporary directory). */
  dir?: string;
  /** File names: <name>.crt and <name>.key (default tls). */
  name?: string;
  /** Days of validity (default 2). */
  days?: number;
  /** subjectAltName (default IP:127.0.0.1,DNS:localhost). */
  san?: string;
  /**
   * Signed by this CA, as a server certificate (serverAuth; what Go clients such as kube-apiserver
   * calling a webhook want). Without it the certificate is self-signed and is its own CA (Node clients
   * trust it with ca: cert).
   */
  ca?: TestCa;
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** openssl req -x509: a new P-256 key and a self-signed certificate that is a CA, with these extensions too. */
function selfSigned(
  dir: string,
  c: { keyFile: string; certFile: string; days: number; cn: string },
  extensions: string[],
): void {
  openssl(dir, [
    'req',
    '-x509',
    ...P256,
    '-keyout',
    c.keyFile,
    '-out',
    c.certFile,
    '-days',
    String(c.days),
    '-subj',
    `/CN=${c.cn}`,
    ...['basicConstraints=critical,CA:TRUE', ...extensions].flatMap((e) => ['-addext', e]),
  ]);
}

/** A P-256 CA certificate (CA:TRUE, keyCertSign). */
export function makeTestCa(opts: { cn?: string; dir?: string; days?: number } = {}): TestCa {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'mm-test-tls-'));
  const certFile = join(dir, 'ca.crt');
  const keyFile = join(dir, 'ca.key');
  selfSigned(dir, { keyFile, certFile, days: opts.days ?? 2, cn: opts.cn ?? 'minimesh test CA' }, [
    'keyUsage=critical,keyCertSign',
  ]);
  return { dir, certFile, keyFile, cert: readFileSync(certFile, 'utf8') };
}

/** A P-256 certificate, for 127.0.0.1 and localhost unless `san` says otherwise. */
export function makeTestCert(opts: TestCertOptions = {}): TestCert {
  const dir = opts.dir ?? opts.ca?.dir ?? mkdtempSync(join(tmpdir(), 'mm-test-tls-'));
  const name = opts.name ?? 'tls';
  const days = String(opts.days ?? 2);
  const cn = opts.cn ?? '127.0.0.1';
  const san = `subjectAltName=${opts.san ?? 'IP:127.0.0.1,DNS:localhost'}`;
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  if (opts.ca) {
    const csr = join(dir, `${name}.csr`);
    const ext = join(dir, `${name}.ext`);
    openssl(dir, ['req', ...P256, '-keyout', keyFile, '-out', csr, '-subj', `/CN=${cn}`]);
    writeFileSync(ext, `${san}\nextendedKeyUsage=serverAuth\n`);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      opts.ca.certFile,
      '-CAkey',
      opts.ca.keyFile,
      '-CAcreateserial',
      '-days',
      days,
      '-extfile',
      ext,
      '-out',
      certFile,
    ]);
  } else {
    selfSigned(dir, { keyFile, certFile, days: opts.days ?? 2, cn }, [san]);
  }
  const cert = readFileSync(certFile, 'utf8');
  return { dir, certFile, keyFile, cert, key: readFileSync(keyFile, 'utf8'), ca: opts.ca?.cert ?? cert };
}
