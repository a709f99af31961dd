// A signing worker thread: the CSR check and the signing of Certify (the existing pure functions of
// ./csr.ts and ./leaf.ts) for the pool of ./signing-pool.ts. createSigningHandler is the pure core (one
// request in, one reply out); the message loop at the bottom runs only in a thread the pool started.
// SIGNING_WORKER_URL is where the pool finds this module, whether it runs from dist/, from the bundle
// (this module is a chunk of its own there) or from source under tsx/vitest.
import { isMainThread, parentPort, threadId, workerData } from 'node:worker_threads';
import { IdentityError } from '../errors.js';
import { validateCsr } from './csr.js';
import { buildLeaf, type LeafIssuer } from './leaf.js';
import {
  errorToWire,
  fromWire,
  issuerFromPayload,
  SIGNING_WORKER_MARK,
  toWire,
  type FromWorker,
  type ToWorker,
} from './signing-protocol.js';

export const SIGNING_WORKER_URL: string = import.meta.url;

/** Handles one message; returns the reply (none for an issuer update). Never throws. */
export function createSigningHandler(thread: number = threadId): (msg: ToWorker) => FromWorker | undefined {
  let issuer: { gen: number; value: LeafIssuer } | undefined;
  return (msg) => {
    if (msg.t === 'issuer') {
      issuer = { gen: msg.gen, value: issuerFromPayload(msg.issuer) };
      return undefined;
    }
    try {
      if (msg.t === 'csr') {
        const { publicKeyInfo } = validateCsr(fromWire(msg.der), msg.identity);
        return { t: 'csr', id: msg.id, threadId: thread, publicKeyInfo: toWire(publicKeyInfo) };
      }
      if (issuer?.gen !== msg.gen)
        throw new IdentityError(
          'MINIMESH_IDENTITY_SIGN_FAILED',
          `signing the leaf for ${msg.identity}: the worker holds issuer generation ${issuer?.gen ?? 'none'}, not ${msg.gen}`,
        );
      const leaf = buildLeaf({
        issuer: issuer.value,
        identity: msg.identity,
        publicKeyInfo: fromWire(msg.publicKeyInfo),
        lifetime: msg.lifetime,
        clockSkew: msg.clockSkew,
        now: new Date(msg.now),
        ...(msg.serial ? { serial: fromWire(msg.serial) } : {}),
      });
      return {
        t: 'sign',
        id: msg.id,
        threadId: thread,
        der: toWire(leaf.der),
        notBefore: leaf.notBefore,
        notAfter: leaf.notAfter,
        serial: toWire(leaf.serial),
      };
    } catch (err) {
      return { t: 'error', id: msg.id, threadId: thread, error: errorToWire(err) };
    }
  };
}

const marked = (workerData as { mark?: unknown } | null)?.mark === SIGNING_WORKER_MARK;
if (!isMainThread && marked && parentPort) {
  const port = parentPort;
  const handle = createSigningHandler();
  port.on('message', (msg: ToWorker) => {
    const reply = handle(msg);
    if (reply) port.postMessage(reply);
  });
  port.postMessage({ t: 'ready', threadId } satisfies FromWorker);
}
