// The CPU-bound parts of Certify, behind one interface: the CSR check (./csr.ts) and the signing
// (./leaf.ts). The certifier awaits them, so they run either here on the main thread (inThreadCrypto,
// --certify-workers 0) or on worker threads (./signing-pool.ts) while the main thread does the I/O.
import { threadId } from 'node:worker_threads';
import { validateCsr } from './csr.js';
import { buildLeaf, type Leaf, type LeafOptions } from './leaf.js';

export interface CheckedCsr {
  /** The CSR's public key (ECDSA P-256) as SubjectPublicKeyInfo DER, ready to put into the leaf. */
  publicKeyInfo: Buffer;
  /** The thread the check ran on (worker_threads threadId; 0 is the process's main thread). */
  threadId: number;
}

export interface SignedLeaf extends Leaf {
  /** The thread the signing ran on. */
  threadId: number;
}

export interface CertifyCrypto {
  /** validateCsr: rejects with IdentityError MINIMESH_IDENTITY_CSR_INVALID and its message. */
  checkCsr(der: Buffer, identity: string): Promise<CheckedCsr>;
  /** buildLeaf: rejects with IdentityError MINIMESH_IDENTITY_SIGN_FAILED and its message. */
  sign(opts: LeafOptions): Promise<SignedLeaf>;
}

/** Both steps on the calling thread, as before --certify-workers. */
export const inThreadCrypto: CertifyCrypto = {
  checkCsr: async (der, identity) => ({ publicKeyInfo: validateCsr(der, identity).publicKeyInfo, threadId }),
  sign: async (opts) => ({ ...buildLeaf(opts), threadId }),
};
