// The certify client: key + CSR at start, Certify with the token file's contents (re-read every time),
// renewal at 70 % of the remaining lifetime, backoff on errors, credentials swapped atomically.
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { identity } from '@minimesh/proto';
import { backoffDelay, type Logger } from '@minimesh/runtime';
import type { ControlAddr } from '../config/proxy.js';
import { controlChannel } from '../control/client.js';
import { ProxyError } from '../errors.js';
import type { ProxyMetrics } from '../metrics/metrics.js';
import { derToPem, type TlsCredentials } from '../tls/credentials.js';
import { createKeyAndCsr, type KeyAndCsr } from './csr.js';
import { refreshDelay } from './schedule.js';

export interface CertifyClientOptions {
  addr: ControlAddr;
  localIdentity: string;
  tokenFile: string;
  tls: TlsCredentials;
  metrics: ProxyMetrics;
  logger: Logger;
  /** Per-call deadline (ms). */
  callTimeoutMs?: number;
  schedule?: { minMs?: number; maxMs?: number; backoffBaseMs?: number; backoffMaxMs?: number };
}

export class CertifyClient {
  private keyAndCsr: KeyAndCsr | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private attempt = 0;
  private client: identity.IdentityClient | undefined;
  private clientHasCert = false;

  constructor(private readonly opts: CertifyClientOptions) {}

  /** Starts the loop; resolves when the first certificate is in hand (it keeps retrying until then). */
  start(): Promise<void> {
    return new Promise((resolve) => {
      const off = this.opts.tls.onChange(() => {
        off();
        resolve();
      });
      void this.run();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.client?.close();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.run(), ms);
    this.timer.unref();
  }

  private identityClient(): identity.IdentityClient {
    const haveCert = this.opts.tls.certificate !== undefined;
    if (!this.client || haveCert !== this.clientHasCert) {
      this.client?.close();
      const ch = controlChannel(this.opts.addr, this.opts.tls);
      this.client = new identity.IdentityClient(ch.target, ch.credentials, ch.options);
      this.clientHasCert = haveCert;
    }
    return this.client;
  }

  /** One Certify round; schedules the next. */
  async run(): Promise<void> {
    if (this.stopped) return;
    const log = this.opts.logger;
    try {
      this.keyAndCsr ??= await createKeyAndCsr(this.opts.localIdentity);
      const token = await readFile(this.opts.tokenFile).catch((err: unknown) => {
        throw new ProxyError('MINIMESH_PROXY_IDENTITY_FAILED', `identity: reading token file ${this.opts.tokenFile}`, {
          cause: err,
        });
      });
      const res = await this.certify({
        identity: this.opts.localIdentity,
        token: Buffer.from(token.toString('utf8').trim()),
        certificateSigningRequest: this.keyAndCsr.csrDer,
      });
      const leaf = new X509Certificate(res.leafCertificate);
      const chainPem = [res.leafCertificate, ...res.intermediateCertificates].map(derToPem).join('');
      const notAfter = res.validUntil ?? new Date(leaf.validTo);
      this.opts.tls.set({ chainPem, keyPem: this.keyAndCsr.keyPem, leaf, notAfter });
      this.opts.metrics.certRefreshes.inc({ result: 'ok' });
      this.opts.metrics.certExpiration.set(notAfter.getTime() / 1000);
      this.opts.metrics.certRefreshTimestamp.set(Date.now() / 1000);
      this.attempt = 0;
      const next = refreshDelay(Date.now(), notAfter.getTime(), this.opts.schedule);
      log.info(
        { identity: this.opts.localIdentity, notAfter: notAfter.toISOString(), refreshInMs: next },
        'certified identity',
      );
      this.schedule(next);
    } catch (err) {
      this.opts.metrics.certRefreshes.inc({ result: 'error' });
      const ms = backoffDelay(this.attempt++, {
        initialMs: this.opts.schedule?.backoffBaseMs ?? 1000,
        maxMs: this.opts.schedule?.backoffMaxMs ?? 30_000,
      });
      log.warn(
        { err: { message: (err as Error).message, code: (err as { code?: unknown }).code }, retryInMs: ms },
        'identity: certify failed; keeping the current certificate and retrying',
      );
      this.schedule(ms);
    }
  }

  private certify(req: identity.CertifyRequest): Promise<identity.CertifyResponse> {
    const client = this.identityClient();
    const deadline = new Date(Date.now() + (this.opts.callTimeoutMs ?? 10_000));
    return new Promise((resolve, reject) => {
      client.certify(req, new Metadata(), { deadline }, (err, res) => {
        if (err)
          reject(
            new ProxyError(
              'MINIMESH_PROXY_IDENTITY_FAILED',
              `identity: Certify at ${this.opts.addr.addr}: ${err.message}`,
              { cause: err },
            ),
          );
        else resolve(res);
      });
    });
  }
}
