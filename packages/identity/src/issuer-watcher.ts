// Hot reload of the issuer. A Kubernetes Secret volume updates by swapping the `..data` symlink, so the
// directory is watched (not the files) and re-read after a short debounce; a slow poll backs the watch up.
// A new issuer is used only if it validates; otherwise the old one stays, and the refusal is logged and counted.
import { createHash, type X509Certificate } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@minimesh/runtime';
import { issuerFiles, parseIssuer, type Issuer, type IssuerScheme } from './ca/issuer.js';
import { IdentityError } from './errors.js';
import type { IdentityMetrics } from './metrics.js';

export type ReloadOutcome = 'updated' | 'unchanged' | 'refused';

export interface IssuerWatcher {
  /** The issuer in use (always a valid one; the start-up issuer until a valid replacement arrives). */
  current(): Issuer;
  /** Re-reads the files now (the watch calls this; tests may too). */
  reload(): Promise<ReloadOutcome>;
  close(): void;
}

export interface IssuerWatcherOptions {
  dir: string;
  scheme: IssuerScheme;
  anchors: X509Certificate[];
  logger: Logger;
  metrics?: Pick<IdentityMetrics, 'issuerReloads'>;
  /** Wait this long after the last change event before re-reading (default 200 ms). */
  debounceMs?: number;
  /** Re-check this often even without events (default 30 s; 0 disables). */
  pollIntervalMs?: number;
  onUpdate?: (issuer: Issuer) => void;
}

interface Snapshot {
  certPem: string;
  keyPem: string;
  digest: string;
}

async function readSnapshot(dir: string, scheme: IssuerScheme): Promise<Snapshot> {
  const { certFile, keyFile } = issuerFiles(dir, scheme);
  const read = async (file: string, what: string): Promise<string> => {
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      throw new IdentityError(
        'MINIMESH_IDENTITY_ISSUER_INVALID',
        `${file}: cannot read the ${what} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        { cause: err },
      );
    }
  };
  const [certPem, keyPem] = await Promise.all([read(certFile, 'issuer certificate'), read(keyFile, 'issuer key')]);
  const digest = createHash('sha256').update(certPem).update('\0').update(keyPem).digest('hex');
  return { certPem, keyPem, digest };
}

/** Loads the issuer (throwing MINIMESH_IDENTITY_ISSUER_INVALID if it is not valid) and starts watching. */
export async function createIssuerWatcher(opts: IssuerWatcherOptions): Promise<IssuerWatcher> {
  const log = opts.logger;
  const files = issuerFiles(opts.dir, opts.scheme);
  const parse = (s: Snapshot): Issuer =>
    parseIssuer({ certPem: s.certPem, keyPem: s.keyPem, anchors: opts.anchors, ...files });

  const first = await readSnapshot(opts.dir, opts.scheme);
  let issuer = parse(first);
  let seen = first.digest;
  log.info(
    { fingerprint: issuer.fingerprint, keyAlgorithm: issuer.keyAlgorithm, notAfter: issuer.notAfter.toISOString() },
    'issuer loaded',
  );

  let closed = false;
  let running: Promise<ReloadOutcome> | undefined;
  let again = false;

  async function reloadOnce(): Promise<ReloadOutcome> {
    let snap: Snapshot;
    try {
      snap = await readSnapshot(opts.dir, opts.scheme);
    } catch (err) {
      // Mid-swap a file can be briefly missing; a persistent problem is refused like any invalid issuer.
      if (seen === 'unreadable') return 'unchanged';
      seen = 'unreadable';
      opts.metrics?.issuerReloads.inc({ result: 'refused' });
      log.warn(
        { code: (err as IdentityError).code },
        `issuer update refused, keeping issuer ${issuer.fingerprint}: ${(err as Error).message}`,
      );
      return 'refused';
    }
    if (snap.digest === seen) return 'unchanged';
    seen = snap.digest;
    try {
      const next = parse(snap);
      issuer = next;
      opts.metrics?.issuerReloads.inc({ result: 'updated' });
      log.info(
        { fingerprint: next.fingerprint, keyAlgorithm: next.keyAlgorithm, notAfter: next.notAfter.toISOString() },
        'issuer updated',
      );
      opts.onUpdate?.(next);
      return 'updated';
    } catch (err) {
      opts.metrics?.issuerReloads.inc({ result: 'refused' });
      log.warn(
        { code: (err as IdentityError).code },
        `issuer update refused, keeping issuer ${issuer.fingerprint}: ${(err as Error).message}`,
      );
      return 'refused';
    }
  }

  // One reload at a time; a change during a reload triggers one more.
  function reload(): Promise<ReloadOutcome> {
    if (running) {
      again = true;
      return running;
    }
    running = reloadOnce().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        void reload();
      }
    });
    return running;
  }

  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void reload(), opts.debounceMs ?? 200);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(opts.dir, { persistent: false }, schedule);
    watcher.on('error', (err) => log.warn({ err }, 'issuer directory watch failed; relying on the poll'));
  } catch (err) {
    log.warn({ err, dir: opts.dir }, 'cannot watch the issuer directory; relying on the poll');
  }
  const pollMs = opts.pollIntervalMs ?? 30_000;
  const poll = pollMs > 0 ? setInterval(() => void reload(), pollMs) : undefined;
  poll?.unref();

  return {
    current: () => issuer,
    reload,
    close() {
      closed = true;
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      watcher?.close();
    },
  };
}
