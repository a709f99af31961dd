// The messages between the signing pool (main thread, ./signing-pool.ts) and its workers
// (./signing-worker.ts), and the pure conversions both sides make. Buffers cross as exact-size
// Uint8Array copies (a pooled Buffer would carry its whole 8 KiB slab); the issuer key crosses as a
// KeyObject (structured-cloneable), once per worker and issuer generation, not with every call.
import { IdentityError, type IdentityErrorCode } from '../errors.js';
import type { LeafIssuer } from './leaf.js';

/** Marks a worker thread started by the pool (workerData), so that importing the module does nothing else. */
export const SIGNING_WORKER_MARK = 'minimesh-identity-signing-worker';

/** LeafIssuer with its buffers as Uint8Array, as it crosses to a worker. */
export interface IssuerPayload {
  privateKey: LeafIssuer['privateKey'];
  signatureHash: LeafIssuer['signatureHash'];
  signatureAlgorithm: Uint8Array;
  subjectName: Uint8Array;
  subjectKeyId: Uint8Array | undefined;
  notAfter: Date;
  fingerprint: string;
}

export type ToWorker =
  /** The issuer of generation `gen`: the one later `sign` requests of that generation use. */
  | { t: 'issuer'; gen: number; issuer: IssuerPayload }
  | { t: 'csr'; id: number; der: Uint8Array; identity: string }
  | {
      t: 'sign';
      id: number;
      gen: number;
      identity: string;
      publicKeyInfo: Uint8Array;
      lifetime: number;
      clockSkew: number;
      /** Milliseconds since the epoch. */
      now: number;
      serial: Uint8Array | undefined;
    };

export interface WireError {
  /** Set when the error was an IdentityError. */
  code: IdentityErrorCode | undefined;
  message: string;
}

export type FromWorker =
  | { t: 'ready'; threadId: number }
  | { t: 'csr'; id: number; threadId: number; publicKeyInfo: Uint8Array }
  | {
      t: 'sign';
      id: number;
      threadId: number;
      der: Uint8Array;
      notBefore: Date;
      notAfter: Date;
      serial: Uint8Array;
    }
  | { t: 'error'; id: number; threadId: number; error: WireError };

/** An exact-size copy, the only bytes that cross. */
export function toWire(b: Uint8Array): Uint8Array {
  return new Uint8Array(b);
}

/** A Buffer over received bytes (no copy). */
export function fromWire(u: Uint8Array): Buffer {
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

export function issuerPayload(issuer: LeafIssuer): IssuerPayload {
  return {
    privateKey: issuer.privateKey,
    signatureHash: issuer.signatureHash,
    signatureAlgorithm: toWire(issuer.signatureAlgorithm),
    subjectName: toWire(issuer.subjectName),
    subjectKeyId: issuer.subjectKeyId ? toWire(issuer.subjectKeyId) : undefined,
    notAfter: issuer.notAfter,
    fingerprint: issuer.fingerprint,
  };
}

export function issuerFromPayload(p: IssuerPayload): LeafIssuer {
  return {
    privateKey: p.privateKey,
    signatureHash: p.signatureHash,
    signatureAlgorithm: fromWire(p.signatureAlgorithm),
    subjectName: fromWire(p.subjectName),
    subjectKeyId: p.subjectKeyId ? fromWire(p.subjectKeyId) : undefined,
    notAfter: p.notAfter,
    fingerprint: p.fingerprint,
  };
}

export function errorToWire(err: unknown): WireError {
  if (err instanceof IdentityError) return { code: err.code, message: err.message };
  return { code: undefined, message: err instanceof Error ? err.message : String(err) };
}

/** The same IdentityError (code and message) as thrown in the worker; anything else stays a plain Error. */
export function errorFromWire(e: WireError): Error {
  return e.code ? new IdentityError(e.code, e.message) : new Error(`signing worker: ${e.message}`);
}
