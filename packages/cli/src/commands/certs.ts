// minimesh certs create [--dir DIR]: the trust anchor (ca.crt/ca.key) and the issuer
// (issuer.crt/issuer.key) the chart takes with --set-file, equivalent to the Linkerd tutorial's `step` commands.
// With --ca/--ca-key: only a new issuer, signed by that existing trust anchor (issuer rotation,
// docs/certificates.md). An issuer may not outlive its root: refused, exit 2.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseDuration, ConfigError } from '@minimesh/config';
import { parseFlags, UsageError } from '@minimesh/runtime';
import type { CommandIO } from '../io.js';

const info = {
  name: 'minimesh certs',
  summary: 'certificates for the mesh',
  usage:
    'minimesh certs create [--dir DIR] [--force] [--issuer-lifetime 8760h] [--root-lifetime 87600h] [--ca ca.crt --ca-key ca.key]',
};

const flags = {
  dir: { type: 'string', default: '.', description: 'where to write ca.crt, ca.key, issuer.crt, issuer.key' },
  ca: {
    type: 'string',
    default: '',
    description: 'an existing trust anchor (PEM): write only a new issuer signed by it (issuer rotation)',
  },
  'ca-key': { type: 'string', default: '', description: 'the private key of --ca (PEM)' },
  force: { type: 'boolean', description: 'overwrite existing files' },
  'root-lifetime': { type: 'string', default: '87600h', description: 'validity of the trust anchor' },
  'issuer-lifetime': { type: 'string', default: '8760h', description: 'validity of the issuer' },
  'trust-domain': { type: 'string', default: 'cluster.local', description: 'trust domain in the common names' },
  'control-plane-namespace': {
    type: 'string',
    default: 'minimesh',
    description: 'control-plane namespace in the common names',
  },
} as const;

function hours(flag: string, value: string): number {
  try {
    const ms = parseDuration(flag, value);
    if (ms < 3_600_000) throw new ConfigError(flag, value, 'at least 1h');
    return ms / 3_600_000;
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
}

export async function certsCommand(argv: string[], io: CommandIO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    io.stdout.write(
      `${info.name} — ${info.summary}\n\nUsage: ${info.usage}\n\nSubcommands:\n  create   write a new trust anchor and issuer (see minimesh certs create --help)\n`,
    );
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'create') throw new UsageError(`minimesh certs: unknown subcommand "${sub}": expected create`);
  const parsed = parseFlags(
    {
      ...info,
      name: 'minimesh certs create',
      summary:
        'write ca.crt/ca.key (root CA, ECDSA P-256, pathlen 1) and issuer.crt/issuer.key (intermediate CA, pathlen 0) in PEM; keys are PKCS#8',
    },
    flags,
    rest,
  );
  if ('help' in parsed) {
    io.stdout.write(parsed.help);
    return 0;
  }
  if (parsed.positionals.length > 0)
    throw new UsageError(`minimesh certs create: unexpected argument "${parsed.positionals[0]}"`);
  const f = parsed.values;
  const rootLifetimeHours = hours('--root-lifetime', f['root-lifetime']);
  const issuerLifetimeHours = hours('--issuer-lifetime', f['issuer-lifetime']);
  const dir = resolve(f.dir);
  const fromRoot = f.ca !== '' || f['ca-key'] !== '';
  if (fromRoot && (f.ca === '' || f['ca-key'] === ''))
    throw new UsageError(
      'minimesh certs create: --ca and --ca-key go together: pass both (the trust anchor and its key)',
    );
  if (fromRoot && f['root-lifetime'] !== flags['root-lifetime'].default)
    throw new UsageError('minimesh certs create: --root-lifetime makes no sense with --ca: the trust anchor exists');
  const names = fromRoot ? ['issuer.crt', 'issuer.key'] : ['ca.crt', 'ca.key', 'issuer.crt', 'issuer.key'];
  const existing = names.filter((name) => existsSync(join(dir, name)));
  if (existing.length > 0 && !f.force) {
    throw new UsageError(
      `minimesh certs create: ${existing.map((n) => join(dir, n)).join(', ')} already exist(s); pass --force to overwrite`,
    );
  }
  const read = (flag: string, file: string): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new UsageError(`minimesh certs create: ${flag} ${file}: ${(err as Error).message}`, { cause: err });
    }
  };
  // Loaded on demand: the x509 stack is only needed here.
  const { createIssuer, createMeshCerts, CertsError } = await import('../certs.js');
  const issuerCommonName = `identity.${f['control-plane-namespace']}.${f['trust-domain']}`;
  const show = (file: string): string => {
    const rel = relative(process.cwd(), file);
    return rel === '' || rel.startsWith('..') ? file : rel;
  };
  try {
    if (fromRoot) {
      const issuer = await createIssuer({
        caCrt: read('--ca', f.ca),
        caKey: read('--ca-key', f['ca-key']),
        issuerCommonName,
        issuerLifetimeHours,
      });
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'issuer.crt'), issuer.issuerCrt, { mode: 0o644 });
      writeFileSync(join(dir, 'issuer.key'), issuer.issuerKey, { mode: 0o600 });
      io.stderr.write(
        `wrote ${show(join(dir, 'issuer.crt'))}, ${show(join(dir, 'issuer.key'))} (a new issuer signed by ${show(resolve(f.ca))})\n` +
          `rotate with: helm upgrade minimesh charts/minimesh -n minimesh --reset-then-reuse-values --set-file identity.issuer.tls.crtPEM=${show(join(dir, 'issuer.crt'))} --set-file identity.issuer.tls.keyPEM=${show(join(dir, 'issuer.key'))}\n`,
      );
      return 0;
    }
    const certs = await createMeshCerts({
      rootCommonName: `root.${f['control-plane-namespace']}.${f['trust-domain']}`,
      issuerCommonName,
      rootLifetimeHours,
      issuerLifetimeHours,
    });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'ca.crt'), certs.caCrt, { mode: 0o644 });
    writeFileSync(join(dir, 'ca.key'), certs.caKey, { mode: 0o600 });
    writeFileSync(join(dir, 'issuer.crt'), certs.issuerCrt, { mode: 0o644 });
    writeFileSync(join(dir, 'issuer.key'), certs.issuerKey, { mode: 0o600 });
  } catch (err) {
    if (err instanceof CertsError) throw new UsageError(`minimesh certs create: ${err.message}`, { cause: err });
    throw err;
  }
  io.stderr.write(
    `wrote ${show(join(dir, 'ca.crt'))}, ca.key (trust anchor), issuer.crt, issuer.key (issuer)\n` +
      `install with: --set-file identityTrustAnchorsPEM=${show(join(dir, 'ca.crt'))} --set-file identity.issuer.tls.crtPEM=${show(join(dir, 'issuer.crt'))} --set-file identity.issuer.tls.keyPEM=${show(join(dir, 'issuer.key'))}\n`,
  );
  return 0;
}
