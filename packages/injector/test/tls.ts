// An HTTPS client for the webhook tests that trusts the test certificates (@minimesh/test-support/tls).
import { mkdtempSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PeerCertificate, TLSSocket } from 'node:tls';

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface HttpResult {
  status: number;
  body: string;
  json: unknown;
  peer: PeerCertificate;
}

export function post(port: number, body: string | Buffer, ca: string | string[], path = '/'): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca,
        headers: { 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        const peer = (res.socket as TLSSocket).getPeerCertificate();
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: text, json, peer });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
